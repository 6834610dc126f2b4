package topic

import (
	"context"
	"errors"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/ktoolhq/ktool/tools/cmdutil"
)

// AddPartitionsOptions are the inputs of `ktool topic add-partitions`.
type AddPartitionsOptions struct {
	Factory      *cmdutil.Factory
	Topics       []string
	Total        int
	Add          int
	ValidateOnly bool
}

// NewAddPartitionsCommand returns `ktool topic add-partitions`.
func NewAddPartitionsCommand(f *cmdutil.Factory, runF func(context.Context, *AddPartitionsOptions) error) *cobra.Command {
	opts := &AddPartitionsOptions{Factory: f}
	cmd := &cobra.Command{
		Use:               "add-partitions TOPIC... (--partitions TOTAL | --add N)",
		ValidArgsFunction: cmdutil.CompleteTopics(f),
		Short:             "Add partitions to topics (partitions can never be removed)",
		Long: `Raise a topic's partition count, either to a total (--partitions, as
kafka-topics.sh --alter --partitions) or by a number (--add). Keys that hashed
to one partition may hash to another afterwards.`,
		Example: `  ktool topic add-partitions orders --partitions 12
  ktool topic add-partitions orders --add 3`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.Topics = args
			if (opts.Total > 0) == (opts.Add > 0) {
				return cmdutil.Usagef("pass exactly one of --partitions TOTAL or --add N (a positive number)")
			}
			if runF != nil {
				return runF(cmd.Context(), opts)
			}
			return runAddPartitions(cmd.Context(), opts)
		},
	}
	fl := cmd.Flags()
	fl.IntVarP(&opts.Total, "partitions", "p", 0, "the new total number of partitions")
	fl.IntVar(&opts.Add, "add", 0, "how many partitions to add")
	fl.BoolVar(&opts.ValidateOnly, "validate-only", false, "ask the cluster to validate without changing anything")
	return cmd
}

func runAddPartitions(ctx context.Context, o *AddPartitionsOptions) error {
	adm, err := o.Factory.Admin()
	if err != nil {
		return err
	}
	defer adm.Close()
	rctx, cancel := o.Factory.RequestContext(ctx)
	defer cancel()
	call := adm.CreatePartitions
	n := o.Add
	switch {
	case o.Total > 0 && o.ValidateOnly:
		call, n = adm.ValidateUpdatePartitions, o.Total
	case o.Total > 0:
		call, n = adm.UpdatePartitions, o.Total
	case o.ValidateOnly:
		call = adm.ValidateCreatePartitions
	}
	resps, err := call(rctx, n, o.Topics...)
	if err != nil {
		return o.Factory.ClusterError("adding partitions", err)
	}
	var errs []error
	for _, t := range o.Topics {
		r, ok := resps[t]
		switch {
		case !ok:
			errs = append(errs, fmt.Errorf("adding partitions to %q: the cluster did not answer for it", t))
		case r.Err != nil:
			msg := ""
			if r.ErrMessage != "" {
				msg = ": " + r.ErrMessage
			}
			errs = append(errs, fmt.Errorf("adding partitions to %q: %w%s", t, r.Err, msg))
		case o.ValidateOnly:
			fmt.Fprintf(o.Factory.IO.Out, "Validated (not applied) new partitions for topic %s.\n", t)
		case o.Total > 0:
			fmt.Fprintf(o.Factory.IO.Out, "Topic %s now has %d partitions.\n", t, o.Total)
		default:
			fmt.Fprintf(o.Factory.IO.Out, "Added %d partitions to topic %s.\n", o.Add, t)
		}
	}
	return errors.Join(errs...)
}
