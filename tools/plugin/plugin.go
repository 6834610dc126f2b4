package plugin

import (
	"github.com/spf13/cobra"

	"github.com/ktoolhq/ktool/plugins"
	"github.com/ktoolhq/ktool/tools/cmdutil"
)

// NewCommand returns `ktool plugin`.
func NewCommand(f *cmdutil.Factory) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "plugin",
		Short: "List and verify partition assignor and compression codec plugins",
		Long: `Partition assignors and compression codecs run as plugins (hashicorp/go-plugin
over gRPC). The built-ins (assignors range, roundrobin, sticky,
cooperative-sticky; codecs gzip, snappy, lz4, zstd) are served by the ktool
binary itself. External plugins are executables named ktool-assignor-NAME or
ktool-codec-NAME in the plugin directory (--plugin-dir, env KTOOL_PLUGIN_DIR,
default <user config dir>/ktool/plugins); one named like a built-in replaces it.`,
	}
	cmd.AddCommand(NewListCommand(f, nil), NewVerifyCommand(f, nil))
	return cmd
}

// dirFlag is the --plugin-dir flag shared by the plugin commands.
type dirFlag struct{ Dir string }

func (d *dirFlag) register(cmd *cobra.Command) {
	cmd.Flags().StringVar(&d.Dir, "plugin-dir", "",
		"directory of external plugins (env KTOOL_PLUGIN_DIR; default "+plugins.DefaultDir()+")")
}

func (d *dirFlag) catalog() *plugins.Catalog {
	return plugins.NewCatalog(plugins.Options{Dir: d.Dir})
}
