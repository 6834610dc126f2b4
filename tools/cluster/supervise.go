package cluster

import (
	"context"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/ktoolhq/ktool/internal/supervisor/control"
	"github.com/ktoolhq/ktool/tools/cmdutil"
)

// SuperviseCommand is the hidden `ktool cluster` command that `cluster up`
// runs as the supervisor process of an embedded-mode cluster. It runs
// brokers, so it is defined next to `broker start` in cmd/ktool, which adds
// it to this command.
const SuperviseCommand = "__supervise"

// completeBrokerIDs completes the broker ids of the cluster in *dir: running
// ones for kill, stopped ones for start. It reads local files and, in the
// embedded mode, asks the supervisor within the completion budget.
func completeBrokerIDs(dir *string, running bool) func(*cobra.Command, []string, string) ([]string, cobra.ShellCompDirective) {
	return func(cmd *cobra.Command, args []string, _ string) ([]string, cobra.ShellCompDirective) {
		if len(args) > 0 {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		st, err := LoadState(*dir)
		if err != nil {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		alive := map[int32]bool{}
		if st.Mode == ModeEmbedded {
			if st.Supervisor.Alive() {
				ctx := context.Background()
				if cmd != nil && cmd.Context() != nil {
					ctx = cmd.Context()
				}
				ctx, cancel := context.WithTimeout(ctx, cmdutil.CompletionBudget)
				resp, err := control.Call(ctx, st.Socket, control.Request{Op: control.OpStatus})
				cancel()
				if err == nil {
					for _, b := range resp.Brokers {
						alive[b.ID] = b.Running
					}
				}
			}
		} else {
			for _, b := range st.Brokers {
				alive[b.ID] = b.Process.Alive()
			}
		}
		var out []string
		for _, b := range st.Brokers {
			if alive[b.ID] == running {
				out = append(out, fmt.Sprintf("%d\t%s", b.ID, b.Addr))
			}
		}
		return out, cobra.ShellCompDirectiveNoFileComp
	}
}
