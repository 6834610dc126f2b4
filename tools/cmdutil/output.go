package cmdutil

import (
	"encoding/json"
	"fmt"
	"io"

	"github.com/spf13/cobra"
	"gopkg.in/yaml.v3"
)

// OutputFlag is the -o/--output flag shared by every command that prints data.
// JSON and YAML come from the same tagged structs; table is for people.
type OutputFlag struct {
	Format string
}

// Register adds -o/--output to cmd.
func (o *OutputFlag) Register(cmd *cobra.Command) {
	cmd.Flags().StringVarP(&o.Format, "output", "o", "table", "output format: table, json or yaml")
	_ = cmd.RegisterFlagCompletionFunc("output", func(*cobra.Command, []string, string) ([]string, cobra.ShellCompDirective) {
		return []string{"table", "json", "yaml"}, cobra.ShellCompDirectiveNoFileComp
	})
}

// Validate reports a usage error for an unknown format.
func (o *OutputFlag) Validate() error {
	switch o.Format {
	case "", "table", "json", "yaml":
		return nil
	}
	return Usagef("unknown output format %q (want table, json or yaml)", o.Format)
}

// Structured reports whether the output is machine-readable (json or yaml).
func (o *OutputFlag) Structured() bool { return o.Format == "json" || o.Format == "yaml" }

// Print writes v as JSON or YAML, or calls table for the human form.
func (o *OutputFlag) Print(w io.Writer, v any, table func() error) error {
	if err := o.Validate(); err != nil {
		return err
	}
	return Encode(w, o.Format, v, table)
}

// Encode writes v in format; "table" (or "") calls table.
func Encode(w io.Writer, format string, v any, table func() error) error {
	switch format {
	case "json":
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(v)
	case "yaml":
		enc := yaml.NewEncoder(w)
		enc.SetIndent(2)
		if err := enc.Encode(v); err != nil {
			return err
		}
		return enc.Close()
	case "", "table":
		return table()
	}
	return Usagef("unknown output format %q (want table, json or yaml)", format)
}

// JoinInt32 formats broker ids and the like as "1,2,3".
func JoinInt32(xs []int32) string {
	s := ""
	for i, x := range xs {
		if i > 0 {
			s += ","
		}
		s += fmt.Sprint(x)
	}
	return s
}
