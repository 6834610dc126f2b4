package topic

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/twmb/franz-go/pkg/kadm"

	"github.com/ktoolhq/ktool/tools/cmdutil"
	"github.com/ktoolhq/ktool/tools/offsets"
)

// TrimOptions are the inputs of `ktool topic trim`.
type TrimOptions struct {
	Factory    *cmdutil.Factory
	Output     cmdutil.OutputFlag
	Targets    []offsets.Target
	Partitions []int32
	// Offset is where each partition's log starts afterwards; -1 is its high
	// watermark (every record). HasOffset says --offset was given.
	Offset    int64
	HasOffset bool
	Before    int64 // --before as milliseconds: trim up to the first record at or after it
	HasBefore bool
	FromFile  string
	DryRun    bool
	Yes       bool
}

// Trimmed is one partition's result.
type Trimmed struct {
	Topic     string `json:"topic" yaml:"topic"`
	Partition int32  `json:"partition" yaml:"partition"`
	// Offset is the requested new start (-1: the high watermark).
	Offset int64 `json:"offset" yaml:"offset"`
	// LowWatermark is the partition's log start offset after the request.
	LowWatermark int64  `json:"low_watermark" yaml:"low_watermark"`
	Error        string `json:"error,omitempty" yaml:"error,omitempty"`
}

// DeleteRecordsPlan is kafka-delete-records.sh's --offset-json-file format.
type DeleteRecordsPlan struct {
	Version    int `json:"version"`
	Partitions []struct {
		Topic     string `json:"topic"`
		Partition int32  `json:"partition"`
		Offset    int64  `json:"offset"`
	} `json:"partitions"`
}

// NewTrimCommand returns `ktool topic trim`.
func NewTrimCommand(f *cmdutil.Factory, runF func(context.Context, *TrimOptions) error) *cobra.Command {
	opts := &TrimOptions{Factory: f}
	var offset, before, partitions string
	cmd := &cobra.Command{
		Use:               "trim TOPIC[:PARTITIONS]... (--offset N|end | --before TIME) | --from-file FILE",
		Aliases:           []string{"trim-prefix", "delete-records"},
		ValidArgsFunction: cmdutil.CompleteTopics(f),
		Short:             "Delete the records before an offset or a time (DeleteRecords)",
		Long: `Trim moves the start of partitions' logs forward, deleting every record
before it, like kafka-delete-records.sh and rpk topic trim-prefix. The new
start is an offset (--offset N, or --offset end for every record up to the high
watermark) or the first record at or after a time (--before, as --time of
ktool offsets takes it). --from-file takes kafka-delete-records.sh's JSON:
{"version":1,"partitions":[{"topic":"t","partition":0,"offset":10}]}.

It asks before deleting on a terminal; elsewhere it needs --yes. --dry-run
shows what would be trimmed.`,
		Example: `  ktool topic trim orders --offset 1000 --yes
  ktool topic trim orders:0,1 --before -24h --yes
  ktool topic trim --from-file offsets.json --yes`,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := opts.Output.Validate(); err != nil {
				return err
			}
			opts.HasOffset, opts.HasBefore = offset != "", before != ""
			n := 0
			for _, b := range []bool{opts.HasOffset, opts.HasBefore, opts.FromFile != ""} {
				if b {
					n++
				}
			}
			if n != 1 {
				return cmdutil.Usagef("pass exactly one of --offset, --before or --from-file")
			}
			if (opts.FromFile != "") == (len(args) > 0) {
				return cmdutil.Usagef("name topics, or pass --from-file, not both or neither")
			}
			opts.Targets = opts.Targets[:0]
			for _, a := range args {
				t, err := offsets.ParseTarget(a)
				if err != nil {
					return cmdutil.UsageError(err)
				}
				opts.Targets = append(opts.Targets, t)
			}
			if partitions != "" {
				ps, err := offsets.ParsePartitions(partitions)
				if err != nil {
					return cmdutil.Usagef("--partitions: %v", err)
				}
				opts.Partitions = ps
			}
			if opts.HasOffset {
				switch strings.ToLower(offset) {
				case "end", "latest", "hw", "-1":
					opts.Offset = -1
				default:
					n, err := strconv.ParseInt(offset, 10, 64)
					if err != nil || n < 0 {
						return cmdutil.Usagef("--offset %q: want an offset (0 or more) or end", offset)
					}
					opts.Offset = n
				}
			}
			if opts.HasBefore {
				ms, err := offsets.ParseTime(before, time.Now())
				if err != nil || ms < 0 {
					return cmdutil.Usagef("--before %q: want milliseconds, a date-time or a duration back such as -24h", before)
				}
				opts.Before = ms
			}
			if runF != nil {
				return runF(cmd.Context(), opts)
			}
			return runTrim(cmd.Context(), opts)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&offset, "offset", "", "the new start offset of each partition, or end (the high watermark)")
	fl.StringVar(&before, "before", "", "delete the records before the first one at or after this time")
	fl.StringVar(&opts.FromFile, "from-file", "", "kafka-delete-records.sh's offset JSON file")
	fl.StringVarP(&partitions, "partitions", "p", "", "partitions of every topic named (0,2,5-7)")
	fl.BoolVar(&opts.DryRun, "dry-run", false, "show what would be trimmed and change nothing")
	fl.BoolVarP(&opts.Yes, "yes", "y", false, "do not ask for confirmation")
	opts.Output.Register(cmd)
	return cmd
}

// ReadDeleteRecordsPlan reads a kafka-delete-records.sh JSON file.
func ReadDeleteRecordsPlan(r io.Reader) (kadm.Offsets, error) {
	var plan DeleteRecordsPlan
	dec := json.NewDecoder(io.LimitReader(r, 64<<20))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&plan); err != nil {
		return nil, fmt.Errorf("not kafka-delete-records.sh's JSON: %w", err)
	}
	if plan.Version != 1 {
		return nil, fmt.Errorf("version %d (want 1)", plan.Version)
	}
	if len(plan.Partitions) == 0 {
		return nil, errors.New("no partitions")
	}
	out := kadm.Offsets{}
	for _, p := range plan.Partitions {
		if p.Topic == "" || p.Partition < 0 || p.Offset < -1 {
			return nil, fmt.Errorf("entry %+v: want a topic, a partition (0 or more) and an offset (-1 for the high watermark)", p)
		}
		if _, dup := out.Lookup(p.Topic, p.Partition); dup {
			return nil, fmt.Errorf("%s-%d is listed twice", p.Topic, p.Partition)
		}
		out.Add(kadm.Offset{Topic: p.Topic, Partition: p.Partition, At: p.Offset, LeaderEpoch: -1})
	}
	return out, nil
}

// trimPlan resolves the options into the offsets DeleteRecords is sent.
func (o *TrimOptions) trimPlan(ctx context.Context, adm *kadm.Client) (kadm.Offsets, []Trimmed, error) {
	if o.FromFile != "" {
		fh, err := os.Open(o.FromFile)
		if err != nil {
			return nil, nil, cmdutil.UsageError(err)
		}
		defer fh.Close()
		plan, err := ReadDeleteRecordsPlan(fh)
		if err != nil {
			return nil, nil, cmdutil.Usagef("%s: %v", o.FromFile, err)
		}
		return plan, nil, nil
	}
	at := offsets.Earliest
	if o.HasBefore {
		at = o.Before
	}
	listed, err := offsets.List(ctx, adm, o.Targets, o.Partitions, at)
	if err != nil && listed == nil {
		return nil, nil, o.Factory.ClusterError("listing partitions", err)
	}
	plan := kadm.Offsets{}
	var failed []Trimmed
	for _, l := range listed {
		if l.Error != "" {
			failed = append(failed, Trimmed{Topic: l.Topic, Partition: l.Partition, Offset: -1, LowWatermark: -1, Error: l.Error})
			continue
		}
		to := o.Offset
		if o.HasBefore {
			to = l.Offset
		}
		plan.Add(kadm.Offset{Topic: l.Topic, Partition: l.Partition, At: to, LeaderEpoch: -1})
	}
	return plan, failed, nil
}

func runTrim(ctx context.Context, o *TrimOptions) error {
	adm, err := o.Factory.Admin()
	if err != nil {
		return err
	}
	defer adm.Close()
	rctx, cancel := o.Factory.RequestContext(ctx)
	defer cancel()
	plan, rows, err := o.trimPlan(rctx, adm)
	if err != nil {
		return err
	}
	w := o.Factory.IO.Out
	if o.DryRun || len(plan) == 0 {
		plan.Each(func(p kadm.Offset) {
			rows = append(rows, Trimmed{Topic: p.Topic, Partition: p.Partition, Offset: p.At, LowWatermark: -1})
		})
		sortTrimmed(rows)
		if err := o.Output.Print(w, rows, func() error { return writeTrimmed(w, rows, true) }); err != nil {
			return err
		}
		return trimFailures(rows)
	}
	if !o.Yes {
		if !o.Factory.IO.CanPrompt() {
			return cmdutil.Usagef("trimming deletes records for good: pass --yes (or --dry-run to see what would go)")
		}
		n := 0
		plan.Each(func(kadm.Offset) { n++ })
		fmt.Fprintf(o.Factory.IO.ErrOut, "Delete the records before the new start of %d partitions? [y/N] ", n)
		line, _ := bufio.NewReader(o.Factory.IO.In).ReadString('\n')
		if a := strings.ToLower(strings.TrimSpace(line)); a != "y" && a != "yes" {
			return errors.New("not confirmed; nothing deleted")
		}
	}
	resps, err := adm.DeleteRecords(rctx, plan)
	if err != nil && len(resps) == 0 {
		return o.Factory.ClusterError("deleting records", err)
	}
	plan.Each(func(p kadm.Offset) {
		t := Trimmed{Topic: p.Topic, Partition: p.Partition, Offset: p.At, LowWatermark: -1}
		r, ok := resps.Lookup(p.Topic, p.Partition)
		switch {
		case !ok:
			t.Error = "the cluster did not answer for it"
		case r.Err != nil:
			t.Error = r.Err.Error()
		default:
			t.LowWatermark = r.LowWatermark
		}
		rows = append(rows, t)
	})
	sortTrimmed(rows)
	if err := o.Output.Print(w, rows, func() error { return writeTrimmed(w, rows, false) }); err != nil {
		return err
	}
	return trimFailures(rows)
}

func trimFailures(rows []Trimmed) error {
	failed := 0
	for _, r := range rows {
		if r.Error != "" {
			failed++
		}
	}
	if failed > 0 {
		return fmt.Errorf("%d of %d partitions were not trimmed (see the error column)", failed, len(rows))
	}
	return nil
}

func sortTrimmed(rows []Trimmed) {
	sort.Slice(rows, func(i, j int) bool {
		if rows[i].Topic != rows[j].Topic {
			return rows[i].Topic < rows[j].Topic
		}
		return rows[i].Partition < rows[j].Partition
	})
}

func writeTrimmed(w io.Writer, rows []Trimmed, dry bool) error {
	if dry {
		fmt.Fprintln(w, "Dry run: nothing deleted.")
	}
	header := []string{"Topic", "Partition", "Trim to", "Log start now", "Error"}
	if dry {
		header = []string{"Topic", "Partition", "Trim to", "Error"}
	}
	tbl := cmdutil.NewTable(w, header...)
	for _, r := range rows {
		to := strconv.FormatInt(r.Offset, 10)
		if r.Offset == -1 {
			to = "end (high watermark)"
		}
		if r.Error != "" && r.Offset == -1 {
			to = "-"
		}
		e := r.Error
		if e == "" {
			e = "-"
		}
		part := strconv.Itoa(int(r.Partition))
		if r.Partition < 0 {
			part = "-"
		}
		row := []string{r.Topic, part, to}
		if !dry {
			lw := "-"
			if r.LowWatermark >= 0 {
				lw = strconv.FormatInt(r.LowWatermark, 10)
			}
			row = append(row, lw)
		}
		tbl.Append(append(row, e))
	}
	return tbl.Render()
}
