package zk

import (
	"context"
	"fmt"
	"io"
	"path"

	"github.com/spf13/cobra"

	"github.com/ktoolhq/ktool/tools/cmdutil"
)

// TreeNode is one znode of `ktool zk tree`.
type TreeNode struct {
	Name       string     `json:"name" yaml:"name"`
	Path       string     `json:"path" yaml:"path"`
	Ephemeral  bool       `json:"ephemeral" yaml:"ephemeral"`
	DataLength int32      `json:"data_length" yaml:"data_length"`
	Data       any        `json:"data,omitempty" yaml:"data,omitempty"`
	Children   []TreeNode `json:"children" yaml:"children"`
	Truncated  bool       `json:"truncated,omitempty" yaml:"truncated,omitempty"`
}

// TreeOptions are the inputs of `ktool zk tree`.
type TreeOptions struct {
	Factory  *cmdutil.Factory
	Dial     Dialer
	Output   cmdutil.OutputFlag
	Path     string
	Depth    int
	WithData bool
}

// NewTreeCommand returns `ktool zk tree`.
func NewTreeCommand(f *cmdutil.Factory, dial Dialer, runF func(context.Context, *TreeOptions) error) *cobra.Command {
	opts := &TreeOptions{Factory: f, Dial: dial}
	cmd := &cobra.Command{
		Use:   "tree [PATH]",
		Short: "Show the znode tree under PATH (ephemeral znodes marked)",
		Example: `  ktool zk tree /brokers --zookeeper localhost:2181
  ktool zk tree / --depth 2 --zookeeper localhost:2181/kafka`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			p, err := pathArg(args)
			if err != nil {
				return err
			}
			opts.Path = p
			if err := opts.Output.Validate(); err != nil {
				return err
			}
			if opts.Depth < 0 {
				return cmdutil.Usagef("--depth must be >= 0 (0: no limit)")
			}
			if runF != nil {
				return runF(cmd.Context(), opts)
			}
			return runTree(cmd.Context(), opts)
		},
	}
	cmd.Flags().IntVar(&opts.Depth, "depth", 0, "how many levels below PATH to show (0: all)")
	cmd.Flags().BoolVar(&opts.WithData, "data", false, "show each znode's data")
	opts.Output.Register(cmd)
	return cmd
}

// Walk reads the tree under p, down to depth levels (0: all).
func Walk(ctx context.Context, c *Conn, p string, depth int, withData bool) (TreeNode, error) {
	return walk(ctx, c, p, depth, withData, 0)
}

func walk(ctx context.Context, c *Conn, p string, depth int, withData bool, level int) (TreeNode, error) {
	b, st, err := c.Get(ctx, p)
	if err != nil {
		return TreeNode{}, err
	}
	s := MakeStat(st)
	n := TreeNode{Name: path.Base(p), Path: p, Ephemeral: s.Ephemeral(), DataLength: s.DataLength, Children: []TreeNode{}}
	if withData {
		n.Data = DecodeData(b)
	}
	if s.NumChildren == 0 {
		return n, nil
	}
	if depth > 0 && level >= depth {
		n.Truncated = true
		return n, nil
	}
	names, _, err := c.Children(ctx, p)
	if err != nil {
		return TreeNode{}, err
	}
	for _, name := range names {
		child, err := walk(ctx, c, path.Join(p, name), depth, withData, level+1)
		if err != nil {
			if ctx.Err() != nil {
				return TreeNode{}, err
			}
			continue // deleted while walking
		}
		n.Children = append(n.Children, child)
	}
	return n, nil
}

func runTree(ctx context.Context, o *TreeOptions) error {
	c, err := o.Dial(ctx)
	if err != nil {
		return err
	}
	defer c.Close()
	rctx, cancel := o.Factory.RequestContext(ctx)
	defer cancel()
	root, err := Walk(rctx, c, o.Path, o.Depth, o.WithData)
	if err != nil {
		return err
	}
	w := o.Factory.IO.Out
	return o.Output.Print(w, root, func() error { return writeTree(w, root) })
}

func writeTree(w io.Writer, root TreeNode) error {
	fmt.Fprintln(w, root.Path+describeNode(root))
	return writeChildren(w, root.Children, "")
}

func writeChildren(w io.Writer, children []TreeNode, indent string) error {
	for i, c := range children {
		branch, next := "├── ", "│   "
		if i == len(children)-1 {
			branch, next = "└── ", "    "
		}
		if _, err := fmt.Fprintln(w, indent+branch+c.Name+describeNode(c)); err != nil {
			return err
		}
		if err := writeChildren(w, c.Children, indent+next); err != nil {
			return err
		}
	}
	return nil
}

func describeNode(n TreeNode) string {
	s := ""
	if n.Ephemeral {
		s += " [ephemeral]"
	}
	if n.Truncated {
		s += " …"
	}
	if n.Data != nil {
		switch d := n.Data.(type) {
		case string:
			s += " = " + d
		default:
			b, _ := jsonCompact(d)
			s += " = " + b
		}
	}
	return s
}
