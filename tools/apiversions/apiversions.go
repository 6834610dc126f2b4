package apiversions

import (
	"context"
	"fmt"
	"io"
	"net"
	"strconv"

	"github.com/spf13/cobra"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/ktoolhq/ktool/tools/cmdutil"
)

// API is one API key a broker serves.
type API struct {
	Key  int16  `json:"key" yaml:"key"`
	Name string `json:"name" yaml:"name"`
	Min  int16  `json:"min_version" yaml:"min_version"`
	Max  int16  `json:"max_version" yaml:"max_version"`
	// Usable is the highest version both the broker and ktool speak, -1 when
	// they share none (ktool does not know the key, or the ranges miss).
	Usable int16 `json:"usable" yaml:"usable"`
}

// Broker is one broker's answer.
type Broker struct {
	ID       int32  `json:"id" yaml:"id"`
	Endpoint string `json:"endpoint" yaml:"endpoint"`
	APIs     []API  `json:"apis" yaml:"apis"`
	Error    string `json:"error,omitempty" yaml:"error,omitempty"`
}

// Options are the inputs of `ktool api-versions`.
type Options struct {
	Factory *cmdutil.Factory
	Output  cmdutil.OutputFlag
	Brokers []int32
}

// NewCommand returns `ktool api-versions`.
func NewCommand(f *cmdutil.Factory, runF func(context.Context, *Options) error) *cobra.Command {
	opts := &Options{Factory: f}
	cmd := &cobra.Command{
		Use:   "api-versions",
		Short: "Show the API versions every broker supports",
		Long: `For every broker, each Kafka API it serves with its lowest and highest
version and the version ktool uses with it ("usable"), as
kafka-broker-api-versions.sh prints them.`,
		Example: `  ktool api-versions
  ktool api-versions --broker 1 -o json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := opts.Output.Validate(); err != nil {
				return err
			}
			if runF != nil {
				return runF(cmd.Context(), opts)
			}
			return Run(cmd.Context(), opts)
		},
	}
	cmd.Flags().Int32SliceVar(&opts.Brokers, "broker", nil, "only these broker ids")
	opts.Output.Register(cmd)
	return cmd
}

// Collect turns kadm's answers into rows, keeping the brokers in only (all when empty).
func Collect(m kadm.Metadata, vs kadm.BrokersApiVersions, only []int32) []Broker {
	var out []Broker
	for _, v := range vs.Sorted() {
		if len(only) > 0 && !contains(only, v.NodeID) {
			continue
		}
		b := Broker{ID: v.NodeID}
		for _, d := range m.Brokers {
			if d.NodeID == v.NodeID {
				b.Endpoint = net.JoinHostPort(d.Host, strconv.Itoa(int(d.Port)))
			}
		}
		if v.Err != nil {
			b.Error = v.Err.Error()
			out = append(out, b)
			continue
		}
		b.APIs = []API{}
		v.EachKeySorted(func(key, lo, hi int16) {
			a := API{Key: key, Name: kmsg.NameForKey(key), Min: lo, Max: hi, Usable: -1}
			if a.Name == "" {
				a.Name = "Unknown"
			}
			if req := kmsg.RequestForKey(key); req != nil {
				if u := min(hi, req.MaxVersion()); u >= lo {
					a.Usable = u
				}
			}
			b.APIs = append(b.APIs, a)
		})
		out = append(out, b)
	}
	return out
}

func contains(xs []int32, x int32) bool {
	for _, y := range xs {
		if y == x {
			return true
		}
	}
	return false
}

// Run is `ktool api-versions`.
func Run(ctx context.Context, o *Options) error {
	adm, err := o.Factory.Admin()
	if err != nil {
		return err
	}
	defer adm.Close()
	rctx, cancel := o.Factory.RequestContext(ctx)
	defer cancel()
	m, err := adm.BrokerMetadata(rctx)
	if err != nil {
		return o.Factory.ClusterError("reading the brokers", err)
	}
	for _, id := range o.Brokers {
		if !contains(m.Brokers.NodeIDs(), id) {
			return cmdutil.Usagef("no broker %d in the cluster (brokers: %s)", id, cmdutil.JoinInt32(m.Brokers.NodeIDs()))
		}
	}
	vs, err := adm.ApiVersions(rctx)
	if err != nil {
		return o.Factory.ClusterError("asking for API versions", err)
	}
	rows := Collect(m, vs, o.Brokers)
	w := o.Factory.IO.Out
	if err := o.Output.Print(w, rows, func() error { return writeText(w, rows) }); err != nil {
		return err
	}
	failed := 0
	for _, b := range rows {
		if b.Error != "" {
			failed++
		}
	}
	if failed > 0 {
		return fmt.Errorf("%d of %d brokers did not answer ApiVersions", failed, len(rows))
	}
	return nil
}

func writeText(w io.Writer, rows []Broker) error {
	for i, b := range rows {
		if i > 0 {
			fmt.Fprintln(w)
		}
		fmt.Fprintf(w, "Broker %d (%s)", b.ID, b.Endpoint)
		if b.Error != "" {
			fmt.Fprintf(w, ": %s\n", b.Error)
			continue
		}
		fmt.Fprintf(w, ": %d APIs\n", len(b.APIs))
		tbl := cmdutil.NewTable(w, "Key", "API", "Min", "Max", "Usable")
		for _, a := range b.APIs {
			usable := "-"
			if a.Usable >= 0 {
				usable = strconv.Itoa(int(a.Usable))
			}
			tbl.Append([]string{strconv.Itoa(int(a.Key)), a.Name, strconv.Itoa(int(a.Min)), strconv.Itoa(int(a.Max)), usable})
		}
		if err := tbl.Render(); err != nil {
			return err
		}
	}
	return nil
}
