package zk

import (
	"context"
	"fmt"
	"io"
	"path"
	"strconv"
	"time"

	"github.com/spf13/cobra"

	"github.com/ktoolhq/ktool/tools/cmdutil"
)

// Child is one entry of `ktool zk ls`.
type Child struct {
	Name string `json:"name" yaml:"name"`
	Path string `json:"path" yaml:"path"`
	Stat Stat   `json:"stat" yaml:"stat"`
}

// Listing is what `ktool zk ls` prints.
type Listing struct {
	Path     string  `json:"path" yaml:"path"`
	Children []Child `json:"children" yaml:"children"`
}

// LsOptions are the inputs of `ktool zk ls`.
type LsOptions struct {
	Factory *cmdutil.Factory
	Dial    Dialer
	Output  cmdutil.OutputFlag
	Path    string
	Long    bool
}

// NewLsCommand returns `ktool zk ls`.
func NewLsCommand(f *cmdutil.Factory, dial Dialer, runF func(context.Context, *LsOptions) error) *cobra.Command {
	opts := &LsOptions{Factory: f, Dial: dial}
	cmd := &cobra.Command{
		Use:     "ls [PATH]",
		Short:   "List a znode's children (-l: with version, owner, mtime, sizes)",
		Example: `  ktool zk ls /brokers/ids --zookeeper localhost:2181 -l`,
		Args:    cobra.MaximumNArgs(1),
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
			return runLs(cmd.Context(), opts)
		},
	}
	cmd.Flags().BoolVarP(&opts.Long, "long", "l", false, "show each child's stat")
	opts.Output.Register(cmd)
	return cmd
}

func runLs(ctx context.Context, o *LsOptions) error {
	c, err := o.Dial(ctx)
	if err != nil {
		return err
	}
	defer c.Close()
	rctx, cancel := o.Factory.RequestContext(ctx)
	defer cancel()
	names, _, err := c.Children(rctx, o.Path)
	if err != nil {
		return err
	}
	l := Listing{Path: o.Path, Children: []Child{}}
	for _, n := range names {
		p := path.Join(o.Path, n)
		ok, st, err := c.Exists(rctx, p)
		if err != nil {
			return err
		}
		if !ok { // deleted between the listing and now
			continue
		}
		l.Children = append(l.Children, Child{Name: n, Path: p, Stat: MakeStat(st)})
	}
	w := o.Factory.IO.Out
	return o.Output.Print(w, l, func() error { return writeListing(w, l, o.Long) })
}

func writeListing(w io.Writer, l Listing, long bool) error {
	if !long {
		for _, c := range l.Children {
			if _, err := fmt.Fprintln(w, c.Name); err != nil {
				return err
			}
		}
		return nil
	}
	tbl := cmdutil.NewTable(w, "Name", "Version", "Ephemeral owner", "Modified", "Bytes", "Children")
	for _, c := range l.Children {
		owner := "-"
		if c.Stat.Ephemeral() {
			owner = c.Stat.EphemeralOwner
		}
		if err := tbl.Append([]string{c.Name, strconv.Itoa(int(c.Stat.Version)), owner,
			c.Stat.Mtime.Format(time.DateTime), strconv.Itoa(int(c.Stat.DataLength)), strconv.Itoa(int(c.Stat.NumChildren))}); err != nil {
			return err
		}
	}
	return tbl.Render()
}
