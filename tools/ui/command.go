package ui

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"time"

	"github.com/spf13/cobra"

	"github.com/ktoolhq/ktool/tools/cmdutil"
)

// Options are the inputs of `ktool ui`.
type Options struct {
	Factory       *cmdutil.Factory
	Listen        string
	ReadOnly      bool
	TokenFile     string
	BasicAuthFile string
	Zookeeper     string
	Refresh       time.Duration

	// Ready, when set, is told the address the console listens on (tests).
	Ready func(addr string)
}

// NewCommand returns `ktool ui`.
func NewCommand(f *cmdutil.Factory, runF func(context.Context, *Options) error) *cobra.Command {
	o := &Options{Factory: f}
	cmd := &cobra.Command{
		Use:   "ui",
		Short: "Serve a web console for the cluster (brokers, topics, ISR, groups, messages)",
		Long: `Serve a web console for the cluster on --listen: the cluster's brokers and
health, topics, each partition's leader, AR, ISR and OSR, consumer groups with
their lag, a message browser and, with --zookeeper, the controller znodes and a
znode browser. Pages update by themselves (server-sent events) from one
snapshot of the cluster that the console refreshes every --refresh and shares
among viewers. It uses the same connection settings as every command (profile,
--brokers).

Actions (preferred election, create topic, add partitions, alter topic config,
reset group offsets, delete group, delete records) each ask for confirmation;
--read-only offers none. The console binds 127.0.0.1 by default; before
exposing it, require a bearer token (--auth-token-file; a browser logs in with
any user name and the token as password) or a user and password
(--basic-auth-file).`,
		Example: `  ktool ui
  ktool ui --brokers kafka1:9092 --zookeeper zk1:2181 --listen 127.0.0.1:9000
  ktool ui --read-only --listen 0.0.0.0:8080 --auth-token-file /etc/ktool/ui-token`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if runF != nil {
				return runF(cmd.Context(), o)
			}
			return Run(cmd.Context(), o)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&o.Listen, "listen", "127.0.0.1:8080", "host:port to serve the console on")
	fl.BoolVar(&o.ReadOnly, "read-only", false, "offer no action that changes the cluster")
	fl.StringVar(&o.TokenFile, "auth-token-file", "", "require this file's bearer token (or basic auth with it as password)")
	fl.StringVar(&o.BasicAuthFile, "basic-auth-file", "", "require basic auth with the user:password in this file")
	fl.StringVar(&o.Zookeeper, "zookeeper", "", "ZooKeeper host:port[/chroot] for the controller and znode pages (env KTOOL_ZOOKEEPER, or the profile)")
	fl.DurationVar(&o.Refresh, "refresh", time.Second, "how often the shared cluster snapshot is refreshed while someone watches (0.5s..2s)")
	return cmd
}

// Run serves the console until ctx ends.
func Run(ctx context.Context, o *Options) error {
	if o.Refresh < 500*time.Millisecond || o.Refresh > 2*time.Second {
		return cmdutil.Usagef("--refresh must be between 0.5s and 2s")
	}
	var auth Auth
	var err error
	if o.TokenFile != "" {
		if auth.Token, err = ReadTokenFile(o.TokenFile); err != nil {
			return cmdutil.UsageError(err)
		}
	}
	if o.BasicAuthFile != "" {
		if auth.User, auth.Password, err = ReadBasicAuthFile(o.BasicAuthFile); err != nil {
			return cmdutil.UsageError(err)
		}
	}
	zkAddr := o.Zookeeper
	if zkAddr == "" {
		// ZooKeeper is optional here: without one the ZooKeeper page says so.
		zkAddr, _ = o.Factory.Zookeeper("")
	}
	ln, err := net.Listen("tcp", o.Listen)
	if err != nil {
		return fmt.Errorf("listening on %s: %w", o.Listen, err)
	}
	srv, err := New(o.Factory, Config{Listen: ln.Addr().String(), ReadOnly: o.ReadOnly, Auth: auth, Zookeeper: zkAddr, Refresh: o.Refresh})
	if err != nil {
		ln.Close()
		return err
	}
	defer srv.Close()
	if !srv.guard.loopbackOnly && !auth.Enabled() {
		fmt.Fprintf(o.Factory.IO.ErrOut, "warning: %s is reachable from other hosts and no --auth-token-file or --basic-auth-file is set\n", o.Listen)
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	// A cluster that cannot be read is reported now; the console still
	// starts, and its pages show the error until the cluster answers.
	rctx, rcancel := o.Factory.RequestContext(ctx)
	st, err := srv.Refresh(rctx, true)
	rcancel()
	if err != nil {
		fmt.Fprintf(o.Factory.IO.ErrOut, "warning: %v\n", err)
	} else {
		fmt.Fprintf(o.Factory.IO.ErrOut, "ktool ui: %d brokers, %d topics, %d partitions read in %v (%d requests)\n",
			st.Brokers, st.Topics, st.Partitions, st.Took.Round(time.Millisecond), st.Requests)
	}
	go srv.Run(ctx)
	hs := &http.Server{Handler: srv, ReadHeaderTimeout: 10 * time.Second, IdleTimeout: 2 * time.Minute,
		BaseContext: func(net.Listener) context.Context { return ctx }}
	errc := make(chan error, 1)
	go func() { errc <- hs.Serve(ln) }()
	fmt.Fprintf(o.Factory.IO.ErrOut, "ktool ui: serving http://%s/ (Ctrl-C stops)\n", ln.Addr())
	if o.Ready != nil {
		o.Ready(ln.Addr().String())
	}
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	sctx, scancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer scancel()
	_ = hs.Shutdown(sctx)
	if err := <-errc; err != nil && !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}
