package topic

import (
	"github.com/spf13/cobra"

	"github.com/ktoolhq/ktool/tools/cmdutil"
)

// NewCommand returns `ktool topic` with its verbs.
func NewCommand(f *cmdutil.Factory) *cobra.Command {
	cmd := &cobra.Command{
		Use:     "topic",
		Aliases: []string{"topics"},
		Short:   "Create, list, describe, delete and change topics",
	}
	cmd.AddCommand(
		NewCreateCommand(f, nil),
		NewListCommand(f, nil),
		NewDescribeCommand(f, nil),
		NewDeleteCommand(f, nil),
		NewAlterConfigCommand(f, nil),
		NewAddPartitionsCommand(f, nil),
		NewTrimCommand(f, nil),
	)
	return cmd
}
