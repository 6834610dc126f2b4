package txn

import (
	"context"
	"fmt"
	"io"

	"github.com/spf13/cobra"
	"github.com/twmb/franz-go/pkg/kadm"

	"github.com/ktoolhq/ktool/tools/cmdutil"
)

// Aborted is what `ktool txn abort` wrote.
type Aborted struct {
	Topic            string `json:"topic" yaml:"topic"`
	Partition        int32  `json:"partition" yaml:"partition"`
	Leader           int32  `json:"leader" yaml:"leader"`
	ProducerID       int64  `json:"producer_id" yaml:"producer_id"`
	ProducerEpoch    int16  `json:"producer_epoch" yaml:"producer_epoch"`
	CoordinatorEpoch int32  `json:"coordinator_epoch" yaml:"coordinator_epoch"`
	// StartOffset is the first offset of the aborted transaction, -1 when not looked up.
	StartOffset int64 `json:"start_offset" yaml:"start_offset"`
}

// AbortOptions are the inputs of `ktool txn abort`.
type AbortOptions struct {
	Factory *cmdutil.Factory
	Output  cmdutil.OutputFlag

	Topic     string
	Partition int32
	// StartOffset finds the producer by its open transaction's first offset
	// (DescribeProducers); else ProducerID, ProducerEpoch, CoordinatorEpoch.
	StartOffset      int64
	ProducerID       int64
	ProducerEpoch    int16
	CoordinatorEpoch int32
}

// NewAbortCommand returns `ktool txn abort`.
func NewAbortCommand(f *cmdutil.Factory, runF func(context.Context, *AbortOptions) error) *cobra.Command {
	opts := &AbortOptions{Factory: f}
	cmd := &cobra.Command{
		Use:   "abort --topic T --partition P (--start-offset O | --producer-id ID --producer-epoch E --coordinator-epoch C)",
		Short: "Abort a hanging transaction on one partition: the leader writes an ABORT marker for its producer",
		Long: `Abort a hanging transaction on one partition, as kafka-transactions.sh abort does: the
partition's leader writes an ABORT marker for the producer (WriteTxnMarkers, which
needs CLUSTER_ACTION), so the last stable offset moves past it and read_committed
consumers go on. Name the transaction by the first offset of its open transaction
(--start-offset: the producer is looked up with DescribeProducers) or by the
producer id, epoch and coordinator epoch. Use it only for a transaction that its
coordinator no longer finishes: a marker for a live transaction aborts it.`,
		Example: `  ktool txn abort --topic payments --partition 3 --start-offset 1200
  ktool txn abort --topic payments --partition 3 --producer-id 4001 --producer-epoch 2 --coordinator-epoch 5`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := opts.Output.Validate(); err != nil {
				return err
			}
			fl := cmd.Flags()
			byOffset := fl.Changed("start-offset")
			byProducer := fl.Changed("producer-id") || fl.Changed("producer-epoch") || fl.Changed("coordinator-epoch")
			switch {
			case opts.Topic == "" || !fl.Changed("partition"):
				return cmdutil.Usagef("--topic and --partition are required")
			case byOffset == byProducer:
				return cmdutil.Usagef("give either --start-offset or --producer-id, --producer-epoch and --coordinator-epoch")
			case byProducer && !(fl.Changed("producer-id") && fl.Changed("producer-epoch") && fl.Changed("coordinator-epoch")):
				return cmdutil.Usagef("--producer-id, --producer-epoch and --coordinator-epoch go together")
			case byOffset && opts.StartOffset < 0:
				return cmdutil.Usagef("--start-offset must be >= 0")
			}
			if !byOffset {
				opts.StartOffset = -1
			}
			if runF != nil {
				return runF(cmd.Context(), opts)
			}
			return runAbort(cmd.Context(), opts)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&opts.Topic, "topic", "", "the partition's topic")
	fl.Int32Var(&opts.Partition, "partition", 0, "the partition")
	fl.Int64Var(&opts.StartOffset, "start-offset", -1, "first offset of the open transaction to abort")
	fl.Int64Var(&opts.ProducerID, "producer-id", -1, "producer id of the transaction")
	fl.Int16Var(&opts.ProducerEpoch, "producer-epoch", -1, "producer epoch of the transaction")
	fl.Int32Var(&opts.CoordinatorEpoch, "coordinator-epoch", -1, "coordinator epoch of the transaction (DescribeProducers shows it)")
	_ = cmd.RegisterFlagCompletionFunc("topic", cmdutil.CompleteTopics(f))
	opts.Output.Register(cmd)
	return cmd
}

func runAbort(ctx context.Context, o *AbortOptions) error {
	adm, err := o.Factory.Admin()
	if err != nil {
		return err
	}
	defer adm.Close()
	rctx, cancel := o.Factory.RequestContext(ctx)
	defer cancel()
	a := Aborted{Topic: o.Topic, Partition: o.Partition, Leader: -1, ProducerID: o.ProducerID, ProducerEpoch: o.ProducerEpoch,
		CoordinatorEpoch: o.CoordinatorEpoch, StartOffset: o.StartOffset}
	if o.StartOffset >= 0 {
		ps, err := adm.DescribeProducers(rctx, kadm.TopicsSet{o.Topic: {o.Partition: {}}})
		if err != nil {
			return o.Factory.ClusterError("describing the partition's producers", err)
		}
		p, ok := ps[o.Topic].Partitions[o.Partition]
		if !ok {
			return fmt.Errorf("describing the producers of %s-%d: no answer for the partition", o.Topic, o.Partition)
		}
		if p.Err != nil {
			return fmt.Errorf("describing the producers of %s-%d: %w", o.Topic, o.Partition, cmdutil.WithMessage(p.Err, p.ErrMessage))
		}
		found := false
		for _, dp := range p.ActiveProducers {
			if dp.CurrentTxnStartOffset == o.StartOffset {
				a.ProducerID, a.ProducerEpoch, a.CoordinatorEpoch, a.Leader = dp.ProducerID, dp.ProducerEpoch, dp.CoordinatorEpoch, p.Leader
				found = true
				break
			}
		}
		if !found {
			return fmt.Errorf("%s-%d has no open transaction starting at offset %d (%d producers have one there)",
				o.Topic, o.Partition, o.StartOffset, len(p.ActiveProducers))
		}
	}
	rs, err := adm.WriteTxnMarkers(rctx, kadm.TxnMarkers{ProducerID: a.ProducerID, ProducerEpoch: a.ProducerEpoch, Commit: false,
		CoordinatorEpoch: a.CoordinatorEpoch, Topics: kadm.TopicsSet{o.Topic: {o.Partition: {}}}})
	if err != nil {
		return o.Factory.ClusterError("writing the abort marker", err)
	}
	pr, ok := rs[a.ProducerID].Topics[o.Topic].Partitions[o.Partition]
	if !ok {
		return fmt.Errorf("writing the abort marker to %s-%d: no answer for the partition", o.Topic, o.Partition)
	}
	if pr.Err != nil {
		return fmt.Errorf("writing the abort marker to %s-%d: %w", o.Topic, o.Partition, pr.Err)
	}
	a.Leader = pr.NodeID
	w := o.Factory.IO.Out
	return o.Output.Print(w, a, func() error { return writeAborted(w, a) })
}

func writeAborted(w io.Writer, a Aborted) error {
	_, err := fmt.Fprintf(w, "Aborted the transaction of producer %d (epoch %d, coordinator epoch %d) on %s-%d; leader %d wrote the marker.\n",
		a.ProducerID, a.ProducerEpoch, a.CoordinatorEpoch, a.Topic, a.Partition, a.Leader)
	return err
}
