package zk

import (
	"context"

	"github.com/spf13/cobra"

	"github.com/ktoolhq/ktool/tools/cmdutil"
)

// GetOptions are the inputs of `ktool zk get`.
type GetOptions struct {
	Factory *cmdutil.Factory
	Dial    Dialer
	Output  cmdutil.OutputFlag
	Path    string
}

// NewGetCommand returns `ktool zk get`.
func NewGetCommand(f *cmdutil.Factory, dial Dialer, runF func(context.Context, *GetOptions) error) *cobra.Command {
	opts := &GetOptions{Factory: f, Dial: dial}
	cmd := &cobra.Command{
		Use:   "get PATH",
		Short: "Print a znode's data (JSON pretty-printed) and stat",
		Example: `  ktool zk get /controller --zookeeper localhost:2181
  ktool zk get /brokers/topics/orders/partitions/0/state --zookeeper zk1:2181/kafka`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			p, err := pathArg(args)
			if err != nil {
				return err
			}
			opts.Path = p
			if err := opts.Output.Validate(); err != nil {
				return err
			}
			if runF != nil {
				return runF(cmd.Context(), opts)
			}
			return runGet(cmd.Context(), opts)
		},
	}
	opts.Output.Register(cmd)
	return cmd
}

// ReadNode reads one znode.
func ReadNode(ctx context.Context, c *Conn, p string) (Node, error) {
	b, st, err := c.Get(ctx, p)
	if err != nil {
		return Node{}, err
	}
	return Node{Path: p, Data: DecodeData(b), Stat: MakeStat(st)}, nil
}

func runGet(ctx context.Context, o *GetOptions) error {
	c, err := o.Dial(ctx)
	if err != nil {
		return err
	}
	defer c.Close()
	rctx, cancel := o.Factory.RequestContext(ctx)
	defer cancel()
	n, err := ReadNode(rctx, c, o.Path)
	if err != nil {
		return err
	}
	w := o.Factory.IO.Out
	return o.Output.Print(w, n, func() error { return writeNode(w, n) })
}
