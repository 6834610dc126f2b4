package cluster

import (
	"github.com/spf13/cobra"

	"github.com/ktoolhq/ktool/tools/cmdutil"
)

// NewCommand returns `ktool cluster` with its verbs.
func NewCommand(f *cmdutil.Factory) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "cluster",
		Short: "Run a local cluster (up, status, kill, start, down) and check a cluster's health",
	}
	cmd.AddCommand(
		NewHealthCommand(f, nil),
		NewUpCommand(f, nil),
		NewStatusCommand(f, nil),
		NewDownCommand(f, nil),
		NewKillCommand(f, nil),
		NewStartCommand(f, nil),
		newSuperviseCommand(f),
	)
	return cmd
}
