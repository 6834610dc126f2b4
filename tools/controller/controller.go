package controller

import (
	"context"
	"fmt"
	"io"
	"net"
	"strconv"
	"time"

	"github.com/spf13/cobra"

	"github.com/ktoolhq/ktool/tools/cmdutil"
	"github.com/ktoolhq/ktool/tools/zk"
)

// Info is what `ktool controller` prints.
type Info struct {
	ID        int32    `json:"id" yaml:"id"` // -1 when the metadata names no controller
	Host      string   `json:"host" yaml:"host"`
	Port      int32    `json:"port" yaml:"port"`
	Endpoint  string   `json:"endpoint" yaml:"endpoint"`
	ClusterID string   `json:"cluster_id" yaml:"cluster_id"`
	Error     string   `json:"error,omitempty" yaml:"error,omitempty"` // why the metadata could not be read
	ZooKeeper *ZKState `json:"zookeeper,omitempty" yaml:"zookeeper,omitempty"`
}

// ZKState is the controller as recorded in ZooKeeper.
type ZKState struct {
	BrokerID       int32     `json:"broker_id" yaml:"broker_id"` // -1 when /controller does not exist (an election is under way)
	ZNodeVersion   int       `json:"znode_version" yaml:"znode_version"`
	Timestamp      time.Time `json:"timestamp" yaml:"timestamp"`
	Session        string    `json:"session" yaml:"session"` // the ephemeral owner of /controller
	Epoch          int32     `json:"epoch" yaml:"epoch"`
	EpochZkVersion int32     `json:"epoch_zk_version" yaml:"epoch_zk_version"`
}

// Options are the inputs of `ktool controller`.
type Options struct {
	Factory   *cmdutil.Factory
	Output    cmdutil.OutputFlag
	Zookeeper string
}

// NewCommand returns `ktool controller` with its resign verb.
func NewCommand(f *cmdutil.Factory, runF func(context.Context, *Options) error) *cobra.Command {
	opts := &Options{Factory: f}
	cmd := &cobra.Command{
		Use:   "controller",
		Short: "Show the active controller (and its ZooKeeper znodes with --zookeeper)",
		Long: `Show the active controller: its broker id and endpoint from the cluster's
metadata. With --zookeeper also the /controller znode (the broker that won the
election, when, and the session that holds the ephemeral znode) and
/controller_epoch (bumped by every election; brokers ignore requests from
controllers with an older epoch).`,
		Example: `  ktool controller
  ktool controller --zookeeper localhost:2181 -o json
  ktool controller resign --zookeeper localhost:2181 --yes`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := opts.Output.Validate(); err != nil {
				return err
			}
			if runF != nil {
				return runF(cmd.Context(), opts)
			}
			return run(cmd.Context(), opts)
		},
	}
	cmd.Flags().StringVar(&opts.Zookeeper, "zookeeper", "", "also read /controller and /controller_epoch from this ZooKeeper host:port[/chroot] (env KTOOL_ZOOKEEPER, or the profile)")
	opts.Output.Register(cmd)
	cmd.AddCommand(NewResignCommand(f, nil))
	return cmd
}

// ReadZK reads the controller znodes.
func ReadZK(ctx context.Context, c *zk.Conn) (*ZKState, error) {
	st := &ZKState{BrokerID: -1}
	ok, _, err := c.Exists(ctx, "/controller")
	if err != nil {
		return nil, err
	}
	if ok {
		b, s, err := c.Get(ctx, "/controller")
		if err != nil {
			return nil, err
		}
		z, err := ParseControllerZNode(b)
		if err != nil {
			return nil, err
		}
		st.BrokerID, st.ZNodeVersion, st.Timestamp = z.BrokerID, z.Version, z.Timestamp
		st.Session = zk.MakeStat(s).EphemeralOwner
	}
	ok, _, err = c.Exists(ctx, "/controller_epoch")
	if err != nil {
		return nil, err
	}
	if ok {
		b, s, err := c.Get(ctx, "/controller_epoch")
		if err != nil {
			return nil, err
		}
		if st.Epoch, err = ParseControllerEpoch(b); err != nil {
			return nil, err
		}
		st.EpochZkVersion = s.Version
	}
	return st, nil
}

func run(ctx context.Context, o *Options) error {
	zkAddr := o.Zookeeper
	if zkAddr == "" {
		// KTOOL_ZOOKEEPER or the profile may name one; without, metadata alone.
		if a, err := o.Factory.Zookeeper(""); err == nil {
			zkAddr = a
		}
	}
	info := Info{ID: -1}
	mdErr := o.metadata(ctx, &info)
	if zkAddr == "" && mdErr != nil {
		return mdErr
	}
	if mdErr != nil {
		info.Error = mdErr.Error()
		fmt.Fprintf(o.Factory.IO.ErrOut, "Warning: %v\n", mdErr)
	}
	if zkAddr != "" {
		rctx, cancel := o.Factory.RequestContext(ctx)
		defer cancel()
		c, err := zk.Dial(rctx, zkAddr)
		if err != nil {
			return err
		}
		defer c.Close()
		if info.ZooKeeper, err = ReadZK(rctx, c); err != nil {
			return err
		}
	}
	w := o.Factory.IO.Out
	return o.Output.Print(w, info, func() error { return writeInfo(w, info) })
}

func (o *Options) metadata(ctx context.Context, info *Info) error {
	adm, err := o.Factory.Admin()
	if err != nil {
		return err
	}
	defer adm.Close()
	rctx, cancel := o.Factory.RequestContext(ctx)
	defer cancel()
	m, err := cmdutil.Metadata(rctx, adm)
	if err != nil {
		return o.Factory.ClusterError("reading cluster metadata", err)
	}
	info.ID, info.ClusterID = m.Controller, m.Cluster
	for _, b := range m.Brokers {
		if b.NodeID == m.Controller {
			info.Host, info.Port = b.Host, b.Port
			info.Endpoint = net.JoinHostPort(b.Host, strconv.Itoa(int(b.Port)))
		}
	}
	return nil
}

func writeInfo(w io.Writer, info Info) error {
	switch {
	case info.Error != "":
		fmt.Fprintln(w, "Controller (metadata): unknown, the cluster did not answer")
	case info.ID < 0:
		fmt.Fprintln(w, "Controller (metadata): none (an election may be under way)")
	default:
		fmt.Fprintf(w, "Controller (metadata): broker %d at %s (cluster %s)\n", info.ID, info.Endpoint, info.ClusterID)
	}
	z := info.ZooKeeper
	if z == nil {
		return nil
	}
	if z.BrokerID < 0 {
		fmt.Fprintln(w, "ZooKeeper /controller: absent (no controller; brokers are racing to create it)")
	} else {
		fmt.Fprintf(w, "ZooKeeper /controller: broker %d, elected %s, held by session %s\n",
			z.BrokerID, z.Timestamp.Format(time.RFC3339Nano), z.Session)
	}
	fmt.Fprintf(w, "ZooKeeper /controller_epoch: %d (znode version %d)\n", z.Epoch, z.EpochZkVersion)
	if info.Error == "" && z.BrokerID >= 0 && info.ID >= 0 && z.BrokerID != info.ID {
		fmt.Fprintf(w, "Note: the metadata names broker %d but ZooKeeper names broker %d; the metadata lags an election.\n", info.ID, z.BrokerID)
	}
	return nil
}
