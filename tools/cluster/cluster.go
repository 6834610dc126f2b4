package cluster

import (
	"github.com/spf13/cobra"

	"github.com/ktoolhq/ktool/tools/cmdutil"
)

// NewCommand returns `ktool cluster` with its verbs.
func NewCommand(f *cmdutil.Factory) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "cluster",
		Short: "Check the health of a cluster",
	}
	cmd.AddCommand(NewHealthCommand(f, nil))
	return cmd
}
