package reassign

import (
	"context"
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/ktoolhq/ktool/tools/cmdutil"
)

// BalanceOptions are the inputs of `ktool cluster balance`.
type BalanceOptions struct {
	Factory  *cmdutil.Factory
	Output   cmdutil.OutputFlag
	Topics   []string
	DryRun   bool
	Throttle int64
	Wait     bool
	Interval time.Duration
}

// Balanced is what `cluster balance` shows.
type Balanced struct {
	Before []Load `json:"before" yaml:"before"`
	After  []Load `json:"after" yaml:"after"`
	Plan   Plan   `json:"plan" yaml:"plan"`
	Moves  int    `json:"replica_moves" yaml:"replica_moves"`
}

// NewBalanceCommand returns `ktool cluster balance`.
func NewBalanceCommand(f *cmdutil.Factory, runF func(context.Context, *BalanceOptions) error) *cobra.Command {
	opts := &BalanceOptions{Factory: f}
	var throttle string
	cmd := &cobra.Command{
		Use:   "balance [--dry-run]",
		Short: "Show replica and leader skew per broker, and even it out",
		Long: `Balance shows how many replicas and preferred leaders each broker holds and
how far that is from an even share (skew), and the plan that evens it out over
every live broker: rack-aware, moving as few replicas as it can. Without
--dry-run it executes the plan (--throttle, --wait as partition move).`,
		Example: `  ktool cluster balance --dry-run
  ktool cluster balance --topics orders --throttle 20M --wait`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := opts.Output.Validate(); err != nil {
				return err
			}
			if throttle != "" {
				r, err := ParseRate(throttle)
				if err != nil {
					return cmdutil.UsageError(err)
				}
				opts.Throttle = r
			}
			if runF != nil {
				return runF(cmd.Context(), opts)
			}
			return RunBalance(cmd.Context(), opts)
		},
	}
	fl := cmd.Flags()
	fl.BoolVar(&opts.DryRun, "dry-run", false, "show the skew and the plan; move nothing")
	fl.StringSliceVar(&opts.Topics, "topics", nil, "balance only these topics (default: every topic)")
	fl.StringVar(&throttle, "throttle", "", "replication throttle in bytes/s while replicas move")
	fl.BoolVar(&opts.Wait, "wait", false, "follow the moves until they complete")
	fl.DurationVar(&opts.Interval, "interval", 2*time.Second, "how often --wait looks at the progress")
	_ = cmd.RegisterFlagCompletionFunc("topics", cmdutil.CompleteTopics(f))
	opts.Output.Register(cmd)
	return cmd
}

// RunBalance is `ktool cluster balance`.
func RunBalance(ctx context.Context, o *BalanceOptions) error {
	adm, err := o.Factory.Admin()
	if err != nil {
		return err
	}
	defer adm.Close()
	rctx, cancel := o.Factory.RequestContext(ctx)
	st, err := ReadState(rctx, adm, o.Topics...)
	cancel()
	if err != nil {
		return o.Factory.ClusterError("reading the cluster", err)
	}
	next, err := Generate(st.Current, st.Brokers, GenerateOptions{Rebalance: true})
	if err != nil {
		return err
	}
	b := Balanced{Before: Loads(st.Current, st.Brokers), After: Loads(next, st.Brokers),
		Plan: Changes(st.Current, next).Plan(), Moves: Moves(st.Current, next)}
	w := o.Factory.IO.Out
	if o.DryRun || len(b.Plan.Partitions) == 0 {
		return o.Output.Print(w, b, func() error {
			fmt.Fprintln(w, "Replicas and preferred leaders per broker now:")
			if err := writeLoads(w, b.Before); err != nil {
				return err
			}
			if len(b.Plan.Partitions) == 0 {
				_, err := fmt.Fprintln(w, "Balanced: nothing to move.")
				return err
			}
			fmt.Fprintf(w, "\nAfter the plan (%d partitions change, %d replicas move):\n", len(b.Plan.Partitions), b.Moves)
			if err := writeLoads(w, b.After); err != nil {
				return err
			}
			if o.DryRun {
				fmt.Fprintln(w, "\nDry run: nothing moved. The plan (for partition move --execute --plan):")
				return b.Plan.Write(w)
			}
			return nil
		})
	}
	return Execute(ctx, o.Factory, adm, b.Plan, o.Throttle, o.Wait, o.Interval, &o.Output)
}
