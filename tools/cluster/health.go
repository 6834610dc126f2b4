package cluster

import (
	"context"
	"fmt"
	"io"
	"sort"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/twmb/franz-go/pkg/kadm"

	"github.com/ktoolhq/ktool/tools/cmdutil"
	"github.com/ktoolhq/ktool/tools/replicastate"
)

// Health is the report of `ktool cluster health`.
type Health struct {
	Healthy         bool           `json:"healthy" yaml:"healthy"`
	ClusterID       string         `json:"cluster_id" yaml:"cluster_id"`
	Controller      int32          `json:"controller" yaml:"controller"`
	Brokers         []int32        `json:"brokers" yaml:"brokers"`
	BrokersDown     []int32        `json:"brokers_down" yaml:"brokers_down"`
	Offline         []PartitionRef `json:"offline_partitions" yaml:"offline_partitions"`
	UnderReplicated []PartitionRef `json:"under_replicated_partitions" yaml:"under_replicated_partitions"`
}

// PartitionRef names a partition with the replica state that put it in a list.
type PartitionRef struct {
	Topic     string  `json:"topic" yaml:"topic"`
	Partition int32   `json:"partition" yaml:"partition"`
	Leader    int32   `json:"leader" yaml:"leader"`
	Replicas  []int32 `json:"replicas" yaml:"replicas"`
	ISR       []int32 `json:"isr" yaml:"isr"`
}

// HealthOptions are the inputs of `ktool cluster health`.
type HealthOptions struct {
	Factory         *cmdutil.Factory
	Output          cmdutil.OutputFlag
	Watch           bool
	ExitWhenHealthy bool
	Interval        time.Duration
}

// NewHealthCommand returns `ktool cluster health`.
func NewHealthCommand(f *cmdutil.Factory, runF func(context.Context, *HealthOptions) error) *cobra.Command {
	opts := &HealthOptions{Factory: f}
	cmd := &cobra.Command{
		Use:   "health",
		Short: "Report controller, brokers down, offline and under-replicated partitions",
		Long: `Check the cluster from its metadata. The cluster is unhealthy when it has no
controller, when a broker that hosts replicas is missing from the metadata
(down), when a partition has no live leader (offline), or when a partition's
ISR is smaller than its assigned replicas (under-replicated). Exits 3 when
unhealthy.

--watch keeps checking and prints each change; --exit-when-healthy keeps
checking until the cluster is healthy, then exits 0.`,
		Example: `  ktool cluster health
  ktool cluster health --watch
  ktool cluster health --exit-when-healthy -o json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := opts.Output.Validate(); err != nil {
				return err
			}
			if opts.Interval <= 0 {
				return cmdutil.Usagef("--interval must be positive, got %s", opts.Interval)
			}
			if runF != nil {
				return runF(cmd.Context(), opts)
			}
			return runHealth(cmd.Context(), opts)
		},
	}
	fl := cmd.Flags()
	fl.BoolVarP(&opts.Watch, "watch", "w", false, "keep checking and print the report whenever it changes")
	fl.BoolVar(&opts.ExitWhenHealthy, "exit-when-healthy", false, "keep checking until the cluster is healthy, then exit 0")
	fl.DurationVar(&opts.Interval, "interval", 2*time.Second, "how often --watch checks")
	opts.Output.Register(cmd)
	return cmd
}

// Check derives the health report from one Metadata response.
func Check(m kadm.Metadata) Health {
	live := replicastate.LiveBrokers(m)
	h := Health{
		ClusterID: m.Cluster, Controller: m.Controller,
		Brokers: []int32{}, BrokersDown: []int32{},
		Offline: []PartitionRef{}, UnderReplicated: []PartitionRef{},
	}
	for id := range live {
		h.Brokers = append(h.Brokers, id)
	}
	down := map[int32]bool{}
	for _, td := range m.Topics.Sorted() {
		if td.Err != nil {
			continue
		}
		for _, pd := range td.Partitions.Sorted() {
			p := replicastate.FromMetadata(pd, live)
			ref := PartitionRef{Topic: td.Topic, Partition: p.Partition, Leader: p.Leader, Replicas: p.Replicas, ISR: p.ISR}
			if p.Unavailable() {
				h.Offline = append(h.Offline, ref)
			}
			if p.UnderReplicated() {
				h.UnderReplicated = append(h.UnderReplicated, ref)
			}
			for _, r := range p.Replicas {
				if !live[r] {
					down[r] = true
				}
			}
		}
	}
	for id := range down {
		h.BrokersDown = append(h.BrokersDown, id)
	}
	sortIDs(h.Brokers)
	sortIDs(h.BrokersDown)
	h.Healthy = h.Controller >= 0 && live[h.Controller] && len(h.BrokersDown) == 0 &&
		len(h.Offline) == 0 && len(h.UnderReplicated) == 0
	return h
}

func sortIDs(xs []int32) { sort.Slice(xs, func(i, j int) bool { return xs[i] < xs[j] }) }

func runHealth(ctx context.Context, o *HealthOptions) error {
	adm, err := o.Factory.Admin()
	if err != nil {
		return err
	}
	defer adm.Close()
	check := func() (Health, error) {
		rctx, cancel := o.Factory.RequestContext(ctx)
		defer cancel()
		m, err := cmdutil.Metadata(rctx, adm)
		if err != nil {
			return Health{}, o.Factory.ClusterError("reading cluster metadata", err)
		}
		return Check(m), nil
	}
	w := o.Factory.IO.Out
	if !o.Watch && !o.ExitWhenHealthy {
		h, err := check()
		if err != nil {
			return err
		}
		if err := o.Output.Print(w, h, func() error { return writeReport(w, h) }); err != nil {
			return err
		}
		if !h.Healthy {
			return cmdutil.ProblemsFound()
		}
		return nil
	}
	return o.watch(ctx, check)
}

// watch prints the report whenever it changes. It ends when ctx does (exit 0
// if the last report was healthy, else 3) or, with --exit-when-healthy, at
// the first healthy report.
func (o *HealthOptions) watch(ctx context.Context, check func() (Health, error)) error {
	w, errOut := o.Factory.IO.Out, o.Factory.IO.ErrOut
	tick := time.NewTicker(o.Interval)
	defer tick.Stop()
	last, lastErr := "", ""
	healthy := false
loop:
	for {
		h, err := check()
		if ctx.Err() != nil {
			break loop
		}
		if err != nil {
			if msg := err.Error(); msg != lastErr {
				fmt.Fprintf(errOut, "%s %v\n", time.Now().Format(time.TimeOnly), err)
				lastErr = msg
			}
			healthy = false
		} else {
			lastErr = ""
			healthy = h.Healthy
			if sig := fmt.Sprintf("%+v", h); sig != last {
				if !o.Output.Structured() {
					if last != "" {
						fmt.Fprintln(w)
					}
					fmt.Fprintf(w, "%s\n", time.Now().Format(time.TimeOnly))
				}
				if err := o.Output.Print(w, h, func() error { return writeReport(w, h) }); err != nil {
					return err
				}
				last = sig
			}
			if healthy && o.ExitWhenHealthy {
				return nil
			}
		}
		select {
		case <-ctx.Done():
			break loop
		case <-tick.C:
		}
	}
	if healthy {
		return nil
	}
	return cmdutil.ProblemsFound()
}

func writeReport(w io.Writer, h Health) error {
	status := "healthy"
	if !h.Healthy {
		status = "UNHEALTHY"
	}
	controller := "none"
	if h.Controller >= 0 {
		controller = fmt.Sprint(h.Controller)
	}
	fmt.Fprintf(w, "Cluster %s is %s\n", h.ClusterID, status)
	fmt.Fprintf(w, "Controller:                  %s\n", controller)
	fmt.Fprintf(w, "Brokers:                     %s\n", idsOrNone(h.Brokers))
	fmt.Fprintf(w, "Brokers down:                %s\n", idsOrNone(h.BrokersDown))
	fmt.Fprintf(w, "Offline partitions:          %d\n", len(h.Offline))
	fmt.Fprintf(w, "Under-replicated partitions: %d\n", len(h.UnderReplicated))
	if len(h.Offline)+len(h.UnderReplicated) == 0 {
		return nil
	}
	fmt.Fprintln(w)
	tbl := cmdutil.NewTable(w, "Problem", "Topic", "Partition", "Leader", "AR", "ISR")
	add := func(problem string, refs []PartitionRef) error {
		for _, r := range refs {
			leader := "none"
			if r.Leader >= 0 {
				leader = fmt.Sprint(r.Leader)
			}
			if err := tbl.Append([]string{problem, r.Topic, fmt.Sprint(r.Partition), leader,
				idsOrNone(r.Replicas), idsOrNone(r.ISR)}); err != nil {
				return err
			}
		}
		return nil
	}
	if err := add("offline", h.Offline); err != nil {
		return err
	}
	if err := add("under-replicated", h.UnderReplicated); err != nil {
		return err
	}
	return tbl.Render()
}

func idsOrNone(xs []int32) string {
	if len(xs) == 0 {
		return "none"
	}
	return strings.ReplaceAll(cmdutil.JoinInt32(xs), ",", ", ")
}
