package cmdutil

import (
	"fmt"
	"strings"

	"github.com/spf13/cobra"
)

// RequireSubcommands makes every group command below root (one that only
// holds sub-commands) fail as a usage error when it is run bare or with an
// unknown sub-command: help goes to stderr and the exit code is 2. Cobra on
// its own prints help and exits 0, which hides typos in scripts.
func RequireSubcommands(root *cobra.Command) {
	for _, c := range root.Commands() {
		requireSubcommands(c)
	}
}

func requireSubcommands(cmd *cobra.Command) {
	if !cmd.HasSubCommands() {
		return
	}
	for _, c := range cmd.Commands() {
		requireSubcommands(c)
	}
	if cmd.Runnable() {
		return
	}
	cmd.Args = cobra.ArbitraryArgs
	cmd.RunE = func(c *cobra.Command, args []string) error {
		fmt.Fprint(c.ErrOrStderr(), c.UsageString())
		if len(args) == 0 {
			return Usagef("%q needs a sub-command", c.CommandPath())
		}
		msg := fmt.Sprintf("unknown command %q for %q", args[0], c.CommandPath())
		if c.SuggestionsMinimumDistance <= 0 {
			c.SuggestionsMinimumDistance = 2
		}
		if s := c.SuggestionsFor(args[0]); len(s) > 0 {
			msg += "; did you mean " + strings.Join(s, " or ") + "?"
		}
		return UsageError(fmt.Errorf("%s", msg))
	}
}
