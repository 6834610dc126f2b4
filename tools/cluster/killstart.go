package cluster

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/ktoolhq/ktool/internal/supervisor/control"
	"github.com/ktoolhq/ktool/tools/cmdutil"
)

// BrokerOptions are the inputs of `ktool cluster kill` and `ktool cluster start`.
type BrokerOptions struct {
	Factory *cmdutil.Factory
	Dir     string
	ID      int32
	Wait    time.Duration
	// Executable is the ktool binary a started broker runs.
	Executable string
}

// NewKillCommand returns `ktool cluster kill BROKER_ID`.
func NewKillCommand(f *cmdutil.Factory, runF func(context.Context, *BrokerOptions) error) *cobra.Command {
	opts := &BrokerOptions{Factory: f}
	cmd := &cobra.Command{
		Use:   "kill BROKER_ID",
		Short: "Kill one broker of the local cluster, as a crash would",
		Long: `Kill one broker abruptly: its process gets SIGKILL (no controlled shutdown,
no flush). Its ZooKeeper session then expires after zookeeper.session.timeout.ms
(6 s in a local cluster), its /brokers/ids znode disappears and the controller
elects new leaders for the partitions it led and shrinks their ISR. In the
embedded mode the supervisor halts the broker and its session ends at once.
If it was the controller, the other brokers elect a new one.`,
		Example: `  ktool cluster kill 1
  ktool topic describe orders --watch   # in another terminal`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			id, err := parseBrokerID(args[0])
			if err != nil {
				return err
			}
			opts.ID = id
			if runF != nil {
				return runF(cmd.Context(), opts)
			}
			return runKill(cmd.Context(), opts)
		},
	}
	cmd.ValidArgsFunction = completeBrokerIDs(&opts.Dir, true)
	addDirFlag(cmd, &opts.Dir)
	return cmd
}

// NewStartCommand returns `ktool cluster start BROKER_ID`.
func NewStartCommand(f *cmdutil.Factory, runF func(context.Context, *BrokerOptions) error) *cobra.Command {
	opts := &BrokerOptions{Factory: f}
	cmd := &cobra.Command{
		Use:   "start BROKER_ID",
		Short: "Start a stopped broker of the local cluster again",
		Long: `Start one broker again on its data directory and port, and wait until it is
registered. It recovers its logs, catches up from the leaders as a follower
and rejoins the ISR; with auto.leader.rebalance.enable the controller later
gives it back the leadership of its preferred partitions.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			id, err := parseBrokerID(args[0])
			if err != nil {
				return err
			}
			opts.ID = id
			if opts.Wait <= 0 {
				return cmdutil.Usagef("--wait must be positive")
			}
			if runF != nil {
				return runF(cmd.Context(), opts)
			}
			exe, err := os.Executable()
			if err != nil {
				return fmt.Errorf("finding the ktool executable: %w", err)
			}
			opts.Executable = exe
			return runStart(cmd.Context(), opts)
		},
	}
	cmd.ValidArgsFunction = completeBrokerIDs(&opts.Dir, false)
	addDirFlag(cmd, &opts.Dir)
	cmd.Flags().DurationVar(&opts.Wait, "wait", time.Minute, "how long to wait for the broker to register")
	return cmd
}

func parseBrokerID(s string) (int32, error) {
	id, err := strconv.ParseInt(s, 10, 32)
	if err != nil || id < 0 {
		return 0, cmdutil.Usagef("broker id %q is not a non-negative number", s)
	}
	return int32(id), nil
}

func runKill(ctx context.Context, o *BrokerOptions) error {
	unlock, err := lockDir(o.Dir)
	if err != nil {
		return err
	}
	defer unlock()
	st, err := LoadState(o.Dir)
	if err != nil {
		return err
	}
	b, err := st.Broker(o.ID)
	if err != nil {
		return cmdutil.UsageError(err)
	}
	w := o.Factory.IO.Out
	if st.Mode == ModeEmbedded {
		if !st.Supervisor.Alive() {
			return fmt.Errorf("the cluster in %s is not running", st.Dir)
		}
		cctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		defer cancel()
		if _, err := control.Call(cctx, st.Socket, control.Request{Op: control.OpKill, Broker: o.ID}); err != nil {
			return err
		}
		fmt.Fprintf(w, "Killed broker %d: halted without controlled shutdown; its session ended.\n", o.ID)
		return nil
	}
	p := b.Process
	if !p.Alive() {
		return fmt.Errorf("broker %d is not running", o.ID)
	}
	if err := p.signal(syscall.SIGKILL); err != nil {
		return err
	}
	if !waitGone(ctx, []*Proc{p}, 10*time.Second) {
		return fmt.Errorf("broker %d (pid %d) still runs after SIGKILL", o.ID, p.PID)
	}
	fmt.Fprintf(w, "Killed broker %d (pid %d) with SIGKILL; its ZooKeeper session expires within zookeeper.session.timeout.ms.\n", o.ID, p.PID)
	return nil
}

func runStart(ctx context.Context, o *BrokerOptions) error {
	unlock, err := lockDir(o.Dir)
	if err != nil {
		return err
	}
	defer unlock()
	st, err := LoadState(o.Dir)
	if err != nil {
		return err
	}
	b, err := st.Broker(o.ID)
	if err != nil {
		return cmdutil.UsageError(err)
	}
	w := o.Factory.IO.Out
	if st.Mode == ModeEmbedded {
		if !st.Supervisor.Alive() {
			return fmt.Errorf("the cluster in %s is not running; start it with `ktool cluster up --dir %s`", st.Dir, st.Dir)
		}
		cctx, cancel := context.WithTimeout(ctx, o.Wait)
		defer cancel()
		if _, err := control.Call(cctx, st.Socket, control.Request{Op: control.OpStart, Broker: o.ID}); err != nil {
			return err
		}
		fmt.Fprintf(w, "Started broker %d on %s.\n", o.ID, b.Addr)
		return nil
	}
	if b.Process.Alive() {
		return fmt.Errorf("broker %d is already running (pid %d)", o.ID, b.Process.PID)
	}
	if err := st.zooKeeperDown(); err != nil {
		return fmt.Errorf("the cluster's ZooKeeper is not running (%v); start the cluster with `ktool cluster up --dir %s`", err, st.Dir)
	}
	p, err := spawn(exec.Command(o.Executable, "broker", "start", "--config", b.Config), b.Log)
	if err != nil {
		return err
	}
	b.Process = p
	if err := st.Save(); err != nil {
		return err
	}
	if _, err := waitRegistered(ctx, o.Factory, st.Addrs(), []int32{o.ID}, o.Wait, st.clientOpts(o.Factory), func() error {
		if !p.Alive() {
			return exitedError(fmt.Sprintf("broker %d", o.ID), p)
		}
		return nil
	}); err != nil {
		return err
	}
	fmt.Fprintf(w, "Started broker %d (pid %d) on %s.\n", o.ID, p.PID, b.Addr)
	return nil
}
