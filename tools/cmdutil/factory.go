package cmdutil

import (
	"context"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// BuildInfo is set at link time.
type BuildInfo struct {
	Version, Commit, Date string
}

// Factory gives commands what they need without global state.
type Factory struct {
	IO    *IOStreams
	Build BuildInfo

	// Global flags.
	BrokersFlag   []string
	ProfileFlag   string
	ConfigPath    string
	ZookeeperFlag string
	ClientTimeout time.Duration

	// SecurityFlags are the --tls-*, --sasl-* and --client-config flags.
	SecurityFlags Security

	// ClientOpts are appended to every Kafka client ktool makes (tests use it).
	ClientOpts []kgo.Opt

	cachedPassword string // asked once per run
}

// NewFactory returns a Factory on the given streams.
func NewFactory(ios *IOStreams, b BuildInfo) *Factory {
	return &Factory{IO: ios, Build: b, ConfigPath: DefaultConfigPath(), ClientTimeout: 10 * time.Second}
}

// AddGlobalFlags registers the connection flags on the root command.
func (f *Factory) AddGlobalFlags(root *cobra.Command) {
	pf := root.PersistentFlags()
	pf.StringSliceVarP(&f.BrokersFlag, "brokers", "b", nil,
		"bootstrap brokers host:port,... (env KTOOL_BROKERS; default from the profile, else localhost:9092)")
	pf.StringVar(&f.ProfileFlag, "profile", "", "profile to use from the config file (env KTOOL_PROFILE)")
	pf.StringVar(&f.ConfigPath, "config-file", f.ConfigPath, "ktool config file holding profiles (env KTOOL_CONFIG)")
	pf.DurationVar(&f.ClientTimeout, "timeout", f.ClientTimeout, "how long to wait for the cluster to answer a request")
	f.addSecurityFlags(root)
}

// Config loads the config file.
func (f *Factory) Config() (*Config, error) { return LoadConfig(f.ConfigPath) }

// Profile returns the profile in effect (flag, KTOOL_PROFILE, then the current
// one), or nil when there is none.
func (f *Factory) Profile() (*Profile, string, error) {
	cfg, err := f.Config()
	if err != nil {
		return nil, "", err
	}
	name := f.ProfileFlag
	if name == "" {
		name = os.Getenv("KTOOL_PROFILE")
	}
	explicit := name != ""
	if name == "" {
		name = cfg.Current
	}
	if name == "" {
		return nil, "", nil
	}
	p, ok := cfg.Profiles[name]
	if !ok {
		if explicit {
			return nil, "", Usagef("no profile %q in %s (see `ktool profile list`)", name, cfg.Path())
		}
		return nil, "", nil
	}
	return p, name, nil
}

// Brokers resolves the bootstrap brokers: --brokers, KTOOL_BROKERS, the
// profile, then localhost:9092.
func (f *Factory) Brokers() ([]string, error) {
	if len(f.BrokersFlag) > 0 {
		return f.BrokersFlag, nil
	}
	if env := os.Getenv("KTOOL_BROKERS"); env != "" {
		return splitList(env), nil
	}
	p, _, err := f.Profile()
	if err != nil {
		return nil, err
	}
	if p != nil && len(p.Brokers) > 0 {
		return p.Brokers, nil
	}
	return []string{"localhost:9092"}, nil
}

// Zookeeper resolves the ZooKeeper address: the given flag value, KTOOL_ZOOKEEPER, the profile.
func (f *Factory) Zookeeper(flag string) (string, error) {
	if flag != "" {
		return flag, nil
	}
	if env := os.Getenv("KTOOL_ZOOKEEPER"); env != "" {
		return env, nil
	}
	p, _, err := f.Profile()
	if err != nil {
		return "", err
	}
	if p != nil && p.Zookeeper != "" {
		return p.Zookeeper, nil
	}
	return "", Usagef("no ZooKeeper address: pass --zookeeper host:port[/chroot] or set it in the profile")
}

// Client returns a Kafka client on the resolved brokers with extra options.
func (f *Factory) Client(extra ...kgo.Opt) (*kgo.Client, error) {
	brokers, err := f.Brokers()
	if err != nil {
		return nil, err
	}
	opts := []kgo.Opt{
		kgo.SeedBrokers(brokers...),
		kgo.ClientID("ktool"),
		kgo.DialTimeout(f.ClientTimeout),
		kgo.RequestTimeoutOverhead(f.ClientTimeout),
		kgo.RetryTimeout(f.ClientTimeout),
	}
	sec, err := f.securityOpts()
	if err != nil {
		return nil, err
	}
	opts = append(opts, sec...)
	opts = append(opts, f.ClientOpts...)
	opts = append(opts, extra...)
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		return nil, fmt.Errorf("creating Kafka client for %s: %w", strings.Join(brokers, ","), err)
	}
	return cl, nil
}

// Admin returns an admin client; close it with Close().
func (f *Factory) Admin() (*kadm.Client, error) {
	cl, err := f.Client()
	if err != nil {
		return nil, err
	}
	return kadm.NewClient(cl), nil
}

// RequestContext bounds one admin round trip by --timeout.
func (f *Factory) RequestContext(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(ctx, f.ClientTimeout)
}

func splitList(s string) []string {
	var out []string
	for _, p := range strings.Split(s, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}
