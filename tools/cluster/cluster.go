package cluster

import (
	"context"
	"fmt"
	"os"
	"time"

	"github.com/spf13/cobra"

	"github.com/ktoolhq/ktool/tools/cmdutil"
	"github.com/ktoolhq/ktool/tools/reassign"
	"github.com/ktoolhq/ktool/tools/setup"
)

// NewCommand returns `ktool cluster` with its verbs.
func NewCommand(f *cmdutil.Factory) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "cluster",
		Short: "Run a local cluster (init, up, status, kill, start, down) and check a cluster's health",
	}
	cmd.AddCommand(
		NewHealthCommand(f, nil),
		setup.NewInitCommand(f, localCluster{f}, DefaultDir(), nil),
		NewUpCommand(f, nil),
		NewStatusCommand(f, nil),
		NewDownCommand(f, nil),
		NewKillCommand(f, nil),
		NewStartCommand(f, nil),
		reassign.NewBalanceCommand(f, nil),
		setup.NewCheckCommand(f),
	)
	return cmd
}

// localCluster is what `ktool cluster init` needs of the cluster verbs.
type localCluster struct{ f *cmdutil.Factory }

// Up starts the cluster defined in dir, as `ktool cluster up --from dir`.
func (c localCluster) Up(ctx context.Context, dir string) error {
	exe, err := os.Executable()
	if err != nil {
		return fmt.Errorf("finding the ktool executable: %w", err)
	}
	return RunUp(ctx, &UpOptions{
		Factory: c.f, Dir: dir, Wait: time.Minute, Executable: exe,
		Changed: func(string) bool { return false },
	})
}

// Running reports whether a process recorded in dir still runs.
func (localCluster) Running(dir string) bool {
	st, err := LoadState(dir)
	return err == nil && st.Running()
}
