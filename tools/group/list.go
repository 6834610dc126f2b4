package group

import (
	"context"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/ktoolhq/ktool/tools/cmdutil"
)

// knownStates are the classic group states, as Kafka names them.
func knownStates() []string {
	return []string{"Empty", "Stable", "PreparingRebalance", "CompletingRebalance", "Dead"}
}

// Listed is one group in `ktool group list`.
type Listed struct {
	Group        string `json:"group" yaml:"group"`
	State        string `json:"state" yaml:"state"`
	ProtocolType string `json:"protocol_type" yaml:"protocol_type"`
	Protocol     string `json:"protocol" yaml:"protocol"`
	Members      int    `json:"members" yaml:"members"`
	Coordinator  int32  `json:"coordinator" yaml:"coordinator"`
}

// ListOptions are the inputs of `ktool group list`.
type ListOptions struct {
	Factory *cmdutil.Factory
	Output  cmdutil.OutputFlag

	States []string
}

// NewListCommand returns `ktool group list`.
func NewListCommand(f *cmdutil.Factory, runF func(context.Context, *ListOptions) error) *cobra.Command {
	opts := &ListOptions{Factory: f}
	cmd := &cobra.Command{
		Use:   "list",
		Short: "List consumer groups with their state, protocol type and member count",
		Example: `  ktool group list
  ktool group list --state Stable,Empty -o json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := opts.Output.Validate(); err != nil {
				return err
			}
			for i, s := range opts.States {
				canon, err := canonicalState(s)
				if err != nil {
					return err
				}
				opts.States[i] = canon
			}
			if runF != nil {
				return runF(cmd.Context(), opts)
			}
			return runList(cmd.Context(), opts)
		},
	}
	cmd.Flags().StringSliceVar(&opts.States, "state", nil, "only groups in these states: "+strings.Join(knownStates(), ", "))
	_ = cmd.RegisterFlagCompletionFunc("state", func(*cobra.Command, []string, string) ([]string, cobra.ShellCompDirective) {
		return knownStates(), cobra.ShellCompDirectiveNoFileComp
	})
	opts.Output.Register(cmd)
	return cmd
}

// canonicalState spells a state the way Kafka does, whatever its case.
func canonicalState(s string) (string, error) {
	for _, st := range knownStates() {
		if strings.EqualFold(strings.TrimSpace(s), st) {
			return st, nil
		}
	}
	return "", cmdutil.Usagef("--state %q: want one of %s", s, strings.Join(knownStates(), ", "))
}

func runList(ctx context.Context, o *ListOptions) error {
	adm, err := o.Factory.Admin()
	if err != nil {
		return err
	}
	defer adm.Close()
	rctx, cancel := o.Factory.RequestContext(ctx)
	defer cancel()
	listed, err := adm.ListGroups(rctx, o.States...)
	if err != nil {
		return o.Factory.ClusterError("listing groups", err)
	}
	out := []Listed{}
	for _, lg := range listed.Sorted() {
		// Brokers before ListGroups v4 ignore the filter.
		if len(o.States) > 0 && !slices.Contains(o.States, lg.State) {
			continue
		}
		out = append(out, Listed{Group: lg.Group, State: lg.State, ProtocolType: lg.ProtocolType, Coordinator: lg.Coordinator})
	}
	if len(out) > 0 {
		names := make([]string, len(out))
		for i, l := range out {
			names[i] = l.Group
		}
		described, err := adm.DescribeGroups(rctx, names...)
		if err != nil {
			return o.Factory.ClusterError("describing groups", err)
		}
		for i := range out {
			if d, ok := described[out[i].Group]; ok && d.Err == nil {
				out[i].Members = len(d.Members)
				out[i].Protocol = d.Protocol
				if out[i].State == "" {
					out[i].State = d.State
				}
			}
		}
	}
	w := o.Factory.IO.Out
	return o.Output.Print(w, out, func() error { return writeList(w, out) })
}

func writeList(w io.Writer, groups []Listed) error {
	if len(groups) == 0 {
		_, err := fmt.Fprintln(w, "No groups.")
		return err
	}
	t := cmdutil.NewTable(w, "Group", "State", "Protocol", "Members", "Coordinator")
	for _, g := range groups {
		row := []string{g.Group, g.State, protocol(g.ProtocolType, g.Protocol), strconv.Itoa(g.Members), strconv.Itoa(int(g.Coordinator))}
		if err := t.Append(row); err != nil {
			return err
		}
	}
	return t.Render()
}
