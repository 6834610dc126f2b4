package offsets

import (
	"context"
	"fmt"
	"io"
	"slices"
	"sort"
	"strconv"
	"time"

	"github.com/spf13/cobra"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/ktoolhq/ktool/tools/cmdutil"
)

// Offset is one partition's answer.
type Offset struct {
	Topic     string `json:"topic" yaml:"topic"`
	Partition int32  `json:"partition" yaml:"partition"`
	// Offset is -1 when the partition has no such offset (max-timestamp of an
	// empty partition).
	Offset int64 `json:"offset" yaml:"offset"`
	// Timestamp is the record's time when looking up by time or max-timestamp,
	// else -1. By time, a partition with no record at or after the time answers
	// its end offset and -1.
	Timestamp   int64  `json:"timestamp" yaml:"timestamp"`
	LeaderEpoch int32  `json:"leader_epoch" yaml:"leader_epoch"`
	Error       string `json:"error,omitempty" yaml:"error,omitempty"`
}

// Options are the inputs of `ktool offsets`.
type Options struct {
	Factory    *cmdutil.Factory
	Output     cmdutil.OutputFlag
	Targets    []Target
	Partitions []int32 // --partitions, for every target without its own
	Time       int64   // Latest, Earliest, MaxTimestamp or milliseconds
	TimeFlag   string
}

// NewCommand returns `ktool offsets`.
func NewCommand(f *cmdutil.Factory, runF func(context.Context, *Options) error) *cobra.Command {
	opts := &Options{Factory: f}
	var partitions string
	cmd := &cobra.Command{
		Use:               "offsets [TOPIC[:PARTITIONS]]...",
		ValidArgsFunction: cmdutil.CompleteTopics(f),
		Short:             "Show partitions' earliest, latest or by-timestamp offsets",
		Long: `Offsets lists one offset per partition, as kafka-get-offsets.sh does:
the log start offset (--time earliest), the log end offset (--time latest, the
default), the offset of the record with the highest timestamp (--time
max-timestamp), or the first offset whose record's timestamp is at or after a
time (--time with milliseconds, a date-time or a duration back from now).

A partition with no record at or after the time answers its end offset: where
the next record produced will be. Without topics, every topic is listed.
TOPIC:0,2-4 (or --partitions) picks partitions.`,
		Example: `  ktool offsets orders
  ktool offsets orders:0-2 --time earliest
  ktool offsets orders --time 2026-01-31T09:30:00Z
  ktool offsets orders --time -1h -o json`,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := opts.Output.Validate(); err != nil {
				return err
			}
			opts.Targets = opts.Targets[:0]
			for _, a := range args {
				t, err := ParseTarget(a)
				if err != nil {
					return cmdutil.UsageError(err)
				}
				opts.Targets = append(opts.Targets, t)
			}
			if partitions != "" {
				ps, err := ParsePartitions(partitions)
				if err != nil {
					return cmdutil.Usagef("--partitions: %v", err)
				}
				if len(args) == 0 {
					return cmdutil.Usagef("--partitions needs topics")
				}
				opts.Partitions = ps
			}
			t, err := ParseTime(opts.TimeFlag, time.Now())
			if err != nil {
				return cmdutil.UsageError(err)
			}
			opts.Time = t
			if runF != nil {
				return runF(cmd.Context(), opts)
			}
			return Run(cmd.Context(), opts)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&opts.TimeFlag, "time", "latest", "earliest, latest, max-timestamp, milliseconds, a date-time or a duration back (-30m)")
	fl.StringVarP(&partitions, "partitions", "p", "", "partitions of every topic named (0,2,5-7)")
	opts.Output.Register(cmd)
	_ = cmd.RegisterFlagCompletionFunc("time", func(*cobra.Command, []string, string) ([]string, cobra.ShellCompDirective) {
		return []string{"earliest", "latest", "max-timestamp"}, cobra.ShellCompDirectiveNoFileComp
	})
	return cmd
}

// List asks the cluster for the offsets of the targets (all topics when
// there are none) at t.
func List(ctx context.Context, adm *kadm.Client, targets []Target, partitions []int32, t int64) ([]Offset, error) {
	var topics []string
	for _, tg := range targets {
		if !slices.Contains(topics, tg.Topic) {
			topics = append(topics, tg.Topic)
		}
	}
	var listed kadm.ListedOffsets
	var err error
	switch t {
	case Latest:
		listed, err = adm.ListEndOffsets(ctx, topics...)
	case Earliest:
		listed, err = adm.ListStartOffsets(ctx, topics...)
	case MaxTimestamp:
		listed, err = adm.ListMaxTimestampOffsets(ctx, topics...)
	default:
		listed, err = adm.ListOffsetsAfterMilli(ctx, t, topics...)
	}
	if err != nil && len(listed) == 0 {
		return nil, err
	}
	want := func(topic string, p int32) bool {
		if len(targets) == 0 {
			return true
		}
		for _, tg := range targets {
			if tg.Topic != topic {
				continue
			}
			ps := tg.Partitions
			if ps == nil {
				ps = partitions
			}
			if ps == nil || slices.Contains(ps, p) {
				return true
			}
		}
		return false
	}
	var out []Offset
	found := map[string]map[int32]bool{}
	listed.Each(func(l kadm.ListedOffset) {
		if l.Partition == -1 && l.Err != nil {
			out = append(out, Offset{Topic: l.Topic, Partition: -1, Offset: -1, Timestamp: -1, LeaderEpoch: -1, Error: l.Err.Error()})
			return
		}
		if !want(l.Topic, l.Partition) {
			return
		}
		if found[l.Topic] == nil {
			found[l.Topic] = map[int32]bool{}
		}
		found[l.Topic][l.Partition] = true
		o := Offset{Topic: l.Topic, Partition: l.Partition, Offset: l.Offset, Timestamp: l.Timestamp, LeaderEpoch: l.LeaderEpoch}
		if l.Err != nil {
			o.Error = l.Err.Error()
		}
		if t == Latest || t == Earliest {
			o.Timestamp = -1
		}
		out = append(out, o)
	})
	// A partition asked for by number that the topic does not have.
	for _, tg := range targets {
		ps := tg.Partitions
		if ps == nil {
			ps = partitions
		}
		if _, ok := listed[tg.Topic]; !ok {
			continue
		}
		if found[tg.Topic] == nil {
			found[tg.Topic] = map[int32]bool{}
		}
		for _, p := range ps {
			if !found[tg.Topic][p] && !hasTopicError(listed, tg.Topic) {
				out = append(out, Offset{Topic: tg.Topic, Partition: p, Offset: -1, Timestamp: -1, LeaderEpoch: -1,
					Error: kerr.UnknownTopicOrPartition.Error()})
				found[tg.Topic][p] = true
			}
		}
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Topic != out[j].Topic {
			return out[i].Topic < out[j].Topic
		}
		return out[i].Partition < out[j].Partition
	})
	return out, err
}

func hasTopicError(l kadm.ListedOffsets, topic string) bool {
	o, ok := l[topic][-1]
	return ok && o.Err != nil
}

// Run is `ktool offsets`.
func Run(ctx context.Context, o *Options) error {
	adm, err := o.Factory.Admin()
	if err != nil {
		return err
	}
	defer adm.Close()
	rctx, cancel := o.Factory.RequestContext(ctx)
	defer cancel()
	rows, err := List(rctx, adm, o.Targets, o.Partitions, o.Time)
	if err != nil && rows == nil {
		return o.Factory.ClusterError("listing offsets", err)
	}
	w := o.Factory.IO.Out
	if perr := o.Output.Print(w, rows, func() error { return writeTable(w, rows, o.Time) }); perr != nil {
		return perr
	}
	failed := 0
	for _, r := range rows {
		if r.Error != "" {
			failed++
		}
	}
	if failed > 0 {
		return fmt.Errorf("%d of %d partitions have no offset (see the error column)", failed, len(rows))
	}
	if err != nil {
		return o.Factory.ClusterError("listing offsets", err)
	}
	return nil
}

func writeTable(w io.Writer, rows []Offset, t int64) error {
	if len(rows) == 0 {
		_, err := fmt.Fprintln(w, "No partitions.")
		return err
	}
	byTime := t >= 0 || t == MaxTimestamp
	header := []string{"Topic", "Partition", "Offset"}
	if byTime {
		header = append(header, "Timestamp")
	}
	header = append(header, "Leader epoch", "Error")
	tbl := cmdutil.NewTable(w, header...)
	for _, r := range rows {
		part := strconv.Itoa(int(r.Partition))
		if r.Partition < 0 {
			part = "-"
		}
		row := []string{r.Topic, part, dash(r.Offset)}
		if byTime {
			ts := "-"
			if r.Timestamp >= 0 {
				ts = time.UnixMilli(r.Timestamp).UTC().Format("2006-01-02T15:04:05.000Z")
			}
			row = append(row, ts)
		}
		row = append(row, dash(int64(r.LeaderEpoch)), r.Error)
		if r.Error == "" {
			row[len(row)-1] = "-"
		}
		tbl.Append(row)
	}
	return tbl.Render()
}

func dash(n int64) string {
	if n < 0 {
		return "-"
	}
	return strconv.FormatInt(n, 10)
}
