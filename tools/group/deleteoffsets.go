package group

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/spf13/cobra"
	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/ktoolhq/ktool/tools/cmdutil"
)

// DeletedOffset is the outcome for one partition of `ktool group delete-offsets`.
type DeletedOffset struct {
	Topic     string `json:"topic" yaml:"topic"`
	Partition int32  `json:"partition" yaml:"partition"`
	Deleted   bool   `json:"deleted" yaml:"deleted"`
	Error     string `json:"error,omitempty" yaml:"error,omitempty"`
}

// DeleteOffsetsOptions are the inputs of `ktool group delete-offsets`.
type DeleteOffsetsOptions struct {
	Factory *cmdutil.Factory
	Output  cmdutil.OutputFlag

	Group  string
	Topics []string
}

// NewDeleteOffsetsCommand returns `ktool group delete-offsets`.
func NewDeleteOffsetsCommand(f *cmdutil.Factory, runF func(context.Context, *DeleteOffsetsOptions) error) *cobra.Command {
	opts := &DeleteOffsetsOptions{Factory: f}
	cmd := &cobra.Command{
		Use:               "delete-offsets GROUP --topic TOPIC[:PARTITION,...]...",
		ValidArgsFunction: cmdutil.CompleteFirstArg(cmdutil.CompleteGroups(f)),
		Short:             "Delete a group's committed offsets for some topics or partitions",
		Long: `Delete the committed offsets of GROUP for whole topics or some partitions.
The cluster refuses it for topics the group's members are subscribed to.`,
		Example: `  ktool group delete-offsets audit --topic orders
  ktool group delete-offsets audit --topic orders:0,1 --topic payments`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.Group = args[0]
			if err := opts.Output.Validate(); err != nil {
				return err
			}
			if len(opts.Topics) == 0 {
				return cmdutil.Usagef("name the offsets to delete with --topic TOPIC[:PARTITION,...]")
			}
			if runF != nil {
				return runF(cmd.Context(), opts)
			}
			return runDeleteOffsets(cmd.Context(), opts)
		},
	}
	cmd.Flags().StringArrayVarP(&opts.Topics, "topic", "t", nil, "topic, or topic:partition,partition,... (repeatable)")
	opts.Output.Register(cmd)
	return cmd
}

func runDeleteOffsets(ctx context.Context, o *DeleteOffsetsOptions) error {
	specs, err := parseTopicSpecs(o.Topics)
	if err != nil {
		return err
	}
	adm, err := o.Factory.Admin()
	if err != nil {
		return err
	}
	defer adm.Close()
	rctx, cancel := o.Factory.RequestContext(ctx)
	defer cancel()
	set, err := resolveTopics(rctx, o.Factory, adm, specs)
	if err != nil {
		return err
	}
	resps, err := adm.DeleteOffsets(rctx, o.Group, set)
	switch {
	case errors.Is(err, kerr.GroupIDNotFound):
		return errNoGroup(o.Group)
	case err != nil:
		return o.Factory.ClusterError("deleting offsets of group "+o.Group, err)
	}
	out := []DeletedOffset{}
	var failed []string
	for _, tp := range set.Sorted() {
		for _, p := range tp.Partitions {
			d := DeletedOffset{Topic: tp.Topic, Partition: p}
			perr, ok := resps.Lookup(tp.Topic, p)
			switch {
			case !ok:
				d.Error = "the cluster did not answer for this partition"
			case errors.Is(perr, kerr.GroupSubscribedToTopic):
				d.Error = fmt.Sprintf("members of group %s consume %s: stop them first (%v)", o.Group, tp.Topic, perr)
			case perr != nil:
				d.Error = perr.Error()
			default:
				d.Deleted = true
			}
			if !d.Deleted {
				failed = append(failed, fmt.Sprintf("%s-%d: %s", d.Topic, d.Partition, d.Error))
			}
			out = append(out, d)
		}
	}
	w := o.Factory.IO.Out
	if err := o.Output.Print(w, out, func() error { return writeDeletedOffsets(w, o.Group, out) }); err != nil {
		return err
	}
	if len(failed) > 0 {
		return fmt.Errorf("some offsets of group %s were not deleted: %s", o.Group, strings.Join(failed, "; "))
	}
	return nil
}

func writeDeletedOffsets(w io.Writer, group string, ds []DeletedOffset) error {
	t := cmdutil.NewTable(w, "Topic", "Partition", "Deleted")
	for _, d := range ds {
		status := "yes"
		if !d.Deleted {
			status = "no"
		}
		if err := t.Append([]string{d.Topic, strconv.Itoa(int(d.Partition)), status}); err != nil {
			return err
		}
	}
	if _, err := fmt.Fprintf(w, "Group %s:\n", group); err != nil {
		return err
	}
	return t.Render()
}
