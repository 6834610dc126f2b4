package cluster

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"time"

	"github.com/spf13/cobra"

	"github.com/ktoolhq/ktool/internal/supervisor/control"
	"github.com/ktoolhq/ktool/tools/cmdutil"
)

// DownOptions are the inputs of `ktool cluster down`.
type DownOptions struct {
	Factory *cmdutil.Factory
	Dir     string
	Timeout time.Duration
}

// NewDownCommand returns `ktool cluster down`.
func NewDownCommand(f *cmdutil.Factory, runF func(context.Context, *DownOptions) error) *cobra.Command {
	opts := &DownOptions{Factory: f}
	cmd := &cobra.Command{
		Use:   "down",
		Short: "Stop the local cluster",
		Long: `Stop the processes the local cluster in --dir started, and nothing else: the
brokers get SIGTERM one after the other, the controller last (a clean,
controlled shutdown), and one still running after --timeout gets SIGKILL;
then the ZooKeeper the cluster started, if any.
Data and logs stay in the directory, so ` + "`ktool cluster up`" + ` starts the same
cluster again.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if opts.Timeout <= 0 {
				return cmdutil.Usagef("--timeout must be positive")
			}
			if runF != nil {
				return runF(cmd.Context(), opts)
			}
			return runDown(cmd.Context(), opts)
		},
	}
	addDirFlag(cmd, &opts.Dir)
	cmd.Flags().DurationVar(&opts.Timeout, "timeout", 30*time.Second, "how long each broker may take to stop before it is killed")
	return cmd
}

func runDown(ctx context.Context, o *DownOptions) error {
	unlock, err := lockDir(o.Dir)
	if err != nil {
		return err
	}
	defer unlock()
	st, err := LoadState(o.Dir)
	if err != nil {
		return err
	}
	w := o.Factory.IO.Out
	if !st.Running() {
		fmt.Fprintf(w, "The cluster in %s is not running.\n", st.Dir)
		return nil
	}
	var errs []error
	if sup := st.Supervisor; sup.Alive() {
		// A shutdown request stops the brokers in order; SIGTERM does the
		// same when the socket does not answer.
		cctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		if _, err := control.Call(cctx, st.Socket, control.Request{Op: control.OpShutdown}); err != nil {
			fmt.Fprintf(o.Factory.IO.ErrOut, "%v; sending SIGTERM\n", err)
		}
		cancel()
		killed, err := waitOrStop(ctx, sup, o.Timeout)
		errs = append(errs, err)
		fmt.Fprintf(w, "Stopped the supervisor (pid %d) and its %d brokers%s.\n", sup.PID, len(st.Brokers), killedNote(killed))
	}
	// One broker after the other, the controller last: each controlled
	// shutdown hands its leaderships to brokers that stay, through a
	// controller that is still there.
	var live []BrokerRecord
	for _, b := range st.Brokers {
		if b.Process.Alive() {
			live = append(live, b)
		}
	}
	controller := int32(-1)
	if len(live) > 0 {
		if reg, err := readRegistration(ctx, o.Factory, st.Addrs(), 2*time.Second, st.clientOpts(o.Factory)); err == nil {
			controller = reg.Controller
		}
		sort.SliceStable(live, func(i, j int) bool { return live[j].ID == controller && live[i].ID != controller })
	}
	for i, b := range live {
		killed, err := stopProcs(ctx, []*Proc{b.Process}, o.Timeout)
		errs = append(errs, err)
		fmt.Fprintf(w, "Stopped broker %d (pid %d)%s.\n", b.ID, b.Process.PID, killedNote(len(killed) > 0))
		if i < len(live)-1 && b.ID != controller {
			o.waitGoneFromController(ctx, st, controller, b.ID)
		}
	}
	if zk := st.ZooKeeperProcess; zk.Alive() {
		killed, err := stopProcs(ctx, []*Proc{zk}, 15*time.Second)
		errs = append(errs, err)
		fmt.Fprintf(w, "Stopped ZooKeeper (pid %d)%s.\n", zk.PID, killedNote(len(killed) > 0))
	}
	for i, zk := range st.ZooKeeperEnsemble {
		if !zk.Alive() {
			continue
		}
		killed, err := stopProcs(ctx, []*Proc{zk}, 15*time.Second)
		errs = append(errs, err)
		fmt.Fprintf(w, "Stopped ZooKeeper node %d (pid %d)%s.\n", i+1, zk.PID, killedNote(len(killed) > 0))
	}
	return errors.Join(errs...)
}

// waitGoneFromController waits (a few seconds at most) until the controller
// no longer lists broker id, so that the next broker's controlled shutdown
// does not count it as a broker to hand leaderships to.
func (o *DownOptions) waitGoneFromController(ctx context.Context, st *State, controller, id int32) {
	rec, err := st.Broker(controller)
	if err != nil {
		return
	}
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) && ctx.Err() == nil {
		reg, err := readRegistration(ctx, o.Factory, []string{rec.Addr}, time.Second, st.clientOpts(o.Factory))
		if err == nil && !slices.Contains(reg.Brokers, id) {
			return
		}
		select {
		case <-ctx.Done():
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// waitOrStop waits up to timeout for a process that was asked to stop, then
// sends SIGTERM and, after a grace period, SIGKILL.
func waitOrStop(ctx context.Context, p *Proc, timeout time.Duration) (killed bool, err error) {
	if waitGone(ctx, []*Proc{p}, timeout) {
		return false, nil
	}
	k, err := stopProcs(ctx, []*Proc{p}, 5*time.Second)
	return len(k) > 0, err
}

func killedNote(killed bool) string {
	if killed {
		return " (killed: it did not stop in time)"
	}
	return ""
}
