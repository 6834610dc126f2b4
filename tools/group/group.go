package group

import (
	"github.com/spf13/cobra"

	"github.com/ktoolhq/ktool/tools/cmdutil"
)

// NewCommand returns `ktool group` with its verbs.
func NewCommand(f *cmdutil.Factory) *cobra.Command {
	cmd := &cobra.Command{
		Use:     "group",
		Aliases: []string{"groups"},
		Short:   "List, describe and delete consumer groups; show lag; reset and delete offsets",
	}
	cmd.AddCommand(
		NewListCommand(f, nil),
		NewDescribeCommand(f, nil),
		NewDeleteCommand(f, nil),
		NewResetOffsetsCommand(f, nil),
		NewDeleteOffsetsCommand(f, nil),
	)
	return cmd
}
