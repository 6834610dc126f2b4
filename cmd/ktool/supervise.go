package main

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
	"github.com/ktoolhq/ktool/plugins"
	"github.com/ktoolhq/ktool/tools/cluster"
	"github.com/ktoolhq/ktool/tools/cmdutil"
)

// newClusterCommand is `ktool cluster` with the hidden supervisor command
// `cluster up` runs. That command runs brokers, so it lives here next to
// `broker start` rather than in tools/cluster, which drives the supervisor
// only through its control protocol.
func newClusterCommand(f *cmdutil.Factory) *cobra.Command {
	cmd := cluster.NewCommand(f)
	cmd.AddCommand(newSuperviseCommand(f))
	return cmd
}

func newSuperviseCommand(f *cmdutil.Factory) *cobra.Command {
	var dir string
	var stopTimeout time.Duration
	cmd := &cobra.Command{
		Use:    cluster.SuperviseCommand,
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
	st, err := cluster.LoadState(dir)
	if err != nil {
		return err
	}
	if st.Mode != cluster.ModeEmbedded {
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
	// The brokers resolve codecs through the plugin catalog, as `ktool broker
	// start` does, so a codec plugin in KTOOL_PLUGIN_DIR serves them too.
	catalog := plugins.NewCatalog(plugins.Options{Dir: pluginDir(""), Logger: logger.With("component", "plugins")})
	defer catalog.Close()
	return supervisor.Run(ctx, supervisor.Options{StoreDir: filepath.Join(st.Dir, "store"), Brokers: specs, Logger: logger, Codecs: catalog},
		st.Socket, stopTimeout, func() {
			ids := make([]string, len(specs))
			for i, s := range specs {
				ids[i] = fmt.Sprint(s.ID)
			}
			fmt.Fprintf(f.IO.Out, "ktool cluster supervisor ready: brokers %s on the embedded coordination store\n", strings.Join(ids, ", "))
		})
}
