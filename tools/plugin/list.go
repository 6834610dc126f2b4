package plugin

import (
	"context"
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"github.com/ktoolhq/ktool/plugins"
	"github.com/ktoolhq/ktool/tools/cmdutil"
)

// ListOptions are the inputs of `ktool plugin list`.
type ListOptions struct {
	Factory *cmdutil.Factory
	Output  cmdutil.OutputFlag
	dirFlag
}

// NewListCommand returns `ktool plugin list`.
func NewListCommand(f *cmdutil.Factory, runF func(context.Context, *ListOptions) error) *cobra.Command {
	opts := &ListOptions{Factory: f}
	cmd := &cobra.Command{
		Use:     "list",
		Aliases: []string{"ls"},
		Short:   "List the assignor and codec plugins in effect, built-in and external",
		Long: `List starts every plugin once and asks it for its name, kind and version.
A plugin that cannot be started is listed with the reason, and the command
then exits with status 3.`,
		Example: `  ktool plugin list
  ktool plugin list --plugin-dir ./plugins -o json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := opts.Output.Validate(); err != nil {
				return err
			}
			if runF != nil {
				return runF(cmd.Context(), opts)
			}
			return runList(cmd.Context(), opts)
		},
	}
	opts.dirFlag.register(cmd)
	opts.Output.Register(cmd)
	return cmd
}

func runList(ctx context.Context, o *ListOptions) error {
	cat := o.catalog()
	defer cat.Close()
	infos, err := cat.List(ctx)
	if err != nil {
		return err
	}
	w := o.Factory.IO.Out
	if err := o.Output.Print(w, infos, func() error { return writeList(w, infos) }); err != nil {
		return err
	}
	for _, i := range infos {
		if i.Error != "" {
			fmt.Fprintf(o.Factory.IO.ErrOut, "%s %s: %s\n", i.Kind, i.Name, i.Error)
		}
	}
	for _, i := range infos {
		if i.Error != "" {
			return cmdutil.ProblemsFound()
		}
	}
	return nil
}

func writeList(w io.Writer, infos []plugins.Info) error {
	tbl := cmdutil.NewTable(w, "Name", "Kind", "Version", "Builtin", "Path")
	for _, i := range infos {
		version := i.Version
		if i.Error != "" {
			version = "(failed)"
		}
		builtin := "no"
		if i.Builtin {
			builtin = "yes"
		}
		if err := tbl.Append([]string{i.Name, i.Kind, version, builtin, i.Path}); err != nil {
			return err
		}
	}
	return tbl.Render()
}
