package reassign

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/ktoolhq/ktool/tools/cmdutil"
)

// DecommissionOptions are the inputs of `ktool broker decommission`.
type DecommissionOptions struct {
	Factory  *cmdutil.Factory
	Output   cmdutil.OutputFlag
	Broker   int32
	Throttle int64
	DryRun   bool
	NoWait   bool
	Interval time.Duration
}

// NewDecommissionCommand returns `ktool broker decommission ID`.
func NewDecommissionCommand(f *cmdutil.Factory, runF func(context.Context, *DecommissionOptions) error) *cobra.Command {
	opts := &DecommissionOptions{Factory: f}
	var throttle string
	cmd := &cobra.Command{
		Use:               "decommission ID",
		ValidArgsFunction: cmdutil.CompleteBrokerIDs(f),
		Short:             "Move every replica off a broker, then say when it is safe to stop",
		Long: `Decommission reassigns every replica the broker holds to the other brokers
(the least loaded, in other racks where the partition's other replicas are),
moving nothing else, and waits until the broker holds no replica and leads no
partition: then it is safe to stop it. --throttle limits the replication as
partition move --execute does (removed at the end); --dry-run prints the plan;
--no-wait returns once the moves have started (run the command again to see
whether the broker is empty).`,
		Example: `  ktool broker decommission 3 --throttle 50M
  ktool broker decommission 3 --dry-run -o json`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := opts.Output.Validate(); err != nil {
				return err
			}
			id, err := strconv.ParseInt(args[0], 10, 32)
			if err != nil || id < 0 {
				return cmdutil.Usagef("%q is not a broker id", args[0])
			}
			opts.Broker = int32(id)
			if throttle != "" {
				if opts.Throttle, err = ParseRate(throttle); err != nil {
					return cmdutil.UsageError(err)
				}
			}
			if runF != nil {
				return runF(cmd.Context(), opts)
			}
			return RunDecommission(cmd.Context(), opts)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&throttle, "throttle", "", "replication throttle in bytes/s while replicas move")
	fl.BoolVar(&opts.DryRun, "dry-run", false, "print the plan and move nothing")
	fl.BoolVar(&opts.NoWait, "no-wait", false, "return once the moves have started")
	fl.DurationVar(&opts.Interval, "interval", 2*time.Second, "how often to look at the progress")
	opts.Output.Register(cmd)
	return cmd
}

// RunDecommission is `ktool broker decommission`.
func RunDecommission(ctx context.Context, o *DecommissionOptions) error {
	adm, err := o.Factory.Admin()
	if err != nil {
		return err
	}
	defer adm.Close()
	rctx, cancel := o.Factory.RequestContext(ctx)
	st, err := ReadState(rctx, adm)
	cancel()
	if err != nil {
		return o.Factory.ClusterError("reading the cluster", err)
	}
	var rest []BrokerInfo
	known := false
	for _, b := range st.Brokers {
		if b.ID == o.Broker {
			known = true
			continue
		}
		rest = append(rest, b)
	}
	held, led := 0, 0
	for t, ps := range st.Current {
		for p, rs := range ps {
			if slices.Contains(rs, o.Broker) {
				held++
			}
			if st.Leaders[t][p] == o.Broker {
				led++
			}
		}
	}
	w := o.Factory.IO.Out
	if held == 0 && led == 0 {
		if !known {
			// A stopped broker, or a mistyped id: say which brokers there are.
			ids := make([]string, len(rest))
			for i, b := range rest {
				ids[i] = fmt.Sprint(b.ID)
			}
			_, err := fmt.Fprintf(w, "Broker %d is not registered (brokers: %s) and holds no replicas: nothing to move.\n", o.Broker, strings.Join(ids, ", "))
			return err
		}
		_, err := fmt.Fprintf(w, "Broker %d holds no replicas and leads no partitions: it is safe to stop.\n", o.Broker)
		return err
	}
	next, err := Generate(st.Current, rest, GenerateOptions{})
	if err != nil {
		return err
	}
	plan := Changes(st.Current, next).Plan()
	if o.DryRun {
		g := Generated{Current: st.Current.Plan(), Proposed: plan, Moves: Moves(st.Current, next), Loads: Loads(next, rest)}
		return o.Output.Print(w, g, func() error {
			fmt.Fprintf(w, "Dry run: broker %d holds %d replicas; %d partitions would change:\n", o.Broker, held, len(plan.Partitions))
			if err := plan.Write(w); err != nil {
				return err
			}
			fmt.Fprintln(w, "\nReplicas and preferred leaders per broker afterwards:")
			return writeLoads(w, g.Loads)
		})
	}
	if len(plan.Partitions) > 0 {
		if err := Execute(ctx, o.Factory, adm, plan, o.Throttle, !o.NoWait, o.Interval, &o.Output); err != nil {
			return err
		}
	}
	if o.NoWait {
		return nil
	}
	// Replicas are gone; leadership follows the new preferred leaders once the
	// controller moves it (a reassignment elects a leader among the new replicas).
	for {
		rctx, cancel := o.Factory.RequestContext(ctx)
		st, err = ReadState(rctx, adm)
		cancel()
		if err != nil {
			return o.Factory.ClusterError("reading the cluster", err)
		}
		held, led = 0, 0
		for t, ps := range st.Current {
			for p, rs := range ps {
				if slices.Contains(rs, o.Broker) {
					held++
				}
				if st.Leaders[t][p] == o.Broker {
					led++
				}
			}
		}
		if held == 0 && led == 0 {
			_, err := fmt.Fprintf(o.Factory.IO.ErrOut, "Broker %d holds no replicas and leads no partitions: it is safe to stop.\n", o.Broker)
			return err
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(o.Interval):
		}
	}
}
