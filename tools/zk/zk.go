package zk

import (
	"context"

	"github.com/spf13/cobra"

	"github.com/ktoolhq/ktool/tools/cmdutil"
)

// NewCommand returns `ktool zk` with ls, get and tree.
func NewCommand(f *cmdutil.Factory) *cobra.Command {
	var addr string
	cmd := &cobra.Command{
		Use:   "zk",
		Short: "Browse ZooKeeper: Kafka's znodes pretty-printed with their stat",
		Long: `Browse the ZooKeeper a ZooKeeper-mode Kafka cluster (or ktool's brokers)
keep their state in: /brokers/ids, /brokers/topics, /controller,
/controller_epoch, /admin, /config, /isr_change_notification.
--zookeeper takes Kafka's zookeeper.connect syntax, "h1:p1,h2:p2/chroot"
(env KTOOL_ZOOKEEPER, or the profile's zookeeper).`,
	}
	cmd.PersistentFlags().StringVar(&addr, "zookeeper", "", "ZooKeeper connect string host:port[,host:port][/chroot]")
	dial := func(ctx context.Context) (*Conn, error) {
		a, err := f.Zookeeper(addr)
		if err != nil {
			return nil, err
		}
		dctx, cancel := f.RequestContext(ctx)
		defer cancel()
		return Dial(dctx, a)
	}
	cmd.AddCommand(
		NewLsCommand(f, dial, nil),
		NewGetCommand(f, dial, nil),
		NewTreeCommand(f, dial, nil),
	)
	return cmd
}

// Dialer opens the ZooKeeper session a command works on.
type Dialer func(ctx context.Context) (*Conn, error)

func pathArg(args []string) (string, error) {
	if len(args) == 0 {
		return "/", nil
	}
	p, err := CleanPath(args[0])
	if err != nil {
		return "", cmdutil.UsageError(err)
	}
	return p, nil
}
