package configs

import (
	"github.com/spf13/cobra"

	"github.com/ktoolhq/ktool/tools/cmdutil"
)

// NewCommand returns `ktool config` with describe and alter.
func NewCommand(f *cmdutil.Factory) *cobra.Command {
	cmd := &cobra.Command{
		Use:     "config",
		Aliases: []string{"configs"},
		Short:   "Describe and alter the configs of topics, brokers, users and clients",
	}
	cmd.AddCommand(NewDescribeCommand(f, nil), NewAlterCommand(f, nil))
	return cmd
}
