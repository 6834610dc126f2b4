package brokerinfo

import (
	"context"
	"io"
	"net"
	"sort"
	"strconv"

	"github.com/spf13/cobra"
	"github.com/twmb/franz-go/pkg/kadm"

	"github.com/ktoolhq/ktool/tools/cmdutil"
)

// Broker is one row of `ktool broker list`. A broker that some partition
// assigns replicas to but that is missing from the metadata is listed as down.
type Broker struct {
	ID         int32  `json:"id" yaml:"id"`
	Host       string `json:"host" yaml:"host"`
	Port       int32  `json:"port" yaml:"port"`
	Endpoint   string `json:"endpoint" yaml:"endpoint"`
	Rack       string `json:"rack" yaml:"rack"`
	Status     string `json:"status" yaml:"status"`
	Controller bool   `json:"controller" yaml:"controller"`
	Leaders    int    `json:"partitions_led" yaml:"partitions_led"`
	Replicas   int    `json:"replicas_hosted" yaml:"replicas_hosted"`
}

// ListOptions are the inputs of `ktool broker list`.
type ListOptions struct {
	Factory *cmdutil.Factory
	Output  cmdutil.OutputFlag
}

// NewListCommand returns `ktool broker list`, to be added under the `broker`
// parent command.
func NewListCommand(f *cmdutil.Factory, runF func(context.Context, *ListOptions) error) *cobra.Command {
	opts := &ListOptions{Factory: f}
	cmd := &cobra.Command{
		Use:     "list",
		Aliases: []string{"ls"},
		Short:   "List brokers: endpoint, rack, controller, partitions led, replicas hosted",
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
	opts.Output.Register(cmd)
	return cmd
}

// FromMetadata builds the broker rows from one Metadata response.
func FromMetadata(m kadm.Metadata) []Broker {
	byID := map[int32]*Broker{}
	for _, b := range m.Brokers {
		rack := ""
		if b.Rack != nil {
			rack = *b.Rack
		}
		byID[b.NodeID] = &Broker{
			ID: b.NodeID, Host: b.Host, Port: b.Port,
			Endpoint: net.JoinHostPort(b.Host, strconv.Itoa(int(b.Port))),
			Rack:     rack, Status: "up", Controller: b.NodeID == m.Controller,
		}
	}
	for _, td := range m.Topics {
		for _, pd := range td.Partitions {
			for _, r := range pd.Replicas {
				b, ok := byID[r]
				if !ok {
					b = &Broker{ID: r, Port: -1, Status: "down"}
					byID[r] = b
				}
				b.Replicas++
			}
			if b, ok := byID[pd.Leader]; ok && pd.Leader >= 0 {
				b.Leaders++
			}
		}
	}
	out := make([]Broker, 0, len(byID))
	for _, b := range byID {
		out = append(out, *b)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out
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
		return o.Factory.ClusterError("listing brokers", err)
	}
	rows := FromMetadata(m)
	w := o.Factory.IO.Out
	return o.Output.Print(w, rows, func() error { return writeTable(w, rows) })
}

func writeTable(w io.Writer, rows []Broker) error {
	tbl := cmdutil.NewTable(w, "ID", "Endpoint", "Rack", "Status", "Controller", "Leaders", "Replicas")
	for _, b := range rows {
		endpoint, rack, ctl := b.Endpoint, b.Rack, ""
		if endpoint == "" {
			endpoint = "-"
		}
		if rack == "" {
			rack = "-"
		}
		if b.Controller {
			ctl = "*"
		}
		if err := tbl.Append([]string{strconv.Itoa(int(b.ID)), endpoint, rack, b.Status, ctl,
			strconv.Itoa(b.Leaders), strconv.Itoa(b.Replicas)}); err != nil {
			return err
		}
	}
	return tbl.Render()
}
