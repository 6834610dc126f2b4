// Package version implements `ktool version`.
package version

import (
	"fmt"
	"runtime"

	"github.com/spf13/cobra"

	"github.com/ktoolhq/ktool/tools/cmdutil"
)

// Info is what `ktool version` prints.
type Info struct {
	Version string `json:"version" yaml:"version"`
	Commit  string `json:"commit" yaml:"commit"`
	Date    string `json:"date" yaml:"date"`
	Go      string `json:"go" yaml:"go"`
	OS      string `json:"os" yaml:"os"`
	Arch    string `json:"arch" yaml:"arch"`
}

// NewCommand returns `ktool version`.
func NewCommand(f *cmdutil.Factory) *cobra.Command {
	var out cmdutil.OutputFlag
	cmd := &cobra.Command{
		Use:   "version",
		Short: "Print ktool's version and build information",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			info := Info{
				Version: f.Build.Version, Commit: f.Build.Commit, Date: f.Build.Date,
				Go: runtime.Version(), OS: runtime.GOOS, Arch: runtime.GOARCH,
			}
			return out.Print(f.IO.Out, info, func() error {
				_, err := fmt.Fprintf(f.IO.Out, "ktool %s (commit %s, built %s, %s %s/%s)\n",
					info.Version, info.Commit, info.Date, info.Go, info.OS, info.Arch)
				return err
			})
		},
	}
	out.Register(cmd)
	return cmd
}
