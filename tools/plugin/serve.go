package plugin

import (
	"github.com/spf13/cobra"

	"github.com/ktoolhq/ktool/plugins"
	"github.com/ktoolhq/ktool/tools/cmdutil"
)

// NewServeCommand returns the hidden `ktool __plugin serve KIND NAME`, which
// the plugin catalog runs to serve a built-in assignor or codec.
func NewServeCommand(f *cmdutil.Factory) *cobra.Command {
	cmd := &cobra.Command{
		Use:    plugins.ServeCommand,
		Short:  "Serve ktool's built-in plugins (started by ktool itself)",
		Hidden: true,
	}
	cmd.AddCommand(&cobra.Command{
		Use:          "serve KIND NAME",
		SilenceUsage: true,
		Short:        "Serve one built-in assignor or codec over go-plugin",
		Args:         cobra.ExactArgs(2),
		ValidArgs:    []string{plugins.KindAssignor, plugins.KindCodec},
		RunE: func(_ *cobra.Command, args []string) error {
			return plugins.ServeBuiltin(args[0], args[1], f.Build.Version)
		},
	})
	return cmd
}
