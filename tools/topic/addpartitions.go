package topic

import (
	"context"
	"errors"
	"fmt"

	"github.com/spf13/cobra"
	"github.com/twmb/franz-go/pkg/kadm"

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
	var errs []error
	topics := o.Topics
	if o.Total > 0 {
		topics, errs = o.checkTotal(rctx, adm)
		if len(topics) == 0 {
			return errors.Join(errs...)
		}
	}
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
	resps, err := call(rctx, n, topics...)
	if err != nil {
		return o.Factory.ClusterError("adding partitions", err)
	}
	for _, t := range topics {
		r, ok := resps[t]
		switch {
		case !ok:
			errs = append(errs, fmt.Errorf("adding partitions to %q: the cluster did not answer for it", t))
		case r.Err != nil:
			errs = append(errs, fmt.Errorf("adding partitions to %q: %w", t, cmdutil.WithMessage(r.Err, r.ErrMessage)))
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

// checkTotal keeps the topics that have fewer partitions than --partitions
// asks for and explains the others: Kafka never removes partitions, and its
// answer to a smaller count (INVALID_PARTITIONS) does not say so plainly.
func (o *AddPartitionsOptions) checkTotal(ctx context.Context, adm *kadm.Client) ([]string, []error) {
	td, err := adm.ListTopics(ctx, o.Topics...)
	if err != nil {
		// The request itself reports what is wrong with the cluster or the topics.
		return o.Topics, nil
	}
	var keep []string
	var errs []error
	for _, t := range o.Topics {
		d, ok := td[t]
		if !ok || d.Err != nil {
			keep = append(keep, t)
			continue
		}
		switch have := len(d.Partitions); {
		case have == o.Total:
			errs = append(errs, fmt.Errorf("topic %q already has %d partitions", t, have))
		case have > o.Total:
			errs = append(errs, fmt.Errorf("topic %q has %d partitions and partitions can never be removed: --partitions must be more than %d", t, have, have))
		default:
			keep = append(keep, t)
		}
	}
	return keep, errs
}
