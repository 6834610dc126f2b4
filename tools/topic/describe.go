package topic

import (
	"context"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/ktoolhq/ktool/tools/cmdutil"
	"github.com/ktoolhq/ktool/tools/replicastate"
)

// DescribeOptions are the inputs of `ktool topic describe`.
type DescribeOptions struct {
	Factory *cmdutil.Factory
	Output  cmdutil.OutputFlag

	Topics   []string
	Internal bool

	UnderReplicated bool
	Unavailable     bool
	UnderMinISR     bool
	AtMinISR        bool
	WithOverrides   bool

	Watch    bool
	Interval time.Duration
}

// NewDescribeCommand returns `ktool topic describe`. runF replaces the run
// function in tests of flag parsing.
func NewDescribeCommand(f *cmdutil.Factory, runF func(context.Context, *DescribeOptions) error) *cobra.Command {
	opts := &DescribeOptions{Factory: f}
	cmd := &cobra.Command{
		Use:               "describe [TOPIC...]",
		ValidArgsFunction: cmdutil.CompleteTopics(f),
		Short:             "Show partitions with leader, AR, ISR, OSR, offline replicas and offsets",
		Long: `Describe topics: partition count, replication factor and the configs that
override the defaults, then per partition the leader and its epoch, the
assigned replicas (AR), the in-sync replicas (ISR), the out-of-sync replicas
(OSR = AR minus ISR), offline replicas, whether the leader is the preferred
replica (the first of AR), the log start offset and the high watermark.

The filters keep only matching partitions, as kafka-topics.sh does; when a
health filter matches anything the command exits 3.`,
		Example: `  ktool topic describe orders
  ktool topic describe --under-replicated
  ktool topic describe orders --watch
  ktool topic describe -o json`,
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.Topics = args
			if err := opts.Output.Validate(); err != nil {
				return err
			}
			if opts.Interval <= 0 {
				return cmdutil.Usagef("--interval must be positive, got %s", opts.Interval)
			}
			if runF != nil {
				return runF(cmd.Context(), opts)
			}
			return runDescribe(cmd.Context(), opts)
		},
	}
	fl := cmd.Flags()
	fl.BoolVar(&opts.Internal, "internal", false, "include internal topics such as __consumer_offsets")
	fl.BoolVar(&opts.UnderReplicated, "under-replicated", false, "only partitions whose ISR is smaller than AR")
	fl.BoolVar(&opts.Unavailable, "unavailable", false, "only partitions without a live leader")
	fl.BoolVar(&opts.UnderMinISR, "under-min-isr", false, "only partitions whose ISR is smaller than min.insync.replicas")
	fl.BoolVar(&opts.AtMinISR, "at-min-isr", false, "only partitions whose ISR equals min.insync.replicas")
	fl.BoolVar(&opts.WithOverrides, "with-overrides", false, "only topics that override a config")
	fl.BoolVarP(&opts.Watch, "watch", "w", false, "keep running and redraw when a leader or an ISR changes")
	fl.DurationVar(&opts.Interval, "interval", 2*time.Second, "how often --watch polls the cluster")
	opts.Output.Register(cmd)
	return cmd
}

func (o *DescribeOptions) healthFilter() bool {
	return o.UnderReplicated || o.Unavailable || o.UnderMinISR || o.AtMinISR
}

// filter keeps the topics and partitions the filters select and reports
// whether a health filter matched anything.
func (o *DescribeOptions) filter(topics []Topic) ([]Topic, bool) {
	out := []Topic{}
	matched := false
	for _, t := range topics {
		if o.WithOverrides && len(t.Overrides) == 0 {
			continue
		}
		if !o.healthFilter() {
			out = append(out, t)
			continue
		}
		keep := []replicastate.Partition{}
		for _, p := range t.Partitions {
			if (o.UnderReplicated && p.UnderReplicated()) ||
				(o.Unavailable && p.Unavailable()) ||
				(o.UnderMinISR && p.UnderMinISR(t.MinInsyncReplicas)) ||
				(o.AtMinISR && p.AtMinISR(t.MinInsyncReplicas)) {
				keep = append(keep, p)
			}
		}
		if len(keep) > 0 {
			matched = true
			t.Partitions = keep
			out = append(out, t)
		}
	}
	return out, matched
}

func runDescribe(ctx context.Context, o *DescribeOptions) error {
	adm, err := o.Factory.Admin()
	if err != nil {
		return err
	}
	defer adm.Close()
	load := func() ([]Topic, error) {
		rctx, cancel := o.Factory.RequestContext(ctx)
		defer cancel()
		topics, err := Load(rctx, adm, o.Topics, o.Internal)
		return topics, o.Factory.ClusterError("describing topics", err)
	}
	if !o.Watch {
		topics, err := load()
		if err != nil {
			return err
		}
		topics, matched := o.filter(topics)
		if err := o.print(o.Factory.IO.Out, topics); err != nil {
			return err
		}
		if matched {
			return cmdutil.ProblemsFound()
		}
		return nil
	}
	return o.watch(ctx, load)
}

// watch redraws whenever a leader, leader epoch or ISR changes; transient
// errors (a broker restarting is what one watches for) are reported and the
// watch goes on until ctx ends.
func (o *DescribeOptions) watch(ctx context.Context, load func() ([]Topic, error)) error {
	ios := o.Factory.IO
	last := ""
	lastErr := ""
	tick := time.NewTicker(o.Interval)
	defer tick.Stop()
	for {
		topics, err := load()
		switch {
		case err != nil:
			if msg := err.Error(); msg != lastErr {
				fmt.Fprintf(ios.ErrOut, "%s %v\n", time.Now().Format(time.TimeOnly), err)
				lastErr = msg
			}
		default:
			lastErr = ""
			topics, _ = o.filter(topics)
			if sig := signature(topics); sig != last {
				if ios.IsStdoutTTY() && !o.Output.Structured() {
					fmt.Fprint(ios.Out, "\x1b[H\x1b[2J")
				} else if last != "" && !o.Output.Structured() {
					fmt.Fprintln(ios.Out)
				}
				if !o.Output.Structured() {
					fmt.Fprintf(ios.Out, "%s\n", time.Now().Format(time.TimeOnly))
				}
				if err := o.print(ios.Out, topics); err != nil {
					return err
				}
				last = sig
			}
		}
		select {
		case <-ctx.Done():
			return nil
		case <-tick.C:
		}
	}
}

// signature captures what --watch redraws on: the set of partitions and each
// one's leader, leader epoch, AR and ISR.
func signature(topics []Topic) string {
	var b strings.Builder
	for _, t := range topics {
		for _, p := range t.Partitions {
			fmt.Fprintf(&b, "%s/%d %d %d %v %v;", t.Name, p.Partition, p.Leader, p.LeaderEpoch, p.Replicas, p.ISR)
		}
	}
	return b.String()
}

func (o *DescribeOptions) print(w io.Writer, topics []Topic) error {
	return o.Output.Print(w, topics, func() error { return writeTable(w, topics) })
}

func writeTable(w io.Writer, topics []Topic) error {
	if len(topics) == 0 {
		_, err := fmt.Fprintln(w, "No matching topics.")
		return err
	}
	for i, t := range topics {
		if i > 0 {
			fmt.Fprintln(w)
		}
		fmt.Fprintf(w, "Topic: %s  Partitions: %d  Replication factor: %d  Min ISR: %d\n",
			t.Name, t.PartitionCount, t.ReplicationFactor, t.MinInsyncReplicas)
		if len(t.Overrides) > 0 {
			kv := make([]string, len(t.Overrides))
			for j, c := range t.Overrides {
				kv[j] = c.Name + "=" + c.Value
			}
			fmt.Fprintf(w, "Overrides: %s\n", strings.Join(kv, ", "))
		}
		header := []string{"Partition", "Leader", "Epoch", "AR", "ISR", "OSR", "Offline", "Preferred", "Start", "HW"}
		if len(t.Racks) > 0 {
			header = append(header, "Racks")
		}
		tbl := cmdutil.NewTable(w, header...)
		for _, p := range t.Partitions {
			row := []string{
				strconv.Itoa(int(p.Partition)), leaderString(p.Leader), strconv.Itoa(int(p.LeaderEpoch)),
				ids(p.Replicas), ids(p.ISR), ids(p.OSR), ids(p.Offline), yesNo(p.PreferredLeader),
				offset(p.LogStartOffset), offset(p.HighWatermark),
			}
			if len(t.Racks) > 0 {
				row = append(row, replicaRacks(p.Replicas, t.Racks))
			}
			if err := tbl.Append(row); err != nil {
				return err
			}
		}
		if err := tbl.Render(); err != nil {
			return err
		}
		for _, p := range t.Partitions {
			if p.Error != "" {
				fmt.Fprintf(w, "partition %d: %s\n", p.Partition, p.Error)
			}
		}
	}
	return nil
}

func ids(xs []int32) string {
	if len(xs) == 0 {
		return "-"
	}
	return cmdutil.JoinInt32(xs)
}

func leaderString(l int32) string {
	if l < 0 {
		return "none"
	}
	return strconv.Itoa(int(l))
}

func offset(o int64) string {
	if o < 0 {
		return "?"
	}
	return strconv.FormatInt(o, 10)
}

func yesNo(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}

// replicaRacks lists the racks of the replicas in AR order ("-" for a broker
// without one).
func replicaRacks(replicas []int32, racks map[int32]string) string {
	out := make([]string, len(replicas))
	for i, r := range replicas {
		out[i] = racks[r]
		if out[i] == "" {
			out[i] = "-"
		}
	}
	return strings.Join(out, ",")
}
