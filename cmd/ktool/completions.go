package main

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/ktoolhq/ktool/tools/cmdutil"
)

// completionScripts renders every shell's completion script for root.
func completionScripts(root *cobra.Command) (map[string][]byte, error) {
	out := map[string][]byte{}
	gen := map[string]func(*bytes.Buffer) error{
		"ktool.bash": func(b *bytes.Buffer) error { return root.GenBashCompletionV2(b, true) },
		"ktool.zsh":  func(b *bytes.Buffer) error { return root.GenZshCompletion(b) },
		"ktool.fish": func(b *bytes.Buffer) error { return root.GenFishCompletion(b, true) },
		"ktool.ps1":  func(b *bytes.Buffer) error { return root.GenPowerShellCompletionWithDesc(b) },
	}
	for name, f := range gen {
		var b bytes.Buffer
		if err := f(&b); err != nil {
			return nil, fmt.Errorf("generating %s: %w", name, err)
		}
		out[name] = b.Bytes()
	}
	return out, nil
}

// newGenerateCompletionsCommand writes completions/ (release archives and
// packages ship these files); --check fails when they are stale.
func newGenerateCompletionsCommand(f *cmdutil.Factory, root *cobra.Command) *cobra.Command {
	var dir string
	var check bool
	cmd := &cobra.Command{
		Use:   "generate",
		Short: "Write the completion scripts of every shell into a directory",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			scripts, err := completionScripts(root)
			if err != nil {
				return err
			}
			var stale []string
			for name, body := range scripts {
				path := filepath.Join(dir, name)
				if check {
					cur, err := os.ReadFile(path)
					if err != nil || !bytes.Equal(cur, body) {
						stale = append(stale, path)
					}
					continue
				}
				if err := os.MkdirAll(dir, 0o755); err != nil {
					return err
				}
				if err := os.WriteFile(path, body, 0o644); err != nil {
					return err
				}
				fmt.Fprintln(f.IO.Out, "wrote", path)
			}
			if len(stale) > 0 {
				return fmt.Errorf("completion scripts are stale: %v; run `go run ./cmd/ktool completion generate --dir completions` (or make completions)", stale)
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&dir, "dir", "completions", "directory to write to")
	cmd.Flags().BoolVar(&check, "check", false, "only check that the files are current")
	return cmd
}

// addCompletionCommand replaces cobra's default completion command with one that
// also has `generate`.
func addCompletionCommand(f *cmdutil.Factory, root *cobra.Command) {
	root.InitDefaultCompletionCmd()
	for _, c := range root.Commands() {
		if c.Name() == "completion" {
			c.AddCommand(newGenerateCompletionsCommand(f, root))
		}
	}
}
