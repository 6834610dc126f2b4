package logdirs

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"time"

	"github.com/spf13/cobra"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/ktoolhq/ktool/tools/cmdutil"
	"github.com/ktoolhq/ktool/tools/reassign"
)

// Move is one replica to move: the replica of Topic-Partition on Broker, to
// its log dir Dir.
type Move struct {
	Broker    int32  `json:"broker" yaml:"broker"`
	Topic     string `json:"topic" yaml:"topic"`
	Partition int32  `json:"partition" yaml:"partition"`
	Dir       string `json:"dir" yaml:"dir"`
	// State is requested, moving (a future replica is being filled), done
	// (the replica is in Dir) or error.
	State string `json:"state" yaml:"state"`
	// Copied is the future replica's size and Left the current replica's
	// size minus it: the bytes still to copy (0 when done).
	Copied int64  `json:"copied" yaml:"copied"`
	Left   int64  `json:"left" yaml:"left"`
	Lag    int64  `json:"offset_lag" yaml:"offset_lag"`
	Error  string `json:"error,omitempty" yaml:"error,omitempty"`
}

// MoveOptions are the inputs of `ktool log-dirs move`.
type MoveOptions struct {
	Factory    *cmdutil.Factory
	Output     cmdutil.OutputFlag
	Broker     int32
	Topic      string
	Partitions []int32
	To         string
	Plan       string
	Wait       bool
	Timeout    time.Duration
	Interval   time.Duration
}

// NewMoveCommand returns `ktool log-dirs move`.
func NewMoveCommand(f *cmdutil.Factory, runF func(context.Context, *MoveOptions) error) *cobra.Command {
	opts := &MoveOptions{Factory: f}
	cmd := &cobra.Command{
		Use:   "move (--broker ID --topic T [--partitions P,...] --to DIR | --plan FILE) [--wait [--timeout D]]",
		Short: "Move replicas between the log dirs of a broker (AlterReplicaLogDirs)",
		Long: `Move asks brokers to move replicas they host to another of their log dirs
(AlterReplicaLogDirs, KIP-113): the broker copies the replica into the
target dir in the background and swaps it in once the copy has caught up.
Give one broker, topic, partitions (all of the topic's on that broker when
left out) and target dir, or a kafka-reassign-partitions.sh plan file with
log_dirs (entries "any" are skipped; each other entry moves the replica of
the broker at the same index of "replicas"). A broker that does not host the
replica yet creates it in that dir when it comes (answered
REPLICA_NOT_AVAILABLE, shown as requested).

It prints each replica's state: the bytes copied and left, from
DescribeLogDirs. With --wait it polls until every replica is in its dir,
exiting 1 at --timeout. Throttle the copies with the broker config
replica.alter.log.dirs.io.max.bytes.per.second (ktool config alter broker ID).`,
		Example: `  ktool log-dirs move --broker 1 --topic orders --partitions 0,2 --to /disk2/kafka --wait
  ktool log-dirs move --plan plan.json -o json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := opts.Output.Validate(); err != nil {
				return err
			}
			if err := opts.check(cmd); err != nil {
				return err
			}
			if runF != nil {
				return runF(cmd.Context(), opts)
			}
			return RunMove(cmd.Context(), opts)
		},
	}
	cmd.Flags().Int32Var(&opts.Broker, "broker", -1, "the broker whose replicas move")
	cmd.Flags().StringVar(&opts.Topic, "topic", "", "the topic")
	cmd.Flags().Int32SliceVar(&opts.Partitions, "partitions", nil, "partitions (default: every one the broker hosts)")
	cmd.Flags().StringVar(&opts.To, "to", "", "the target log dir, one of the broker's log.dirs (an absolute path)")
	cmd.Flags().StringVar(&opts.Plan, "plan", "", "a kafka-reassign-partitions.sh plan file with log_dirs")
	cmd.Flags().BoolVar(&opts.Wait, "wait", false, "wait until every replica is in its dir")
	cmd.Flags().DurationVar(&opts.Timeout, "timeout", 10*time.Minute, "with --wait, give up (exit 1) after this long")
	cmd.Flags().DurationVar(&opts.Interval, "interval", time.Second, "with --wait, how often progress is read")
	_ = cmd.RegisterFlagCompletionFunc("topic", cmdutil.CompleteTopics(f))
	opts.Output.Register(cmd)
	return cmd
}

func (o *MoveOptions) check(cmd *cobra.Command) error {
	direct := cmd.Flags().Changed("broker") || o.Topic != "" || o.To != "" || len(o.Partitions) > 0
	switch {
	case o.Plan != "" && direct:
		return cmdutil.Usagef("--plan cannot be combined with --broker, --topic, --partitions or --to")
	case o.Plan == "" && (o.Broker < 0 || o.Topic == "" || o.To == ""):
		return cmdutil.Usagef("give --broker, --topic and --to (or --plan)")
	case o.To != "" && !filepath.IsAbs(o.To):
		return cmdutil.Usagef("--to %q is not an absolute path: log dirs are compared as absolute paths", o.To)
	case o.Timeout <= 0 || o.Interval <= 0:
		return cmdutil.Usagef("--timeout and --interval must be positive")
	}
	for _, p := range o.Partitions {
		if p < 0 {
			return cmdutil.Usagef("partition %d is negative", p)
		}
	}
	return nil
}

// movesFromPlan lists the replicas a plan puts in a named log dir.
func movesFromPlan(plan reassign.Plan) ([]Move, error) {
	var out []Move
	for _, pp := range plan.Partitions {
		for i, d := range pp.LogDirs {
			if d == "any" {
				continue
			}
			if !filepath.IsAbs(d) {
				return nil, fmt.Errorf("%s-%d: log dir %q is not an absolute path (or \"any\")", pp.Topic, pp.Partition, d)
			}
			out = append(out, Move{Broker: pp.Replicas[i], Topic: pp.Topic, Partition: pp.Partition, Dir: d})
		}
	}
	if len(out) == 0 {
		return nil, errors.New("the plan names no log dir other than \"any\"")
	}
	return out, nil
}

// directMoves lists the replicas of --broker --topic --partitions; without
// --partitions, every partition of the topic the broker hosts.
func directMoves(ctx context.Context, adm *kadm.Client, o *MoveOptions) ([]Move, error) {
	parts := o.Partitions
	if len(parts) == 0 {
		tds, err := adm.ListTopics(ctx, o.Topic)
		if err != nil {
			return nil, err
		}
		td, ok := tds[o.Topic]
		if !ok || td.Err != nil {
			return nil, fmt.Errorf("topic %q does not exist", o.Topic)
		}
		for _, p := range td.Partitions.Sorted() {
			for _, r := range p.Replicas {
				if r == o.Broker {
					parts = append(parts, p.Partition)
				}
			}
		}
		if len(parts) == 0 {
			return nil, fmt.Errorf("broker %d hosts no replica of %s", o.Broker, o.Topic)
		}
	}
	out := make([]Move, 0, len(parts))
	for _, p := range parts {
		out = append(out, Move{Broker: o.Broker, Topic: o.Topic, Partition: p, Dir: filepath.Clean(o.To)})
	}
	return out, nil
}

// AlterMoves sends the moves, one AlterReplicaLogDirs per broker, and
// records each replica's answer in its State and Error.
func AlterMoves(ctx context.Context, adm *kadm.Client, moves []Move) {
	byBroker := map[int32]kadm.AlterReplicaLogDirsReq{}
	for _, m := range moves {
		req := byBroker[m.Broker]
		req.Add(m.Dir, kadm.TopicsSet{m.Topic: {m.Partition: {}}})
		byBroker[m.Broker] = req
	}
	answers := map[int32]kadm.AlterReplicaLogDirsResponses{}
	errs := map[int32]error{}
	for id, req := range byBroker {
		answers[id], errs[id] = adm.AlterBrokerReplicaLogDirs(ctx, id, req)
	}
	for i := range moves {
		m := &moves[i]
		m.State = "requested"
		err := errs[m.Broker]
		if err == nil {
			if r, ok := answers[m.Broker][m.Topic][m.Partition]; ok {
				err = r.Err
			} else {
				err = errors.New("the broker did not answer for this replica")
			}
		}
		if err != nil && !errors.Is(err, kerr.ReplicaNotAvailable) {
			m.State, m.Error = "error", err.Error()
		}
	}
}

// Progress reads where each move stands from its broker's DescribeLogDirs.
func Progress(ctx context.Context, adm *kadm.Client, moves []Move) error {
	brokers := map[int32]bool{}
	for _, m := range moves {
		brokers[m.Broker] = true
	}
	dirs := map[int32]kadm.DescribedLogDirs{}
	for id := range brokers {
		d, err := adm.DescribeBrokerLogDirs(ctx, id, nil)
		if err != nil {
			return fmt.Errorf("describing the log dirs of broker %d: %w", id, err)
		}
		dirs[id] = d
	}
	for i := range moves {
		m := &moves[i]
		if m.State == "error" {
			continue
		}
		var cur, fut *kadm.DescribedLogDirPartition
		dirs[m.Broker].Each(func(d kadm.DescribedLogDir) {
			p, ok := d.Topics[m.Topic][m.Partition]
			if !ok {
				return
			}
			switch {
			case p.IsFuture && filepath.Clean(d.Dir) == filepath.Clean(m.Dir):
				fut = &p
			case !p.IsFuture:
				cur = &p
			}
		})
		switch {
		case fut != nil:
			m.State, m.Copied, m.Lag = "moving", fut.Size, fut.OffsetLag
			if cur != nil {
				m.Left = max(0, cur.Size-fut.Size)
			}
		case cur != nil && filepath.Clean(cur.Dir) == filepath.Clean(m.Dir):
			m.State, m.Copied, m.Left, m.Lag = "done", cur.Size, 0, 0
		case cur != nil:
			// Hosted elsewhere with no copy: not started (a broker restarted
			// during the copy drops it) or cancelled.
			m.State, m.Copied, m.Left = "requested", 0, cur.Size
		default:
			m.State = "requested"
		}
	}
	return nil
}

// RunMove is `ktool log-dirs move`.
func RunMove(ctx context.Context, o *MoveOptions) error {
	var plan reassign.Plan
	if o.Plan != "" {
		f, err := os.Open(o.Plan)
		if err != nil {
			return cmdutil.UsageError(err)
		}
		plan, err = reassign.ReadPlan(f)
		f.Close()
		if err != nil {
			return cmdutil.Usagef("%s: %v", o.Plan, err)
		}
	}
	adm, err := o.Factory.Admin()
	if err != nil {
		return err
	}
	defer adm.Close()
	rctx, cancel := o.Factory.RequestContext(ctx)
	defer cancel()
	var moves []Move
	if o.Plan != "" {
		moves, err = movesFromPlan(plan)
		if err != nil {
			return cmdutil.Usagef("%s: %v", o.Plan, err)
		}
	} else if moves, err = directMoves(rctx, adm, o); err != nil {
		return o.Factory.ClusterError("listing the replicas to move", err)
	}
	sort.Slice(moves, func(i, j int) bool {
		a, b := moves[i], moves[j]
		return a.Broker < b.Broker || a.Broker == b.Broker && (a.Topic < b.Topic || a.Topic == b.Topic && a.Partition < b.Partition)
	})
	AlterMoves(rctx, adm, moves)
	deadline := time.Now().Add(o.Timeout)
	w := o.Factory.IO.Out
	for {
		pctx, pcancel := o.Factory.RequestContext(ctx)
		err := Progress(pctx, adm, moves)
		pcancel()
		if err != nil {
			return o.Factory.ClusterError("reading progress", err)
		}
		pending, failed := 0, 0
		for _, m := range moves {
			switch m.State {
			case "error":
				failed++
			case "done":
			default:
				pending++
			}
		}
		if !o.Wait || pending == 0 || time.Now().After(deadline) {
			if perr := o.Output.Print(w, moves, func() error { return writeMoves(w, moves) }); perr != nil {
				return perr
			}
			switch {
			case failed > 0:
				return fmt.Errorf("%d of %d replicas were refused (see above)", failed, len(moves))
			case o.Wait && pending > 0:
				return fmt.Errorf("%d of %d replicas are not in their dir after %v", pending, len(moves), o.Timeout)
			}
			return nil
		}
		if !o.Output.Structured() {
			fmt.Fprintf(o.Factory.IO.ErrOut, "%s: %d of %d replicas moved, %d bytes left\n",
				time.Now().Format(time.TimeOnly), len(moves)-pending-failed, len(moves), bytesLeft(moves))
		}
		t := time.NewTimer(min(o.Interval, max(time.Until(deadline), time.Millisecond)))
		select {
		case <-ctx.Done():
			t.Stop()
			return ctx.Err()
		case <-t.C:
		}
	}
}

func bytesLeft(moves []Move) int64 {
	var n int64
	for _, m := range moves {
		n += m.Left
	}
	return n
}

func writeMoves(w io.Writer, moves []Move) error {
	tbl := cmdutil.NewTable(w, "Broker", "Topic", "Partition", "Dir", "State", "Copied", "Left", "Offset lag")
	for _, m := range moves {
		state := m.State
		if m.Error != "" {
			state += ": " + m.Error
		}
		tbl.Append([]string{strconv.Itoa(int(m.Broker)), m.Topic, strconv.Itoa(int(m.Partition)), m.Dir, state,
			strconv.FormatInt(m.Copied, 10), strconv.FormatInt(m.Left, 10), strconv.FormatInt(m.Lag, 10)})
	}
	return tbl.Render()
}
