package topic

import (
	"context"
	"errors"
	"fmt"

	"github.com/spf13/cobra"
	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/ktoolhq/ktool/tools/cmdutil"
)

// DeleteOptions are the inputs of `ktool topic delete`.
type DeleteOptions struct {
	Factory  *cmdutil.Factory
	Topics   []string
	IfExists bool
}

// NewDeleteCommand returns `ktool topic delete`.
func NewDeleteCommand(f *cmdutil.Factory, runF func(context.Context, *DeleteOptions) error) *cobra.Command {
	opts := &DeleteOptions{Factory: f}
	cmd := &cobra.Command{
		Use:               "delete TOPIC...",
		ValidArgsFunction: cmdutil.CompleteTopics(f),
		Short:             "Delete topics and all their data",
		Args:              cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.Topics = args
			if runF != nil {
				return runF(cmd.Context(), opts)
			}
			return runDelete(cmd.Context(), opts)
		},
	}
	cmd.Flags().BoolVar(&opts.IfExists, "if-exists", false, "succeed quietly for topics that do not exist")
	return cmd
}

func runDelete(ctx context.Context, o *DeleteOptions) error {
	adm, err := o.Factory.Admin()
	if err != nil {
		return err
	}
	defer adm.Close()
	rctx, cancel := o.Factory.RequestContext(ctx)
	defer cancel()
	resps, err := adm.DeleteTopics(rctx, o.Topics...)
	if err != nil {
		return o.Factory.ClusterError("deleting topics", err)
	}
	var errs []error
	for _, t := range o.Topics {
		r, ok := resps[t]
		switch {
		case !ok:
			errs = append(errs, fmt.Errorf("deleting topic %q: the cluster did not answer for it", t))
		case r.Err == nil:
			fmt.Fprintf(o.Factory.IO.Out, "Deleted topic %s.\n", t)
		case errors.Is(r.Err, kerr.UnknownTopicOrPartition) && o.IfExists:
		default:
			errs = append(errs, fmt.Errorf("deleting topic %q: %w", t, r.Err))
		}
	}
	return errors.Join(errs...)
}
