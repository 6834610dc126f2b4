package election

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"time"

	"github.com/spf13/cobra"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/ktoolhq/ktool/tools/cmdutil"
)

// Options are the inputs of `ktool elect`.
type Options struct {
	Factory *cmdutil.Factory
	Output  cmdutil.OutputFlag

	Preferred bool
	Unclean   bool
	Type      string

	Topic              string
	Partition          int32
	AllTopicPartitions bool
	PathToJSONFile     string

	DryRun bool
}

// Result is the outcome of the election for one partition.
type Result struct {
	Topic     string `json:"topic" yaml:"topic"`
	Partition int32  `json:"partition" yaml:"partition"`
	Outcome   string `json:"outcome" yaml:"outcome"` // elected, not_needed or failed
	Leader    int32  `json:"leader" yaml:"leader"`   // the leader metadata reports afterwards, -1 if unknown
	Error     string `json:"error,omitempty" yaml:"error,omitempty"`
}

// Outcomes of an election.
const (
	Elected = "elected"
	Failed  = "failed"
)

// NewCommand returns `ktool elect`.
func NewCommand(f *cmdutil.Factory, runF func(context.Context, *Options) error) *cobra.Command {
	opts := &Options{Factory: f}
	cmd := &cobra.Command{
		Use:   "elect (--preferred | --unclean) (--topic T [--partition N] | --all-topic-partitions | --path-to-json-file F)",
		Short: "Run preferred or unclean partition leader elections",
		Long: `Ask the controller to elect partition leaders.

A preferred election moves leadership back to each partition's preferred
replica (the first assigned replica) when it is alive and in the ISR; it is
how leadership is rebalanced after a broker comes back. An unclean election
gives a partition without a live leader a leader from outside the ISR when no
in-sync replica is alive, trading possible loss of records for availability.

--dry-run changes nothing: it shows which partitions would change leader and
each broker's leader imbalance before and after, the measure behind
leader.imbalance.per.broker.percentage (of the partitions that prefer a
broker, the share it does not lead).`,
		Example: `  ktool elect --preferred --all-topic-partitions --dry-run
  ktool elect --preferred --topic orders
  ktool elect --type unclean --topic orders --partition 3
  ktool elect --preferred --path-to-json-file partitions.json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := opts.validate(cmd.Flags().Changed("partition")); err != nil {
				return err
			}
			if runF != nil {
				return runF(cmd.Context(), opts)
			}
			return run(cmd.Context(), opts)
		},
	}
	fl := cmd.Flags()
	fl.BoolVar(&opts.Preferred, "preferred", false, "elect the preferred replica")
	fl.BoolVar(&opts.Unclean, "unclean", false, "elect any live replica for partitions without a live leader")
	fl.StringVar(&opts.Type, "type", "", "election type: preferred or unclean (Kafka's spelling)")
	fl.StringVarP(&opts.Topic, "topic", "t", "", "topic whose partitions to elect")
	_ = cmd.RegisterFlagCompletionFunc("topic", cmdutil.CompleteTopics(f))
	fl.Int32VarP(&opts.Partition, "partition", "p", -1, "only this partition of --topic")
	fl.BoolVar(&opts.AllTopicPartitions, "all-topic-partitions", false, "every partition of every topic")
	fl.StringVar(&opts.PathToJSONFile, "path-to-json-file", "", `JSON file {"partitions":[{"topic":"t","partition":0}]}`)
	fl.BoolVar(&opts.DryRun, "dry-run", false, "show what would change and the leader imbalance, change nothing")
	opts.Output.Register(cmd)
	return cmd
}

func (o *Options) validate(partitionSet bool) error {
	if err := o.Output.Validate(); err != nil {
		return err
	}
	switch o.Type {
	case "":
	case "preferred", "PREFERRED":
		o.Preferred = true
	case "unclean", "UNCLEAN":
		o.Unclean = true
	default:
		return cmdutil.Usagef("--type %q: want preferred or unclean", o.Type)
	}
	if o.Preferred == o.Unclean {
		return cmdutil.Usagef("choose one election type: --preferred or --unclean (or --type preferred|unclean)")
	}
	n := 0
	for _, set := range []bool{o.Topic != "", o.AllTopicPartitions, o.PathToJSONFile != ""} {
		if set {
			n++
		}
	}
	if n != 1 {
		return cmdutil.Usagef("choose the partitions with exactly one of --topic, --all-topic-partitions or --path-to-json-file")
	}
	if partitionSet && o.Topic == "" {
		return cmdutil.Usagef("--partition needs --topic")
	}
	if partitionSet && o.Partition < 0 {
		return cmdutil.Usagef("--partition must be >= 0, got %d", o.Partition)
	}
	return nil
}

func (o *Options) how() kadm.ElectLeadersHow {
	if o.Unclean {
		return kadm.ElectLiveReplica
	}
	return kadm.ElectPreferredReplica
}

// targets resolves the partitions to elect; nil with all set means every
// partition.
func (o *Options) targets(m kadm.Metadata) ([]Target, error) {
	switch {
	case o.AllTopicPartitions:
		return nil, nil
	case o.PathToJSONFile != "":
		fh, err := os.Open(o.PathToJSONFile)
		if err != nil {
			return nil, cmdutil.UsageError(fmt.Errorf("--path-to-json-file: %w", err))
		}
		defer fh.Close()
		ts, err := ParseJSON(fh)
		if err != nil {
			return nil, cmdutil.UsageError(fmt.Errorf("--path-to-json-file %s: %w", o.PathToJSONFile, err))
		}
		return ts, nil
	}
	td, ok := m.Topics[o.Topic]
	if !ok || errors.Is(td.Err, kerr.UnknownTopicOrPartition) {
		return nil, fmt.Errorf("topic %q does not exist (see `ktool topic list`)", o.Topic)
	}
	if td.Err != nil {
		return nil, fmt.Errorf("topic %q: %w", o.Topic, td.Err)
	}
	if o.Partition >= 0 {
		if _, ok := td.Partitions[o.Partition]; !ok {
			return nil, fmt.Errorf("topic %q has no partition %d (it has %d)", o.Topic, o.Partition, len(td.Partitions))
		}
		return []Target{{Topic: o.Topic, Partition: o.Partition}}, nil
	}
	var ts []Target
	for _, p := range td.Partitions.Numbers() {
		ts = append(ts, Target{Topic: o.Topic, Partition: p})
	}
	return ts, nil
}

func run(ctx context.Context, o *Options) error {
	adm, err := o.Factory.Admin()
	if err != nil {
		return err
	}
	defer adm.Close()
	metadata := func() (kadm.Metadata, error) {
		rctx, cancel := o.Factory.RequestContext(ctx)
		defer cancel()
		m, err := cmdutil.Metadata(rctx, adm)
		return m, o.Factory.ClusterError("reading cluster metadata", err)
	}
	m, err := metadata()
	if err != nil {
		return err
	}
	targets, err := o.targets(m)
	if err != nil {
		return err
	}
	w := o.Factory.IO.Out
	if o.DryRun {
		plan := MakePlan(m, targets, o.AllTopicPartitions, o.Unclean)
		return o.Output.Print(w, plan, func() error { return writePlan(w, plan) })
	}

	var set kadm.TopicsSet
	for _, t := range targets {
		set.Add(t.Topic, t.Partition)
	}
	rctx, cancel := o.Factory.RequestContext(ctx)
	defer cancel()
	resps, err := adm.ElectLeaders(rctx, o.how(), set)
	if err != nil {
		return o.Factory.ClusterError(typeName(o.Unclean)+" leader election", err)
	}
	if o.Unclean && ranPreferred(resps) {
		fmt.Fprintln(o.Factory.IO.ErrOut, "Warning: the cluster is older than Kafka 2.4 and ran a preferred election instead of an unclean one.")
	}
	after, merr := awaitNewLeaders(ctx, metadata, m, resps)
	results := collect(resps, after, merr == nil)
	if err := o.Output.Print(w, results, func() error { return writeResults(w, results) }); err != nil {
		return err
	}
	failed := 0
	for _, r := range results {
		if r.Outcome == Failed {
			failed++
		}
	}
	if failed > 0 {
		how := `the "failed:" lines above say why`
		if o.Output.Structured() {
			how = `the "error" fields above say why`
		}
		return fmt.Errorf("%d of %d partition elections failed (%s)", failed, len(results), how)
	}
	return nil
}

// awaitNewLeaders re-reads the metadata until every elected partition shows a
// leader other than the one it had before: brokers learn of a new leader from
// the controller a moment after the election answers, and the command should
// print where leadership went, not where it was. Bounded by --timeout.
func awaitNewLeaders(ctx context.Context, metadata func() (kadm.Metadata, error), before kadm.Metadata, resps kadm.ElectLeadersResults) (kadm.Metadata, error) {
	deadline := time.Now().Add(5 * time.Second)
	for {
		after, err := metadata()
		if err != nil {
			return after, err
		}
		moved := true
		for _, ps := range resps {
			for _, r := range ps {
				if r.Err != nil {
					continue
				}
				old := before.Topics[r.Topic].Partitions[r.Partition].Leader
				if now, ok := after.Topics[r.Topic].Partitions[r.Partition]; ok && now.Leader == old {
					moved = false
				}
			}
		}
		if moved || time.Now().After(deadline) {
			return after, nil
		}
		select {
		case <-ctx.Done():
			return after, nil
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// ranPreferred reports whether the cluster fell back to a preferred election
// (ElectLeaders v0 has no election type).
func ranPreferred(rs kadm.ElectLeadersResults) bool {
	for _, ps := range rs {
		for _, r := range ps {
			if r.How == kadm.ElectPreferredReplica {
				return true
			}
		}
	}
	return false
}

func collect(resps kadm.ElectLeadersResults, after kadm.Metadata, haveAfter bool) []Result {
	var out []Result
	for _, ps := range resps {
		for _, r := range ps {
			res := Result{Topic: r.Topic, Partition: r.Partition, Outcome: Elected, Leader: -1}
			switch {
			case errors.Is(r.Err, kerr.ElectionNotNeeded):
				res.Outcome = NotNeeded
			case r.Err != nil:
				res.Outcome = Failed
				res.Error = cmdutil.WithMessage(r.Err, r.ErrMessage).Error()
			}
			if haveAfter {
				if pd, ok := after.Topics[r.Topic].Partitions[r.Partition]; ok {
					res.Leader = pd.Leader
				}
			}
			out = append(out, res)
		}
	}
	sortResults(out)
	return out
}

func sortResults(rs []Result) {
	ts := make([]Target, len(rs))
	idx := map[Target]Result{}
	for i, r := range rs {
		ts[i] = Target{Topic: r.Topic, Partition: r.Partition}
		idx[ts[i]] = r
	}
	sortTargets(ts)
	for i, t := range ts {
		rs[i] = idx[t]
	}
}

func writeResults(w io.Writer, rs []Result) error {
	if len(rs) == 0 {
		_, err := fmt.Fprintln(w, "The cluster reported no partitions.")
		return err
	}
	for _, r := range rs {
		var line string
		switch r.Outcome {
		case Elected:
			line = "elected"
			if r.Leader >= 0 {
				line += ", leader is now " + strconv.Itoa(int(r.Leader))
			}
		case NotNeeded:
			line = "already the preferred leader (ELECTION_NOT_NEEDED)"
			if r.Leader >= 0 {
				line = fmt.Sprintf("leader %d is already the preferred leader (ELECTION_NOT_NEEDED)", r.Leader)
			}
		default:
			line = "failed: " + r.Error
		}
		if _, err := fmt.Fprintf(w, "%s-%d: %s\n", r.Topic, r.Partition, line); err != nil {
			return err
		}
	}
	return nil
}

func writePlan(w io.Writer, plan Plan) error {
	counts := map[string]int{}
	tbl := cmdutil.NewTable(w, "Partition", "Leader", "New", "Note")
	for _, p := range plan.Partitions {
		counts[p.Outcome]++
		if p.Outcome == NotNeeded {
			continue
		}
		newLeader, note := leaderString(p.NewLeader), p.Reason
		if p.Outcome == WouldFail {
			newLeader, note = "-", "fails: "+p.Reason
		}
		if err := tbl.Append([]string{fmt.Sprintf("%s-%d", p.Topic, p.Partition), leaderString(p.Leader), newLeader, note}); err != nil {
			return err
		}
	}
	fmt.Fprintf(w, "Dry run (%s election): %d would change leader, %d need none, %d would fail.\n",
		plan.Type, counts[WouldElect], counts[NotNeeded], counts[WouldFail])
	if counts[WouldElect]+counts[WouldFail] > 0 {
		fmt.Fprintln(w)
		if err := tbl.Render(); err != nil {
			return err
		}
	}
	fmt.Fprintln(w)
	fmt.Fprintln(w, "Leader imbalance per broker (preferred partitions it does not lead):")
	it := cmdutil.NewTable(w, "Broker", "Preferred", "Not led now", "Imbalance now", "Not led after", "Imbalance after")
	for _, b := range plan.Imbalance {
		if err := it.Append([]string{strconv.Itoa(int(b.Broker)), strconv.Itoa(b.Preferred),
			strconv.Itoa(b.NotLedBefore), strconv.FormatFloat(b.BeforePercent, 'f', 1, 64) + "%",
			strconv.Itoa(b.NotLedAfter), strconv.FormatFloat(b.AfterPercent, 'f', 1, 64) + "%"}); err != nil {
			return err
		}
	}
	return it.Render()
}

func leaderString(l int32) string {
	if l < 0 {
		return "none"
	}
	return strconv.Itoa(int(l))
}
