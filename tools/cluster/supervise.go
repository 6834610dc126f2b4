package cluster

import (
	"context"
	"fmt"
	"log/slog"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/ktoolhq/ktool/broker/config"
	"github.com/ktoolhq/ktool/internal/supervisor"
	"github.com/ktoolhq/ktool/tools/cmdutil"
)

// SuperviseCommand is the hidden command `ktool cluster up` runs as the
// supervisor process of an embedded-mode cluster.
const SuperviseCommand = "__supervise"

func newSuperviseCommand(f *cmdutil.Factory) *cobra.Command {
	var dir string
	var stopTimeout time.Duration
	cmd := &cobra.Command{
		Use:    SuperviseCommand,
		Short:  "Run the brokers of an embedded-mode local cluster (started by cluster up)",
		Hidden: true,
		Args:   cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runSupervise(cmd.Context(), f, dir, stopTimeout)
		},
	}
	cmd.Flags().StringVar(&dir, "dir", "", "cluster directory")
	cmd.Flags().DurationVar(&stopTimeout, "stop-timeout", 30*time.Second, "how long the brokers may take to stop")
	_ = cmd.MarkFlagRequired("dir")
	return cmd
}

// runSupervise runs the brokers recorded in DIR/cluster.json, each with its
// server.properties, on the store in DIR/store.
func runSupervise(ctx context.Context, f *cmdutil.Factory, dir string, stopTimeout time.Duration) error {
	st, err := LoadState(dir)
	if err != nil {
		return err
	}
	if st.Mode != ModeEmbedded {
		return fmt.Errorf("the cluster in %s runs on ZooKeeper, not the embedded store", dir)
	}
	var specs []supervisor.BrokerSpec
	for _, b := range st.Brokers {
		props, err := config.ReadPropertiesFile(b.Config)
		if err != nil {
			return err
		}
		specs = append(specs, supervisor.BrokerSpec{ID: b.ID, Props: props, LogFile: b.Log})
	}
	logger := slog.New(slog.NewTextHandler(f.IO.ErrOut, nil))
	return supervisor.Run(ctx, supervisor.Options{StoreDir: filepath.Join(st.Dir, "store"), Brokers: specs, Logger: logger},
		st.Socket, stopTimeout, func() {
			ids := make([]string, len(specs))
			for i, s := range specs {
				ids[i] = fmt.Sprint(s.ID)
			}
			fmt.Fprintf(f.IO.Out, "ktool cluster supervisor ready: brokers %s on the embedded coordination store\n", strings.Join(ids, ", "))
		})
}

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
				resp, err := supervisor.Call(ctx, st.Socket, supervisor.Request{Op: supervisor.OpStatus})
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
