package txn

import (
	"context"
	"fmt"
	"io"
	"sort"
	"strconv"
	"time"

	"github.com/spf13/cobra"
	"github.com/twmb/franz-go/pkg/kadm"

	"github.com/ktoolhq/ktool/tools/cmdutil"
)

// Producer is one producer of a partition in `ktool txn describe-producers`.
type Producer struct {
	Topic         string `json:"topic" yaml:"topic"`
	Partition     int32  `json:"partition" yaml:"partition"`
	Leader        int32  `json:"leader" yaml:"leader"`
	ProducerID    int64  `json:"producer_id" yaml:"producer_id"`
	ProducerEpoch int16  `json:"producer_epoch" yaml:"producer_epoch"`
	// CoordinatorEpoch is that of the producer's last marker here, -1 before one.
	CoordinatorEpoch int32 `json:"coordinator_epoch" yaml:"coordinator_epoch"`
	LastSequence     int32 `json:"last_sequence" yaml:"last_sequence"`
	// LastTimestamp is in ms, -1 when unknown.
	LastTimestamp int64 `json:"last_timestamp" yaml:"last_timestamp"`
	// CurrentTxnStartOffset is the first offset of the open transaction, -1 when none.
	CurrentTxnStartOffset int64 `json:"current_txn_start_offset" yaml:"current_txn_start_offset"`
}

// ProducersOptions are the inputs of `ktool txn describe-producers`.
type ProducersOptions struct {
	Factory *cmdutil.Factory
	Output  cmdutil.OutputFlag

	Topic     string
	Partition int32
}

// NewDescribeProducersCommand returns `ktool txn describe-producers`.
func NewDescribeProducersCommand(f *cmdutil.Factory, runF func(context.Context, *ProducersOptions) error) *cobra.Command {
	opts := &ProducersOptions{Factory: f}
	cmd := &cobra.Command{
		Use:   "describe-producers --topic T --partition P",
		Short: "Show a partition's producers: id, epoch, coordinator epoch, last sequence and the start of an open transaction (DescribeProducers)",
		Long: `Show the producer state the partition's leader holds, as kafka-transactions.sh
describe-producers does: every producer id with its epoch, the coordinator epoch
of its last transaction marker, its last sequence and timestamp, and the first
offset of its open transaction. A transaction that holds back the last stable
offset starts at that offset; ` + "`ktool txn abort`" + ` takes it.`,
		Example: `  ktool txn describe-producers --topic payments --partition 3
  ktool txn describe-producers --topic payments --partition 3 -o json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := opts.Output.Validate(); err != nil {
				return err
			}
			if opts.Topic == "" || !cmd.Flags().Changed("partition") {
				return cmdutil.Usagef("--topic and --partition are required")
			}
			if runF != nil {
				return runF(cmd.Context(), opts)
			}
			return runDescribeProducers(cmd.Context(), opts)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&opts.Topic, "topic", "", "the partition's topic")
	fl.Int32Var(&opts.Partition, "partition", 0, "the partition")
	_ = cmd.RegisterFlagCompletionFunc("topic", cmdutil.CompleteTopics(f))
	opts.Output.Register(cmd)
	return cmd
}

func runDescribeProducers(ctx context.Context, o *ProducersOptions) error {
	adm, err := o.Factory.Admin()
	if err != nil {
		return err
	}
	defer adm.Close()
	rctx, cancel := o.Factory.RequestContext(ctx)
	defer cancel()
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
	out := []Producer{}
	for _, dp := range p.ActiveProducers {
		out = append(out, Producer{Topic: o.Topic, Partition: o.Partition, Leader: p.Leader, ProducerID: dp.ProducerID,
			ProducerEpoch: dp.ProducerEpoch, CoordinatorEpoch: dp.CoordinatorEpoch, LastSequence: dp.LastSequence,
			LastTimestamp: dp.LastTimestamp, CurrentTxnStartOffset: dp.CurrentTxnStartOffset})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ProducerID < out[j].ProducerID })
	w := o.Factory.IO.Out
	return o.Output.Print(w, out, func() error { return writeProducers(w, out) })
}

func writeProducers(w io.Writer, ps []Producer) error {
	t := cmdutil.NewTable(w, "ProducerId", "Epoch", "CoordinatorEpoch", "LastSequence", "LastTimestamp", "TxnStartOffset")
	for _, p := range ps {
		ts, start := "-", "-"
		if p.LastTimestamp >= 0 {
			ts = time.UnixMilli(p.LastTimestamp).UTC().Format(time.RFC3339Nano)
		}
		if p.CurrentTxnStartOffset >= 0 {
			start = strconv.FormatInt(p.CurrentTxnStartOffset, 10)
		}
		row := []string{strconv.FormatInt(p.ProducerID, 10), strconv.Itoa(int(p.ProducerEpoch)), strconv.Itoa(int(p.CoordinatorEpoch)),
			strconv.Itoa(int(p.LastSequence)), ts, start}
		if err := t.Append(row); err != nil {
			return err
		}
	}
	return t.Render()
}
