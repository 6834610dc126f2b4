package txn

import (
	"context"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/ktoolhq/ktool/tools/cmdutil"
)

// Described is one transactional id in `ktool txn describe`.
type Described struct {
	TransactionalID string `json:"transactional_id" yaml:"transactional_id"`
	Coordinator     int32  `json:"coordinator" yaml:"coordinator"`
	State           string `json:"state" yaml:"state"`
	ProducerID      int64  `json:"producer_id" yaml:"producer_id"`
	ProducerEpoch   int16  `json:"producer_epoch" yaml:"producer_epoch"`
	TimeoutMs       int32  `json:"timeout_ms" yaml:"timeout_ms"`
	// StartTimestamp is the start of the ongoing transaction in ms, -1 when none.
	StartTimestamp int64 `json:"start_timestamp" yaml:"start_timestamp"`
	// Partitions are the transaction's partitions as topic-partition.
	Partitions []string `json:"partitions" yaml:"partitions"`
	Error      string   `json:"error,omitempty" yaml:"error,omitempty"`
}

// DescribeOptions are the inputs of `ktool txn describe`.
type DescribeOptions struct {
	Factory *cmdutil.Factory
	Output  cmdutil.OutputFlag

	IDs []string
	Now func() time.Time
}

// NewDescribeCommand returns `ktool txn describe`.
func NewDescribeCommand(f *cmdutil.Factory, runF func(context.Context, *DescribeOptions) error) *cobra.Command {
	opts := &DescribeOptions{Factory: f, Now: time.Now}
	cmd := &cobra.Command{
		Use:   "describe TRANSACTIONAL_ID...",
		Short: "Show a transactional id's state, producer id and epoch, timeout, start and partitions (DescribeTransactions)",
		Example: `  ktool txn describe payments-etl-0
  ktool txn describe a b -o yaml`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := opts.Output.Validate(); err != nil {
				return err
			}
			opts.IDs = args
			if runF != nil {
				return runF(cmd.Context(), opts)
			}
			return runDescribe(cmd.Context(), opts)
		},
	}
	opts.Output.Register(cmd)
	return cmd
}

func runDescribe(ctx context.Context, o *DescribeOptions) error {
	adm, err := o.Factory.Admin()
	if err != nil {
		return err
	}
	defer adm.Close()
	rctx, cancel := o.Factory.RequestContext(ctx)
	defer cancel()
	ds, err := adm.DescribeTransactions(rctx, o.IDs...)
	if err != nil && len(ds) == 0 {
		return o.Factory.ClusterError("describing transactions", err)
	}
	out := []Described{}
	failed := false
	for _, id := range o.IDs {
		d, ok := ds[id]
		if !ok {
			out = append(out, Described{TransactionalID: id, Coordinator: -1, ProducerID: -1, ProducerEpoch: -1, StartTimestamp: -1,
				Partitions: []string{}, Error: "no answer from its coordinator"})
			failed = true
			continue
		}
		e := Described{TransactionalID: id, Coordinator: d.Coordinator, State: d.State, ProducerID: d.ProducerID,
			ProducerEpoch: d.ProducerEpoch, TimeoutMs: d.TimeoutMillis, StartTimestamp: d.StartTimestamp, Partitions: []string{}}
		if d.Err != nil {
			e.Error = d.Err.Error()
			failed = true
		}
		d.Topics.Sorted().Each(func(t string, p int32) { e.Partitions = append(e.Partitions, t+"-"+strconv.Itoa(int(p))) })
		out = append(out, e)
	}
	w := o.Factory.IO.Out
	if err := o.Output.Print(w, out, func() error { return writeDescribe(w, out, o.Now()) }); err != nil {
		return err
	}
	if failed {
		return cmdutil.ProblemsFound()
	}
	return nil
}

func writeDescribe(w io.Writer, ds []Described, now time.Time) error {
	t := cmdutil.NewTable(w, "TransactionalId", "Coordinator", "State", "ProducerId", "Epoch", "Timeout", "Running", "Partitions")
	for _, d := range ds {
		if d.Error != "" {
			if err := t.Append([]string{d.TransactionalID, strconv.Itoa(int(d.Coordinator)), "error: " + d.Error, "", "", "", "", ""}); err != nil {
				return err
			}
			continue
		}
		running := "-"
		if d.StartTimestamp >= 0 && (d.State == "Ongoing" || strings.HasPrefix(d.State, "Prepare")) {
			running = now.Sub(time.UnixMilli(d.StartTimestamp)).Truncate(time.Millisecond).String()
		}
		row := []string{d.TransactionalID, strconv.Itoa(int(d.Coordinator)), d.State, strconv.FormatInt(d.ProducerID, 10),
			strconv.Itoa(int(d.ProducerEpoch)), (time.Duration(d.TimeoutMs) * time.Millisecond).String(), running, strings.Join(d.Partitions, ",")}
		if err := t.Append(row); err != nil {
			return err
		}
	}
	return t.Render()
}
