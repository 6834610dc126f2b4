package group

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"
	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/ktoolhq/ktool/tools/cmdutil"
)

// Deleted is the outcome for one group of `ktool group delete`.
type Deleted struct {
	Group   string `json:"group" yaml:"group"`
	Deleted bool   `json:"deleted" yaml:"deleted"`
	Error   string `json:"error,omitempty" yaml:"error,omitempty"`
}

// DeleteOptions are the inputs of `ktool group delete`.
type DeleteOptions struct {
	Factory *cmdutil.Factory
	Output  cmdutil.OutputFlag

	Groups []string
}

// NewDeleteCommand returns `ktool group delete`.
func NewDeleteCommand(f *cmdutil.Factory, runF func(context.Context, *DeleteOptions) error) *cobra.Command {
	opts := &DeleteOptions{Factory: f}
	cmd := &cobra.Command{
		Use:               "delete GROUP...",
		ValidArgsFunction: cmdutil.CompleteGroups(f),
		Short:             "Delete consumer groups and their committed offsets",
		Long: `Delete consumer groups with their committed offsets. Only groups without
members can be deleted: stop the consumers first.`,
		Example: `  ktool group delete audit old-audit`,
		Args:    cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.Groups = args
			if err := opts.Output.Validate(); err != nil {
				return err
			}
			if runF != nil {
				return runF(cmd.Context(), opts)
			}
			return runDelete(cmd.Context(), opts)
		},
	}
	opts.Output.Register(cmd)
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
	resps, err := adm.DeleteGroups(rctx, o.Groups...)
	if err != nil {
		return o.Factory.ClusterError("deleting groups", err)
	}
	out := make([]Deleted, 0, len(o.Groups))
	var failed []string
	for _, g := range o.Groups {
		d := Deleted{Group: g}
		r, ok := resps[g]
		switch {
		case !ok:
			d.Error = "the cluster did not answer for this group"
		case r.Err != nil:
			d.Error = explainDelete(g, r.Err)
		default:
			d.Deleted = true
		}
		if !d.Deleted {
			failed = append(failed, d.Error)
		}
		out = append(out, d)
	}
	w := o.Factory.IO.Out
	if err := o.Output.Print(w, out, func() error { return writeDeleted(w, out) }); err != nil {
		return err
	}
	if len(failed) > 0 {
		return errors.New(strings.Join(failed, "; "))
	}
	return nil
}

func explainDelete(group string, err error) string {
	switch {
	case errors.Is(err, kerr.NonEmptyGroup):
		return fmt.Sprintf("group %q still has members: stop its consumers first (%v)", group, err)
	case errors.Is(err, kerr.GroupIDNotFound):
		return fmt.Sprintf("group %q does not exist", group)
	}
	return fmt.Sprintf("group %q: %v", group, err)
}

func writeDeleted(w io.Writer, ds []Deleted) error {
	for _, d := range ds {
		if d.Deleted {
			if _, err := fmt.Fprintf(w, "Deleted group %s.\n", d.Group); err != nil {
				return err
			}
		}
	}
	return nil
}
