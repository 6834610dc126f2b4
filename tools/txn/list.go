package txn

import (
	"context"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/ktoolhq/ktool/tools/cmdutil"
)

// Listed is one transactional id in `ktool txn list`.
type Listed struct {
	TransactionalID string `json:"transactional_id" yaml:"transactional_id"`
	Coordinator     int32  `json:"coordinator" yaml:"coordinator"`
	ProducerID      int64  `json:"producer_id" yaml:"producer_id"`
	State           string `json:"state" yaml:"state"`
}

// ListOptions are the inputs of `ktool txn list`.
type ListOptions struct {
	Factory *cmdutil.Factory
	Output  cmdutil.OutputFlag

	States      []string
	ProducerIDs []int64
}

// NewListCommand returns `ktool txn list`.
func NewListCommand(f *cmdutil.Factory, runF func(context.Context, *ListOptions) error) *cobra.Command {
	opts := &ListOptions{Factory: f}
	cmd := &cobra.Command{
		Use:   "list",
		Short: "List transactional ids with their coordinator, producer id and state (ListTransactions)",
		Example: `  ktool txn list
  ktool txn list --state Ongoing,PrepareCommit -o json
  ktool txn list --producer-id 4000`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := opts.Output.Validate(); err != nil {
				return err
			}
			for i, s := range opts.States {
				canon, err := canonicalState(s)
				if err != nil {
					return err
				}
				opts.States[i] = canon
			}
			if runF != nil {
				return runF(cmd.Context(), opts)
			}
			return runList(cmd.Context(), opts)
		},
	}
	cmd.Flags().StringSliceVar(&opts.States, "state", nil, "only transactions in these states: "+strings.Join(states(), ", "))
	cmd.Flags().Int64SliceVar(&opts.ProducerIDs, "producer-id", nil, "only transactions of these producer ids")
	_ = cmd.RegisterFlagCompletionFunc("state", func(*cobra.Command, []string, string) ([]string, cobra.ShellCompDirective) {
		return states(), cobra.ShellCompDirectiveNoFileComp
	})
	opts.Output.Register(cmd)
	return cmd
}

func canonicalState(s string) (string, error) {
	for _, st := range states() {
		if strings.EqualFold(strings.TrimSpace(s), st) {
			return st, nil
		}
	}
	return "", cmdutil.Usagef("--state %q: want one of %s", s, strings.Join(states(), ", "))
}

func runList(ctx context.Context, o *ListOptions) error {
	adm, err := o.Factory.Admin()
	if err != nil {
		return err
	}
	defer adm.Close()
	rctx, cancel := o.Factory.RequestContext(ctx)
	defer cancel()
	listed, err := adm.ListTransactions(rctx, o.ProducerIDs, o.States)
	if err != nil && len(listed) == 0 {
		return o.Factory.ClusterError("listing transactions", err)
	}
	out := []Listed{}
	for _, l := range listed.Sorted() {
		out = append(out, Listed{TransactionalID: l.TxnID, Coordinator: l.Coordinator, ProducerID: l.ProducerID, State: l.State})
	}
	w := o.Factory.IO.Out
	if perr := o.Output.Print(w, out, func() error { return writeList(w, out) }); perr != nil {
		return perr
	}
	if err != nil {
		// Some brokers answered; say which did not, after what they listed.
		return o.Factory.ClusterError("listing transactions on every broker", err)
	}
	return nil
}

func writeList(w io.Writer, txns []Listed) error {
	if len(txns) == 0 {
		_, err := fmt.Fprintln(w, "No transactional ids.")
		return err
	}
	t := cmdutil.NewTable(w, "TransactionalId", "Coordinator", "ProducerId", "State")
	for _, l := range txns {
		if err := t.Append([]string{l.TransactionalID, strconv.Itoa(int(l.Coordinator)), strconv.FormatInt(l.ProducerID, 10), l.State}); err != nil {
			return err
		}
	}
	return t.Render()
}
