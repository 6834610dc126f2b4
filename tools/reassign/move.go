package reassign

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/ktoolhq/ktool/tools/cmdutil"
)

// MoveOptions are the inputs of `ktool partition move`.
type MoveOptions struct {
	Factory *cmdutil.Factory
	Output  cmdutil.OutputFlag

	Generate, Execute, Verify, Cancel bool

	Topics     []string // --generate
	Brokers    []int32  // --generate: the target brokers
	PlanFile   string   // --execute, --verify, --cancel
	OutputFile string   // --generate: also write the proposed plan here
	Throttle   int64    // bytes/s, 0: none
	Wait       bool
	Interval   time.Duration
}

// NewCommand returns `ktool partition` with `move`.
func NewCommand(f *cmdutil.Factory) *cobra.Command {
	cmd := &cobra.Command{
		Use:     "partition",
		Aliases: []string{"partitions"},
		Short:   "Move partition replicas between brokers",
	}
	cmd.AddCommand(NewMoveCommand(f, nil))
	return cmd
}

// NewMoveCommand returns `ktool partition move`.
func NewMoveCommand(f *cmdutil.Factory, runF func(context.Context, *MoveOptions) error) *cobra.Command {
	opts := &MoveOptions{Factory: f}
	var throttle string
	cmd := &cobra.Command{
		Use:   "move (--generate --topics T,... --broker-list ID,... | --execute | --verify | --cancel) [--plan FILE]",
		Short: "Reassign partition replicas: generate a plan, execute it under a throttle, verify, cancel",
		Long: `Move reassigns partition replicas as kafka-reassign-partitions.sh does, with
its plan files (JSON: {"version":1,"partitions":[{"topic","partition","replicas"}]}).

--generate proposes a plan placing the replicas of --topics on the brokers of
--broker-list (kafka-reassign-partitions.sh's name; --brokers stays the
bootstrap servers, as in every command): it
balances replicas and preferred leaders, keeps a partition's replicas in
different racks (broker.rack), and moves as little as possible. It prints the
current assignment (keep it to roll back) and the proposal; --output-file
writes the proposal.

--execute starts the plan's reassignment (AlterPartitionReassignments). With
--throttle RATE (bytes/s; K, M, G suffixes are 1024-based) it first sets the
replication throttle: leader/follower.replication.throttled.rate on every broker
taking part and the topics' *.throttled.replicas. --wait follows it to the end.

--verify shows each partition's state and, while copies run, the bytes to move,
the rate and the ETA (a progress bar on a terminal with --wait). When every
partition is complete it removes the throttles. --cancel stops the plan's
running reassignments (the partitions keep their old replicas) and removes the
throttles.`,
		Example: `  ktool partition move --generate --topics orders,payments --broker-list 1,2,3,4 --output-file plan.json
  ktool partition move --execute --plan plan.json --throttle 50M
  ktool partition move --verify --plan plan.json --wait
  ktool partition move --cancel --plan plan.json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := opts.Output.Validate(); err != nil {
				return err
			}
			n := 0
			for _, b := range []bool{opts.Generate, opts.Execute, opts.Verify, opts.Cancel} {
				if b {
					n++
				}
			}
			if n != 1 {
				return cmdutil.Usagef("pass exactly one of --generate, --execute, --verify or --cancel")
			}
			if opts.Generate && (len(opts.Topics) == 0 || len(opts.Brokers) == 0) {
				return cmdutil.Usagef("--generate needs --topics and --broker-list")
			}
			if !opts.Generate && opts.PlanFile == "" {
				return cmdutil.Usagef("--execute, --verify and --cancel need --plan FILE")
			}
			if throttle != "" {
				if !opts.Execute {
					return cmdutil.Usagef("--throttle goes with --execute")
				}
				r, err := ParseRate(throttle)
				if err != nil {
					return cmdutil.UsageError(err)
				}
				opts.Throttle = r
			}
			if runF != nil {
				return runF(cmd.Context(), opts)
			}
			return RunMove(cmd.Context(), opts)
		},
	}
	fl := cmd.Flags()
	fl.BoolVar(&opts.Generate, "generate", false, "propose a plan for --topics on --broker-list")
	fl.BoolVar(&opts.Execute, "execute", false, "start the reassignment in --plan")
	fl.BoolVar(&opts.Verify, "verify", false, "show the plan's progress; remove the throttles once complete")
	fl.BoolVar(&opts.Cancel, "cancel", false, "cancel the plan's running reassignments and remove the throttles")
	fl.StringSliceVar(&opts.Topics, "topics", nil, "topics to plan for (--generate)")
	fl.Int32SliceVar(&opts.Brokers, "broker-list", nil, "broker ids to place the replicas on (--generate)")
	fl.StringVar(&opts.PlanFile, "plan", "", "the plan file (kafka-reassign-partitions.sh's --reassignment-json-file)")
	fl.StringVar(&opts.OutputFile, "output-file", "", "write the proposed plan here too (--generate)")
	fl.StringVar(&throttle, "throttle", "", "replication throttle in bytes/s while the plan runs (--execute)")
	fl.BoolVar(&opts.Wait, "wait", false, "follow the reassignment until it completes, then remove the throttles")
	fl.DurationVar(&opts.Interval, "interval", 2*time.Second, "how often --wait looks at the progress")
	_ = cmd.RegisterFlagCompletionFunc("topics", cmdutil.CompleteTopics(f))
	opts.Output.Register(cmd)
	return cmd
}

// ParseRate reads a throttle: bytes per second, with an optional K, M or G
// (1024-based), optionally followed by B, iB and /s.
func ParseRate(s string) (int64, error) {
	v := strings.TrimSuffix(strings.ToUpper(strings.TrimSpace(s)), "/S")
	v = strings.TrimSuffix(strings.TrimSuffix(v, "B"), "I")
	mult := int64(1)
	switch {
	case strings.HasSuffix(v, "K"):
		mult, v = 1<<10, strings.TrimSuffix(v, "K")
	case strings.HasSuffix(v, "M"):
		mult, v = 1<<20, strings.TrimSuffix(v, "M")
	case strings.HasSuffix(v, "G"):
		mult, v = 1<<30, strings.TrimSuffix(v, "G")
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil || n <= 0 || n > (1<<62)/mult {
		return 0, fmt.Errorf("--throttle %q: want bytes per second such as 10485760 or 10M", s)
	}
	return n * mult, nil
}

func readPlanFile(path string) (Plan, error) {
	fh, err := os.Open(path)
	if err != nil {
		return Plan{}, cmdutil.UsageError(err)
	}
	defer fh.Close()
	p, err := ReadPlan(fh)
	if err != nil {
		return Plan{}, cmdutil.Usagef("%s: %v", path, err)
	}
	return p, nil
}

// Generated is what --generate answers.
type Generated struct {
	Current  Plan   `json:"current" yaml:"current"`
	Proposed Plan   `json:"proposed" yaml:"proposed"`
	Moves    int    `json:"replica_moves" yaml:"replica_moves"`
	Loads    []Load `json:"loads_after" yaml:"loads_after"`
}

// RunMove is `ktool partition move`.
func RunMove(ctx context.Context, o *MoveOptions) error {
	adm, err := o.Factory.Admin()
	if err != nil {
		return err
	}
	defer adm.Close()
	switch {
	case o.Generate:
		return o.generate(ctx, adm)
	case o.Execute:
		p, err := readPlanFile(o.PlanFile)
		if err != nil {
			return err
		}
		return Execute(ctx, o.Factory, adm, p, o.Throttle, o.Wait, o.Interval, &o.Output)
	case o.Verify:
		p, err := readPlanFile(o.PlanFile)
		if err != nil {
			return err
		}
		return Verify(ctx, o.Factory, adm, p, nil, o.Wait, o.Interval, &o.Output)
	default:
		p, err := readPlanFile(o.PlanFile)
		if err != nil {
			return err
		}
		return o.cancel(ctx, adm, p)
	}
}

func (o *MoveOptions) generate(ctx context.Context, adm *kadm.Client) error {
	rctx, cancel := o.Factory.RequestContext(ctx)
	defer cancel()
	st, err := ReadState(rctx, adm, o.Topics...)
	if err != nil {
		return o.Factory.ClusterError("reading the topics", err)
	}
	targets, err := st.Targets(o.Brokers)
	if err != nil {
		return err
	}
	next, err := Generate(st.Current, targets, GenerateOptions{Rebalance: true})
	if err != nil {
		return cmdutil.UsageError(err)
	}
	changed := Changes(st.Current, next)
	g := Generated{Current: st.Current.Plan(), Proposed: changed.Plan(), Moves: Moves(st.Current, next), Loads: Loads(next, targets)}
	if o.OutputFile != "" && len(g.Proposed.Partitions) > 0 {
		fh, err := os.Create(o.OutputFile)
		if err != nil {
			return err
		}
		werr := g.Proposed.Write(fh)
		if cerr := fh.Close(); werr == nil {
			werr = cerr
		}
		if werr != nil {
			return werr
		}
	}
	w := o.Factory.IO.Out
	return o.Output.Print(w, g, func() error {
		fmt.Fprintln(w, "Current partition replica assignment (keep it to roll back):")
		if err := g.Current.Write(w); err != nil {
			return err
		}
		if len(g.Proposed.Partitions) == 0 {
			_, err := fmt.Fprintln(w, "\nThe replicas are already placed as proposed: nothing to move.")
			return err
		}
		fmt.Fprintf(w, "\nProposed partition reassignment configuration (%d partitions change, %d replicas move):\n", len(g.Proposed.Partitions), g.Moves)
		if err := g.Proposed.Write(w); err != nil {
			return err
		}
		if o.OutputFile != "" {
			fmt.Fprintf(w, "Written to %s.\n", o.OutputFile)
		}
		fmt.Fprintln(w, "\nReplicas and preferred leaders per broker afterwards:")
		return writeLoads(w, g.Loads)
	})
}

// Execute starts plan p, throttled at rate bytes/s when rate > 0, and with
// wait follows it until it completes.
func Execute(ctx context.Context, f *cmdutil.Factory, adm *kadm.Client, p Plan, rate int64, wait bool, every time.Duration, out *cmdutil.OutputFlag) error {
	rctx, cancel := f.RequestContext(ctx)
	defer cancel()
	st, err := ReadState(rctx, adm, planTopics(p)...)
	if err != nil {
		return f.ClusterError("reading the topics", err)
	}
	cur, err := st.Of(p)
	if err != nil {
		return cmdutil.UsageError(err)
	}
	for _, pp := range p.Partitions {
		for _, b := range pp.Replicas {
			if _, err := st.Targets([]int32{b}); err != nil {
				return cmdutil.Usagef("%s-%d: broker %d is not in the cluster", pp.Topic, pp.Partition, b)
			}
		}
	}
	next := PlanAssignment(p)
	dirFailed, err := alterLogDirs(rctx, adm, p)
	if err != nil {
		return err
	}
	if rate > 0 {
		if err := SetThrottles(rctx, adm, cur, next, rate); err != nil {
			return f.ClusterError("setting the throttle", err)
		}
	}
	var req kadm.AlterPartitionAssignmentsReq
	for _, pp := range p.Partitions {
		req.Assign(pp.Topic, pp.Partition, pp.Replicas)
	}
	resps, err := adm.AlterPartitionAssignments(rctx, req)
	if err != nil && len(resps) == 0 {
		return f.ClusterError("starting the reassignment", err)
	}
	var failed []string
	resps.Each(func(r kadm.AlterPartitionAssignmentsResponse) {
		if r.Err != nil {
			failed = append(failed, fmt.Sprintf("%s-%d: %v", r.Topic, r.Partition, cmdutil.WithMessage(r.Err, r.ErrMessage)))
		}
	})
	w := f.IO.Out
	if !out.Structured() {
		fmt.Fprintln(w, "Current partition replica assignment (use it as --plan to roll back):")
		if err := cur.Plan().Write(w); err != nil {
			return err
		}
		if rate > 0 {
			fmt.Fprintf(w, "Throttle set to %s on brokers %s; run --verify when the move is done to remove it.\n", humanRate(rate), cmdutil.JoinInt32(brokersOf(cur, next)))
		}
		fmt.Fprintf(w, "Started the reassignment of %d partitions.\n", len(p.Partitions)-len(failed))
	}
	if len(failed) > 0 {
		return fmt.Errorf("%d of %d partitions were not reassigned:\n  %s", len(failed), len(p.Partitions), strings.Join(failed, "\n  "))
	}
	if len(dirFailed) > 0 {
		return fmt.Errorf("%d replicas were not moved to their log_dirs:\n  %s", len(dirFailed), strings.Join(dirFailed, "\n  "))
	}
	if !wait {
		if out.Structured() {
			return out.Print(w, cur.Plan(), nil)
		}
		return nil
	}
	return Verify(ctx, f, adm, p, cur, true, every, out)
}

// alterLogDirs asks the brokers to put their replicas in the plan's log_dirs
// (the entries other than "any") before the reassignment starts, as
// kafka-reassign-partitions.sh does (AlterReplicaLogDirs): a broker that
// does not host a replica yet answers REPLICA_NOT_AVAILABLE and creates it
// in that dir when it comes. It returns the replicas refused; a log dir
// that is not an absolute path is a usage error.
func alterLogDirs(ctx context.Context, adm *kadm.Client, p Plan) ([]string, error) {
	reqs := map[int32]kadm.AlterReplicaLogDirsReq{}
	for _, pp := range p.Partitions {
		for i, d := range pp.LogDirs {
			if d == "any" {
				continue
			}
			if !filepath.IsAbs(d) {
				return nil, cmdutil.Usagef("%s-%d: log dir %q is not an absolute path (or \"any\")", pp.Topic, pp.Partition, d)
			}
			b := pp.Replicas[i]
			req := reqs[b]
			req.Add(filepath.Clean(d), kadm.TopicsSet{pp.Topic: {pp.Partition: {}}})
			reqs[b] = req
		}
	}
	var failed []string
	for b, req := range reqs {
		resps, err := adm.AlterBrokerReplicaLogDirs(ctx, b, req)
		if err != nil {
			failed = append(failed, fmt.Sprintf("log dirs on broker %d: %v", b, err))
			continue
		}
		resps.Each(func(r kadm.AlterReplicaLogDirsResponse) {
			if r.Err != nil && !errors.Is(r.Err, kerr.ReplicaNotAvailable) {
				failed = append(failed, fmt.Sprintf("%s-%d to %s on broker %d: %v", r.Topic, r.Partition, r.Dir, b, r.Err))
			}
		})
	}
	sort.Strings(failed)
	return failed, nil
}

// Verify prints the plan's status; once every partition is complete it
// removes the throttles. With wait it polls until then, drawing progress.
func Verify(ctx context.Context, f *cmdutil.Factory, adm *kadm.Client, p Plan, orig Assignment, wait bool, every time.Duration, out *cmdutil.OutputFlag) error {
	var prev *Status
	var bar *progressLine
	if wait && f.IO.IsStdoutTTY() {
		bar = &progressLine{w: f.IO.ErrOut}
	}
	var differsSince time.Time
	for {
		rctx, cancel := f.RequestContext(ctx)
		s, err := ReadStatus(rctx, adm, p, orig)
		cancel()
		if err != nil {
			return f.ClusterError("reading the reassignment's progress", err)
		}
		settling := false
		if s.Differs > 0 && s.InProgress == 0 {
			if differsSince.IsZero() {
				differsSince = time.Now()
			}
			settling = time.Since(differsSince) < metadataSettle
		} else {
			differsSince = time.Time{}
		}
		if !settling && (s.Done() || !wait || s.InProgress == 0) {
			bar.end()
			if s.Done() {
				rctx, cancel := f.RequestContext(ctx)
				st, serr := ReadState(rctx, adm)
				if serr == nil {
					serr = RemoveThrottles(rctx, adm, st.brokerIDs(), planTopics(p))
				}
				cancel()
				if serr != nil {
					return f.ClusterError("removing the throttles", serr)
				}
				s.ThrottlesRemoved = true
			}
			w := f.IO.Out
			if err := out.Print(w, s, func() error { return writeStatus(w, s, prev) }); err != nil {
				return err
			}
			if s.Differs > 0 {
				return fmt.Errorf("%d of %d partitions are not reassigned and none runs for them (cancelled, or changed since the plan)", s.Differs, len(s.Partitions))
			}
			return nil
		}
		next := every
		if settling {
			next = min(every, metadataSettle/10)
		} else {
			bar.draw(s, prev)
			prev = &s
		}
		select {
		case <-ctx.Done():
			bar.end()
			return ctx.Err()
		case <-time.After(next):
		}
	}
}

// metadataSettle is how long a partition that no reassignment runs for may
// differ from the plan before Verify says so. The controller ends a
// reassignment before every broker's metadata shows its replicas, and the
// replicas are read from any broker.
const metadataSettle = 3 * time.Second

func (o *MoveOptions) cancel(ctx context.Context, adm *kadm.Client, p Plan) error {
	rctx, cancel := o.Factory.RequestContext(ctx)
	defer cancel()
	var req kadm.AlterPartitionAssignmentsReq
	for _, pp := range p.Partitions {
		req.CancelAssign(pp.Topic, pp.Partition)
	}
	resps, err := adm.AlterPartitionAssignments(rctx, req)
	if err != nil && len(resps) == 0 {
		return o.Factory.ClusterError("cancelling the reassignment", err)
	}
	cancelled, idle := 0, 0
	var errs []error
	resps.Each(func(r kadm.AlterPartitionAssignmentsResponse) {
		switch {
		case r.Err == nil:
			cancelled++
		case errors.Is(r.Err, kerr.NoReassignmentInProgress):
			idle++
		default:
			errs = append(errs, fmt.Errorf("%s-%d: %w", r.Topic, r.Partition, cmdutil.WithMessage(r.Err, r.ErrMessage)))
		}
	})
	st, serr := ReadState(rctx, adm)
	if serr == nil {
		serr = RemoveThrottles(rctx, adm, st.brokerIDs(), planTopics(p))
	}
	if serr != nil {
		errs = append(errs, fmt.Errorf("removing the throttles: %w", serr))
	}
	fmt.Fprintf(o.Factory.IO.Out, "Cancelled %d partition reassignments (%d had none running); throttles removed.\n", cancelled, idle)
	return errors.Join(errs...)
}

func writeLoads(w io.Writer, loads []Load) error {
	tbl := cmdutil.NewTable(w, "Broker", "Rack", "Replicas", "Skew", "Preferred leaders", "Skew")
	for _, l := range loads {
		rack := l.Rack
		if rack == "" {
			rack = "-"
		}
		tbl.Append([]string{strconv.Itoa(int(l.Broker)), rack, strconv.Itoa(l.Replicas), pct(l.ReplicaSkew), strconv.Itoa(l.Leaders), pct(l.LeaderSkew)})
	}
	return tbl.Render()
}

func pct(f float64) string { return fmt.Sprintf("%+.1f%%", f) }

func writeStatus(w io.Writer, s Status, prev *Status) error {
	tbl := cmdutil.NewTable(w, "Partition", "State", "Replicas", "Target", "Adding", "Removing", "Copied")
	for _, ps := range s.Partitions {
		copied := "-"
		if ps.State == InProgress && ps.BytesTotal > 0 {
			copied = fmt.Sprintf("%s of %s", humanBytes(ps.BytesDone), humanBytes(ps.BytesTotal))
		}
		tbl.Append([]string{fmt.Sprintf("%s-%d", ps.Topic, ps.Partition), ps.State, cmdutil.JoinInt32(ps.Replicas),
			cmdutil.JoinInt32(ps.Target), dashIfEmpty(cmdutil.JoinInt32(ps.Adding)), dashIfEmpty(cmdutil.JoinInt32(ps.Removing)), copied})
	}
	if err := tbl.Render(); err != nil {
		return err
	}
	fmt.Fprintf(w, "%d complete, %d in progress, %d not reassigned.\n", s.Complete, s.InProgress, s.Differs)
	if s.InProgress > 0 {
		fmt.Fprintf(w, "To move: %s of %s copied%s.\n", humanBytes(s.BytesDone), humanBytes(s.BytesTotal), rateETA(s, prev))
	}
	if s.ThrottlesRemoved {
		fmt.Fprintln(w, "Every partition is reassigned; throttles removed.")
	}
	return nil
}

func dashIfEmpty(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
