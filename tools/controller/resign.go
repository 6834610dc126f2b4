package controller

import (
	"context"
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/ktoolhq/ktool/tools/cmdutil"
	"github.com/ktoolhq/ktool/tools/zk"
)

// ResignOptions are the inputs of `ktool controller resign`.
type ResignOptions struct {
	Factory   *cmdutil.Factory
	Zookeeper string
	Yes       bool
	Wait      time.Duration
}

// NewResignCommand returns `ktool controller resign`.
func NewResignCommand(f *cmdutil.Factory, runF func(context.Context, *ResignOptions) error) *cobra.Command {
	opts := &ResignOptions{Factory: f}
	cmd := &cobra.Command{
		Use:   "resign --zookeeper ADDR --yes",
		Short: "Force a controller election by deleting /controller",
		Long: `Delete the ephemeral /controller znode. Every live broker watches it; they
race to create it again and the winner becomes the controller with a higher
/controller_epoch. The deletion is conditional on the znode being the one just
read, so a controller elected in between is left alone.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if !opts.Yes {
				return cmdutil.Usagef("resigning the controller forces an election; pass --yes to confirm")
			}
			if runF != nil {
				return runF(cmd.Context(), opts)
			}
			return runResign(cmd.Context(), opts)
		},
	}
	cmd.Flags().StringVar(&opts.Zookeeper, "zookeeper", "", "ZooKeeper host:port[/chroot] of the cluster")
	cmd.Flags().BoolVar(&opts.Yes, "yes", false, "confirm the forced election")
	cmd.Flags().DurationVar(&opts.Wait, "wait", 10*time.Second, "how long to wait for the new controller (0: do not wait)")
	return cmd
}

func runResign(ctx context.Context, o *ResignOptions) error {
	addr, err := o.Factory.Zookeeper(o.Zookeeper)
	if err != nil {
		return err
	}
	rctx, cancel := o.Factory.RequestContext(ctx)
	defer cancel()
	c, err := zk.Dial(rctx, addr)
	if err != nil {
		return err
	}
	defer c.Close()
	b, st, err := c.Get(rctx, "/controller")
	if err != nil {
		return fmt.Errorf("%w: there is no controller to resign", err)
	}
	old, err := ParseControllerZNode(b)
	if err != nil {
		return err
	}
	if err := c.Delete(rctx, "/controller", st.Version); err != nil {
		return err
	}
	w := o.Factory.IO.Out
	fmt.Fprintf(w, "Deleted /controller (broker %d); the brokers will elect a new controller.\n", old.BrokerID)
	if o.Wait <= 0 {
		return nil
	}
	wctx, wcancel := context.WithTimeout(ctx, o.Wait)
	defer wcancel()
	next, err := waitForController(wctx, c, st.Czxid)
	if err != nil {
		fmt.Fprintf(w, "No new controller within %s; check `ktool controller --zookeeper %s`.\n", o.Wait, addr)
		return nil
	}
	fmt.Fprintf(w, "New controller: broker %d (elected %s).\n", next.BrokerID, next.Timestamp.Format(time.RFC3339Nano))
	return nil
}

// waitForController polls until a /controller other than the deleted one
// (created in transaction oldCzxid) exists.
func waitForController(ctx context.Context, c *zk.Conn, oldCzxid int64) (ControllerZNode, error) {
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for {
		if ok, st, err := c.Exists(ctx, "/controller"); err == nil && ok && st.Czxid != oldCzxid {
			if b, _, err := c.Get(ctx, "/controller"); err == nil {
				return ParseControllerZNode(b)
			}
		}
		select {
		case <-ctx.Done():
			return ControllerZNode{}, ctx.Err()
		case <-tick.C:
		}
	}
}
