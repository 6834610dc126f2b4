package group

import (
	"context"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/ktoolhq/ktool/tools/cmdutil"
)

// DescribeOptions are the inputs of `ktool group describe`.
type DescribeOptions struct {
	Factory *cmdutil.Factory
	Output  cmdutil.OutputFlag

	Groups    []string
	All       bool
	Isolation string
}

// NewDescribeCommand returns `ktool group describe`. runF replaces the run
// function in tests of flag parsing.
func NewDescribeCommand(f *cmdutil.Factory, runF func(context.Context, *DescribeOptions) error) *cobra.Command {
	opts := &DescribeOptions{Factory: f}
	cmd := &cobra.Command{
		Use:               "describe GROUP... | --all",
		ValidArgsFunction: cmdutil.CompleteGroups(f),
		Short:             "Show a group's state, members, committed offsets and lag",
		Long: `Describe consumer groups: state, protocol type and assignor (protocol), the
coordinator, each member (member id, client id, host, subscription and
assigned partitions) and, per partition, the committed offset, the log end
offset and the lag between them, with the lag summed per topic and in total.

Lag is -1 where it cannot be known (the partition's leader did not answer).
A partition without a committed offset is lagging by the whole log.

--isolation read_committed measures the lag of a read_committed group (a
transactional consume-transform-produce application, Kafka Streams with
exactly-once) against each partition's last stable offset instead of the
high watermark: the records of an open transaction are not lag such a group
can consume yet.`,
		Example: `  ktool group describe audit
  ktool group describe --all -o json
  ktool group describe etl --isolation read_committed`,
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.Groups = args
			if err := opts.Output.Validate(); err != nil {
				return err
			}
			if opts.All == (len(args) > 0) {
				return cmdutil.Usagef("name groups or pass --all, not both or neither")
			}
			if opts.Isolation != ReadUncommitted && opts.Isolation != ReadCommitted {
				return cmdutil.Usagef("--isolation %q: %s or %s", opts.Isolation, ReadUncommitted, ReadCommitted)
			}
			if runF != nil {
				return runF(cmd.Context(), opts)
			}
			return runDescribe(cmd.Context(), opts)
		},
	}
	cmd.Flags().BoolVar(&opts.All, "all", false, "describe every group")
	cmd.Flags().StringVar(&opts.Isolation, "isolation", ReadUncommitted, "lag against the high watermark (read_uncommitted) or the last stable offset (read_committed)")
	_ = cmd.RegisterFlagCompletionFunc("isolation", cobra.FixedCompletions([]string{ReadUncommitted, ReadCommitted}, cobra.ShellCompDirectiveNoFileComp))
	opts.Output.Register(cmd)
	return cmd
}

func runDescribe(ctx context.Context, o *DescribeOptions) error {
	adm, err := o.Factory.Admin()
	if err != nil {
		return err
	}
	defer adm.Close()
	rctx, cancel := o.Factory.RequestContext(ctx)
	defer cancel()
	names := o.Groups
	if o.All {
		listed, err := adm.ListGroups(rctx)
		if err != nil {
			return o.Factory.ClusterError("listing groups", err)
		}
		names = listed.Groups()
	}
	groups := []Group{}
	if len(names) > 0 {
		if groups, err = LoadIsolated(rctx, adm, names, o.Isolation); err != nil {
			return o.Factory.ClusterError("describing groups", err)
		}
	}
	w := o.Factory.IO.Out
	return o.Output.Print(w, groups, func() error { return writeDescribe(w, groups) })
}

func writeDescribe(w io.Writer, groups []Group) error {
	if len(groups) == 0 {
		_, err := fmt.Fprintln(w, "No groups.")
		return err
	}
	for i, g := range groups {
		if i > 0 {
			fmt.Fprintln(w)
		}
		fmt.Fprintf(w, "Group: %s  State: %s  Protocol: %s  Coordinator: %d  Members: %d\n",
			g.Group, g.State, protocol(g.ProtocolType, g.Protocol), g.Coordinator, len(g.Members))
		if len(g.Members) > 0 {
			fmt.Fprintln(w)
			t := cmdutil.NewTable(w, "Member", "Client", "Host", "Assigned")
			for _, m := range g.Members {
				if err := t.Append([]string{m.MemberID, m.ClientID, m.Host, assigned(m.Assigned)}); err != nil {
					return err
				}
			}
			if err := t.Render(); err != nil {
				return err
			}
		}
		if len(g.Offsets) > 0 {
			fmt.Fprintln(w)
			end := "Log end"
			if g.Isolation == ReadCommitted {
				end = "Last stable"
			}
			t := cmdutil.NewTable(w, "Topic", "Partition", "Committed", end, "Lag", "Member")
			for _, o := range g.Offsets {
				member := o.MemberID
				if member == "" {
					member = "-"
				}
				row := []string{o.Topic, strconv.Itoa(int(o.Partition)), offset(o.Committed), offset(o.LogEnd), offset(o.Lag), member}
				if err := t.Append(row); err != nil {
					return err
				}
			}
			if err := t.Render(); err != nil {
				return err
			}
			for _, o := range g.Offsets {
				if o.Error != "" {
					fmt.Fprintf(w, "%s-%d: %s\n", o.Topic, o.Partition, o.Error)
				}
			}
		}
		if len(g.TopicLag) > 0 {
			per := make([]string, len(g.TopicLag))
			for j, tl := range g.TopicLag {
				per[j] = fmt.Sprintf("%s %d", tl.Topic, tl.Lag)
			}
			fmt.Fprintf(w, "\nLag by topic: %s  Total lag: %d\n", strings.Join(per, ", "), g.TotalLag)
		}
	}
	return nil
}

func protocol(typ, proto string) string {
	switch {
	case typ == "" && proto == "":
		return "-"
	case proto == "":
		return typ
	}
	return typ + "/" + proto
}

func assigned(tps []TopicPartitions) string {
	if len(tps) == 0 {
		return "-"
	}
	parts := make([]string, len(tps))
	for i, tp := range tps {
		parts[i] = tp.Topic + ":" + cmdutil.JoinInt32(tp.Partitions)
	}
	return strings.Join(parts, " ")
}

func offset(o int64) string {
	if o < 0 {
		return "-"
	}
	return strconv.FormatInt(o, 10)
}
