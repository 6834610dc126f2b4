package txn

import (
	"github.com/spf13/cobra"

	"github.com/ktoolhq/ktool/tools/cmdutil"
)

// NewCommand returns `ktool txn` with its verbs.
func NewCommand(f *cmdutil.Factory) *cobra.Command {
	cmd := &cobra.Command{
		Use:     "txn",
		Aliases: []string{"transactions"},
		Short:   "List and describe transactions and a partition's producers; abort a hanging transaction",
	}
	cmd.AddCommand(
		NewListCommand(f, nil),
		NewDescribeCommand(f, nil),
		NewDescribeProducersCommand(f, nil),
		NewAbortCommand(f, nil),
	)
	return cmd
}

// states are the transaction states, as Kafka names them.
func states() []string {
	return []string{"Empty", "Ongoing", "PrepareCommit", "PrepareAbort", "CompleteCommit", "CompleteAbort", "Dead", "PrepareEpochFence"}
}
