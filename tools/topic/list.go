package topic

import (
	"context"
	"io"
	"strconv"

	"github.com/spf13/cobra"

	"github.com/ktoolhq/ktool/tools/cmdutil"
)

// Summary is one row of `ktool topic list`.
type Summary struct {
	Name              string `json:"name" yaml:"name"`
	ID                string `json:"id" yaml:"id"`
	Partitions        int    `json:"partitions" yaml:"partitions"`
	ReplicationFactor int    `json:"replication_factor" yaml:"replication_factor"`
	Internal          bool   `json:"internal" yaml:"internal"`
}

// ListOptions are the inputs of `ktool topic list`.
type ListOptions struct {
	Factory  *cmdutil.Factory
	Output   cmdutil.OutputFlag
	Internal bool
}

// NewListCommand returns `ktool topic list`.
func NewListCommand(f *cmdutil.Factory, runF func(context.Context, *ListOptions) error) *cobra.Command {
	opts := &ListOptions{Factory: f}
	cmd := &cobra.Command{
		Use:     "list",
		Aliases: []string{"ls"},
		Short:   "List topics with their partition count and replication factor",
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := opts.Output.Validate(); err != nil {
				return err
			}
			if runF != nil {
				return runF(cmd.Context(), opts)
			}
			return runList(cmd.Context(), opts)
		},
	}
	cmd.Flags().BoolVar(&opts.Internal, "internal", false, "include internal topics such as __consumer_offsets")
	opts.Output.Register(cmd)
	return cmd
}

func runList(ctx context.Context, o *ListOptions) error {
	adm, err := o.Factory.Admin()
	if err != nil {
		return err
	}
	defer adm.Close()
	rctx, cancel := o.Factory.RequestContext(ctx)
	defer cancel()
	m, err := cmdutil.Metadata(rctx, adm)
	if err != nil {
		return o.Factory.ClusterError("listing topics", err)
	}
	rows := []Summary{}
	for _, td := range m.Topics.Sorted() {
		if td.Err != nil || (td.IsInternal && !o.Internal) {
			continue
		}
		rows = append(rows, Summary{
			Name: td.Topic, ID: topicID(td.ID), Partitions: len(td.Partitions),
			ReplicationFactor: td.Partitions.NumReplicas(), Internal: td.IsInternal,
		})
	}
	w := o.Factory.IO.Out
	return o.Output.Print(w, rows, func() error { return writeSummaries(w, rows) })
}

func writeSummaries(w io.Writer, rows []Summary) error {
	tbl := cmdutil.NewTable(w, "Name", "Partitions", "Replicas", "Internal")
	for _, r := range rows {
		if err := tbl.Append([]string{r.Name, strconv.Itoa(r.Partitions), strconv.Itoa(r.ReplicationFactor), yesNo(r.Internal)}); err != nil {
			return err
		}
	}
	return tbl.Render()
}
