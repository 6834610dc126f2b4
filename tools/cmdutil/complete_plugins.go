package cmdutil

import (
	"os"
	"sort"
	"strings"

	"github.com/spf13/cobra"

	"github.com/ktoolhq/ktool/assignor"
	"github.com/ktoolhq/ktool/plugins"
	"github.com/ktoolhq/ktool/plugins/codec"
)

// CompletePlugins completes plugin names: the built-ins and the executables
// in the plugin directory (the command's --plugin-dir flag, else the
// default), limited to the kind in its --kind flag when set. It reads only
// local files and starts no plugin.
func CompletePlugins(_ *Factory) CompletionFunc {
	return func(cmd *cobra.Command, args []string, toComplete string) ([]string, cobra.ShellCompDirective) {
		dir, kind := plugins.DefaultDir(), ""
		if cmd != nil {
			if fl := cmd.Flags().Lookup("plugin-dir"); fl != nil && fl.Value.String() != "" {
				dir = fl.Value.String()
			}
			if fl := cmd.Flags().Lookup("kind"); fl != nil {
				kind = fl.Value.String()
			}
		}
		seen := map[string]string{}
		add := func(k, name, desc string) {
			if kind == "" || kind == k {
				if _, dup := seen[name]; !dup {
					seen[name] = desc
				}
			}
		}
		if entries, err := os.ReadDir(dir); err == nil {
			for _, e := range entries {
				for _, k := range []string{plugins.KindAssignor, plugins.KindCodec} {
					if name, ok := strings.CutPrefix(e.Name(), plugins.ExecutableName(k, "")); ok && name != "" && !e.IsDir() {
						add(k, name, k+" plugin in "+dir)
					}
				}
			}
		}
		for _, a := range assignor.Builtins() {
			add(plugins.KindAssignor, a.Name(), "built-in assignor")
		}
		for _, c := range codec.Builtins() {
			add(plugins.KindCodec, c.Name(), "built-in codec")
		}
		names := make([]string, 0, len(seen))
		for name, desc := range seen {
			names = append(names, name+"\t"+desc)
		}
		sort.Strings(names)
		return filterCompletions(names, args, toComplete), cobra.ShellCompDirectiveNoFileComp
	}
}
