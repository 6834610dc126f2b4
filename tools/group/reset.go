package group

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/ktoolhq/ktool/tools/cmdutil"
)

// ResetPlan is what `ktool group reset-offsets` would do, or did with --execute.
type ResetPlan struct {
	Group      string           `json:"group" yaml:"group"`
	Executed   bool             `json:"executed" yaml:"executed"`
	Partitions []ResetPartition `json:"partitions" yaml:"partitions"`
}

// ResetPartition is one partition's move.
type ResetPartition struct {
	Topic     string `json:"topic" yaml:"topic"`
	Partition int32  `json:"partition" yaml:"partition"`
	Current   int64  `json:"current_offset" yaml:"current_offset"`
	New       int64  `json:"new_offset" yaml:"new_offset"`
	LogStart  int64  `json:"log_start_offset" yaml:"log_start_offset"`
	LogEnd    int64  `json:"log_end_offset" yaml:"log_end_offset"`
}

// ResetOptions are the inputs of `ktool group reset-offsets`.
type ResetOptions struct {
	Factory *cmdutil.Factory
	Output  cmdutil.OutputFlag

	Group     string
	Topics    []string
	AllTopics bool
	Spec      ResetSpec
	Execute   bool
	// Now is the time --by-duration counts back from; zero means the clock.
	Now time.Time
}

// NewResetOffsetsCommand returns `ktool group reset-offsets`.
func NewResetOffsetsCommand(f *cmdutil.Factory, runF func(context.Context, *ResetOptions) error) *cobra.Command {
	opts := &ResetOptions{Factory: f}
	var (
		toEarliest, toLatest, toCurrent, dryRun bool
		toOffset, shiftBy                       int64
		toDatetime, byDuration                  string
	)
	cmd := &cobra.Command{
		Use:               "reset-offsets GROUP (--all-topics | --topic T[:P,...]...) --to-...",
		ValidArgsFunction: cmdutil.CompleteFirstArg(cmdutil.CompleteGroups(f)),
		Short:             "Move a group's committed offsets (a plan by default, applied with --execute)",
		Long: `Move the committed offsets of GROUP, as kafka-consumer-groups.sh --reset-offsets
does. Say where with exactly one of --to-earliest, --to-latest, --to-offset N,
--to-datetime T, --by-duration D (that long before now), --shift-by N (from
the committed offset; negative moves back) or --to-current (the committed
offset, or the log end where there is none), and which partitions with
--all-topics (every partition the group has a committed offset for) or
--topic T / --topic T:P,P (repeatable).

An offset outside a partition's log is moved to the nearest end of it.
Without --execute the plan is printed and nothing changes (--dry-run). The
cluster only takes offsets for a group without members, so --execute is
refused while the group has active members: stop its consumers first.`,
		Example: `  ktool group reset-offsets audit --topic orders --to-earliest
  ktool group reset-offsets audit --all-topics --shift-by -100 --execute
  ktool group reset-offsets audit --topic orders:0,1 --to-datetime 2026-01-31T09:30:00.000Z --execute
  ktool group reset-offsets audit --topic orders --by-duration PT1H`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.Group = args[0]
			if err := opts.Output.Validate(); err != nil {
				return err
			}
			fl := cmd.Flags()
			var kinds []string
			for flag, kind := range map[string]string{"to-earliest": ToEarliest, "to-latest": ToLatest, "to-offset": ToOffset,
				"to-datetime": ToDatetime, "by-duration": ByDuration, "shift-by": ShiftBy, "to-current": ToCurrent} {
				if fl.Changed(flag) {
					kinds = append(kinds, "--"+flag)
					opts.Spec.Kind = kind
				}
			}
			if len(kinds) != 1 {
				return cmdutil.Usagef("say where to move the offsets with exactly one of --to-earliest, --to-latest, --to-offset, --to-datetime, --by-duration, --shift-by, --to-current (got %d)", len(kinds))
			}
			switch opts.Spec.Kind {
			case ToOffset:
				if toOffset < 0 {
					return cmdutil.Usagef("--to-offset %d: offsets start at 0", toOffset)
				}
				opts.Spec.Offset = toOffset
			case ShiftBy:
				opts.Spec.Offset = shiftBy
			case ToDatetime:
				t, err := ParseDatetime(toDatetime)
				if err != nil {
					return cmdutil.UsageError(err)
				}
				opts.Spec.Time = t
			case ByDuration:
				d, err := ParseDuration(byDuration)
				if err != nil {
					return cmdutil.UsageError(err)
				}
				now := opts.Now
				if now.IsZero() {
					now = time.Now()
				}
				opts.Spec.Time = now.Add(-d)
			}
			if opts.AllTopics == (len(opts.Topics) > 0) {
				return cmdutil.Usagef("choose the partitions with --all-topics or --topic, not both or neither")
			}
			if dryRun && opts.Execute {
				return cmdutil.Usagef("--dry-run and --execute exclude each other")
			}
			if runF != nil {
				return runF(cmd.Context(), opts)
			}
			return runReset(cmd.Context(), opts)
		},
	}
	fl := cmd.Flags()
	fl.BoolVar(&toEarliest, "to-earliest", false, "move to the log start")
	fl.BoolVar(&toLatest, "to-latest", false, "move to the log end")
	fl.Int64Var(&toOffset, "to-offset", 0, "move to this offset")
	fl.StringVar(&toDatetime, "to-datetime", "", "move to the first record at or after this time (YYYY-MM-DDTHH:mm:SS.sss[Z|±HH:MM])")
	fl.StringVar(&byDuration, "by-duration", "", "move to the first record at or after this long ago (PT30M, P1DT2H or 90m)")
	fl.Int64Var(&shiftBy, "shift-by", 0, "move by N from the committed offset (negative: back)")
	fl.BoolVar(&toCurrent, "to-current", false, "move to the committed offset (the log end where none)")
	fl.BoolVar(&opts.AllTopics, "all-topics", false, "every partition the group has a committed offset for")
	fl.StringArrayVarP(&opts.Topics, "topic", "t", nil, "topic, or topic:partition,partition,... (repeatable)")
	fl.BoolVar(&dryRun, "dry-run", false, "only show the plan (the default)")
	fl.BoolVar(&opts.Execute, "execute", false, "commit the new offsets")
	opts.Output.Register(cmd)
	return cmd
}

func runReset(ctx context.Context, o *ResetOptions) error {
	adm, err := o.Factory.Admin()
	if err != nil {
		return err
	}
	defer adm.Close()
	rctx, cancel := o.Factory.RequestContext(ctx)
	defer cancel()

	active, err := activeMembers(rctx, adm, o.Group)
	if err != nil {
		return o.Factory.ClusterError("describing group "+o.Group, err)
	}
	if active != "" && o.Execute {
		return fmt.Errorf("refusing to reset the offsets of group %s: %s; stop its consumers first", o.Group, active)
	}
	committed, err := adm.FetchOffsets(rctx, o.Group)
	if err != nil && !errors.Is(err, kerr.GroupIDNotFound) {
		return o.Factory.ClusterError("reading the committed offsets of group "+o.Group, err)
	}
	if err := committed.Error(); err != nil {
		return fmt.Errorf("reading the committed offsets of group %s: %w", o.Group, err)
	}
	var set kadm.TopicsSet
	if o.AllTopics {
		set = kadm.TopicsSet{}
		committed.Each(func(c kadm.OffsetResponse) {
			if c.Err == nil && c.At >= 0 {
				set.Add(c.Topic, c.Partition)
			}
		})
		if len(set) == 0 {
			return fmt.Errorf("group %s has no committed offsets, so --all-topics selects nothing: name topics with --topic", o.Group)
		}
	} else {
		specs, err := parseTopicSpecs(o.Topics)
		if err != nil {
			return err
		}
		if set, err = resolveTopics(rctx, o.Factory, adm, specs); err != nil {
			return err
		}
	}
	plan, err := o.plan(rctx, adm, set, committed)
	if err != nil {
		return err
	}
	if o.Execute {
		if err := commit(rctx, adm, plan); err != nil {
			return o.Factory.ClusterError("committing the new offsets of group "+o.Group, err)
		}
		plan.Executed = true
	}
	w := o.Factory.IO.Out
	if err := o.Output.Print(w, plan, func() error { return writePlan(w, plan) }); err != nil {
		return err
	}
	if !plan.Executed {
		note := "Dry run: nothing was changed; run again with --execute to commit these offsets."
		if active != "" {
			note = fmt.Sprintf("Dry run: nothing was changed; --execute would be refused now: %s.", active)
		}
		fmt.Fprintln(o.Factory.IO.ErrOut, note)
	}
	return nil
}

// activeMembers says why the group counts as active ("" when it has no
// members): the cluster only takes offsets from outside an empty group.
func activeMembers(ctx context.Context, adm *kadm.Client, group string) (string, error) {
	described, err := adm.DescribeGroups(ctx, group)
	if err != nil {
		return "", err
	}
	d, ok := described[group]
	switch {
	case !ok || errors.Is(d.Err, kerr.GroupIDNotFound):
		return "", nil
	case d.Err != nil:
		return "", d.Err
	case d.State == "Empty" || d.State == "Dead":
		return "", nil
	}
	return fmt.Sprintf("it has %d active member(s) (state %s)", len(d.Members), d.State), nil
}

func (o *ResetOptions) plan(ctx context.Context, adm *kadm.Client, set kadm.TopicsSet, committed kadm.OffsetResponses) (ResetPlan, error) {
	topics := set.Topics()
	starts, err := adm.ListStartOffsets(ctx, topics...)
	if err != nil {
		return ResetPlan{}, o.Factory.ClusterError("listing log start offsets", err)
	}
	ends, err := adm.ListEndOffsets(ctx, topics...)
	if err != nil {
		return ResetPlan{}, o.Factory.ClusterError("listing log end offsets", err)
	}
	var atTime kadm.ListedOffsets
	if o.Spec.UsesTime() {
		if atTime, err = adm.ListOffsetsAfterMilli(ctx, o.Spec.Time.UnixMilli(), topics...); err != nil {
			return ResetPlan{}, o.Factory.ClusterError("listing offsets by time", err)
		}
	}
	plan := ResetPlan{Group: o.Group, Partitions: []ResetPartition{}}
	var problems []string
	for _, tp := range set.Sorted() {
		for _, p := range tp.Partitions {
			s, sok := starts.Lookup(tp.Topic, p)
			e, eok := ends.Lookup(tp.Topic, p)
			if !sok || !eok || s.Err != nil || e.Err != nil {
				problems = append(problems, fmt.Sprintf("%s-%d: offsets unavailable (%v)", tp.Topic, p, errors.Join(s.Err, e.Err)))
				continue
			}
			cur := int64(-1)
			if c, ok := committed.Lookup(tp.Topic, p); ok && c.Err == nil && c.At >= 0 {
				cur = c.At
			}
			t := int64(-1)
			if lo, ok := atTime.Lookup(tp.Topic, p); ok && lo.Err == nil {
				t = lo.Offset
			}
			next, err := o.Spec.Target(cur, s.Offset, e.Offset, t)
			if err != nil {
				problems = append(problems, fmt.Sprintf("%s-%d: %v", tp.Topic, p, err))
				continue
			}
			plan.Partitions = append(plan.Partitions, ResetPartition{Topic: tp.Topic, Partition: p,
				Current: cur, New: next, LogStart: s.Offset, LogEnd: e.Offset})
		}
	}
	if len(problems) > 0 {
		return ResetPlan{}, fmt.Errorf("cannot plan the reset of group %s: %s", o.Group, strings.Join(problems, "; "))
	}
	return plan, nil
}

func commit(ctx context.Context, adm *kadm.Client, plan ResetPlan) error {
	offsets := kadm.Offsets{}
	for _, p := range plan.Partitions {
		offsets.Add(kadm.Offset{Topic: p.Topic, Partition: p.Partition, At: p.New, LeaderEpoch: -1})
	}
	resps, err := adm.CommitOffsets(ctx, plan.Group, offsets)
	if err != nil {
		return err
	}
	return resps.Error()
}

func writePlan(w io.Writer, plan ResetPlan) error {
	t := cmdutil.NewTable(w, "Group", "Topic", "Partition", "Current", "New", "Log start", "Log end")
	for _, p := range plan.Partitions {
		row := []string{plan.Group, p.Topic, strconv.Itoa(int(p.Partition)), offset(p.Current),
			strconv.FormatInt(p.New, 10), strconv.FormatInt(p.LogStart, 10), strconv.FormatInt(p.LogEnd, 10)}
		if err := t.Append(row); err != nil {
			return err
		}
	}
	return t.Render()
}
