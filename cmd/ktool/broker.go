package main

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/ktoolhq/ktool/broker"
	"github.com/ktoolhq/ktool/broker/config"
	"github.com/ktoolhq/ktool/internal/brokerproc"
	"github.com/ktoolhq/ktool/plugins"
	"github.com/ktoolhq/ktool/tools/brokerinfo"
	"github.com/ktoolhq/ktool/tools/cmdutil"
	"github.com/ktoolhq/ktool/tools/reassign"
)

// brokerStartOptions are the flags of `ktool broker start`.
type brokerStartOptions struct {
	ConfigFile      string
	Overrides       []string
	BrokerID        int
	Listeners       string
	Advertised      string
	LogDirs         string
	Zookeeper       string
	MetricsListener string
	LogLevel        string
	LogFormat       string
	PluginDir       string
	ShutdownTimeout time.Duration
}

func newBrokerCommand(f *cmdutil.Factory) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "broker",
		Short: "Run a broker, or list the brokers of a cluster",
	}
	cmd.AddCommand(newBrokerStartCommand(f), brokerinfo.NewListCommand(f, nil), reassign.NewDecommissionCommand(f, nil))
	return cmd
}

func newBrokerStartCommand(f *cmdutil.Factory) *cobra.Command {
	opts := &brokerStartOptions{}
	cmd := &cobra.Command{
		Use:   "start",
		Short: "Run a Kafka-compatible broker in the foreground",
		Long: `Run a broker. Settings use Kafka's server.properties names, read from --config
and overridden by --override key=value and the shortcut flags.

Without zookeeper.connect the broker runs standalone: it keeps its coordination
data in an embedded store inside its first log dir and is its own controller.
With zookeeper.connect it registers in ZooKeeper and takes part in controller
election like a Kafka broker in ZooKeeper mode.

SIGTERM or SIGINT shuts down cleanly: leaderships are moved away (controlled
shutdown), in-flight requests finish, logs are flushed.`,
		Example: `  # standalone, data in ./data, listening on 127.0.0.1:9092
  ktool broker start --log-dirs ./data

  # broker 1 of a ZooKeeper cluster, from a Kafka server.properties
  ktool broker start --config server.properties --override broker.id=1 --zookeeper localhost:2181/kafka`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runBrokerStart(cmd.Context(), f, opts, cmd)
		},
	}
	fl := cmd.Flags()
	fl.StringVarP(&opts.ConfigFile, "config", "c", "", "server.properties file")
	fl.StringArrayVar(&opts.Overrides, "override", nil, "override a setting: key=value (repeatable)")
	fl.IntVar(&opts.BrokerID, "broker-id", -2, "broker.id")
	fl.StringVar(&opts.Listeners, "listeners", "", "listeners, e.g. PLAINTEXT://127.0.0.1:9092")
	fl.StringVar(&opts.Advertised, "advertised-listeners", "", "advertised.listeners")
	fl.StringVar(&opts.LogDirs, "log-dirs", "", "log.dirs (comma-separated)")
	fl.StringVar(&opts.Zookeeper, "zookeeper", "", "zookeeper.connect (host:port[/chroot]); unset runs standalone")
	fl.StringVar(&opts.MetricsListener, "metrics-listener", "", "host:port serving /metrics, /healthz and /readyz")
	fl.StringVar(&opts.LogLevel, "log-level", "info", "log level: debug, info, warn, error")
	fl.StringVar(&opts.LogFormat, "log-format", "text", "log format: text or json")
	fl.StringVar(&opts.PluginDir, "plugin-dir", "", "directory of external codec plugins (env KTOOL_PLUGIN_DIR)")
	fl.DurationVar(&opts.ShutdownTimeout, "shutdown-timeout", 30*time.Second, "how long a clean shutdown may take")
	return cmd
}

// brokerSettings merges the properties file, --override and the shortcut flags.
func brokerSettings(opts *brokerStartOptions, cmd *cobra.Command) (*config.Broker, map[string]string, error) {
	props := map[string]string{}
	if opts.ConfigFile != "" {
		p, err := config.ReadPropertiesFile(opts.ConfigFile)
		if err != nil {
			return nil, nil, cmdutil.Usagef("reading --config: %v", err)
		}
		props = p
	}
	for _, o := range opts.Overrides {
		k, v, ok := strings.Cut(o, "=")
		if !ok || strings.TrimSpace(k) == "" {
			return nil, nil, cmdutil.Usagef("--override %q is not key=value", o)
		}
		props[strings.TrimSpace(k)] = strings.TrimSpace(v)
	}
	set := func(flag, key, val string) {
		if cmd.Flags().Changed(flag) {
			props[key] = val
		}
	}
	set("broker-id", "broker.id", fmt.Sprint(opts.BrokerID))
	set("listeners", "listeners", opts.Listeners)
	set("advertised-listeners", "advertised.listeners", opts.Advertised)
	set("log-dirs", "log.dirs", opts.LogDirs)
	set("zookeeper", "zookeeper.connect", opts.Zookeeper)
	set("metrics-listener", "metrics.listener", opts.MetricsListener)
	cfg, err := config.NewBroker(props)
	if err != nil {
		return nil, nil, cmdutil.UsageError(err)
	}
	return cfg, props, nil
}

func runBrokerStart(ctx context.Context, f *cmdutil.Factory, opts *brokerStartOptions, cmd *cobra.Command) error {
	cfg, props, err := brokerSettings(opts, cmd)
	if err != nil {
		return err
	}
	logger, err := newLogger(f, opts.LogLevel, opts.LogFormat)
	if err != nil {
		return err
	}
	for _, k := range config.Unknown(props) {
		logger.Warn("ignoring unknown setting", "key", k)
	}
	catalog := plugins.NewCatalog(plugins.Options{Dir: pluginDir(opts.PluginDir), Logger: logger.With("component", "plugins")})
	defer catalog.Close()
	b, err := broker.New(broker.Options{Config: cfg, Logger: logger, Codecs: catalog})
	if err != nil {
		return cmdutil.UsageError(err)
	}
	if err := b.Start(ctx); err != nil {
		return err
	}
	mode := "standalone (embedded coordination store)"
	if zk := cfg.Settings().ZooKeeperConnect; zk != "" {
		mode = "ZooKeeper " + zk
	}
	select {
	case <-b.Ready():
		fmt.Fprintln(f.IO.Out, brokerproc.ReadyLine(brokerproc.Ready{
			ID: b.ID(), Addr: b.Addr(), Advertised: b.AdvertisedAddr(), ClusterID: b.ClusterID(), Mode: mode}))
	case <-ctx.Done():
	case err := <-b.Failed():
		return fmt.Errorf("broker %d stopped: %w", b.ID(), err)
	}
	select {
	case <-ctx.Done():
	case err := <-b.Failed():
		// It stopped itself (every log dir failed) and has shut down already.
		return fmt.Errorf("broker %d stopped: %w", b.ID(), err)
	}
	fmt.Fprintf(f.IO.Out, "ktool broker %d shutting down\n", b.ID())
	sctx, cancel := context.WithTimeout(context.Background(), opts.ShutdownTimeout)
	defer cancel()
	return b.Shutdown(sctx)
}

func pluginDir(flag string) string {
	if flag != "" {
		return flag
	}
	return os.Getenv("KTOOL_PLUGIN_DIR")
}

func newLogger(f *cmdutil.Factory, level, format string) (*slog.Logger, error) {
	var lv slog.Level
	if err := lv.UnmarshalText([]byte(level)); err != nil {
		return nil, cmdutil.Usagef("--log-level %q: want debug, info, warn or error", level)
	}
	hopts := &slog.HandlerOptions{Level: lv}
	switch format {
	case "text":
		return slog.New(slog.NewTextHandler(f.IO.ErrOut, hopts)), nil
	case "json":
		return slog.New(slog.NewJSONHandler(f.IO.ErrOut, hopts)), nil
	}
	return nil, cmdutil.Usagef("--log-format %q: want text or json", format)
}
