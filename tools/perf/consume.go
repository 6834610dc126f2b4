package perf

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/spf13/cobra"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/ktoolhq/ktool/tools/cmdutil"
)

// ConsumeOptions configure `ktool perf consume`.
type ConsumeOptions struct {
	Topic string
	// NumRecords stops the run after that many records; 0 reads until
	// no record arrives for Timeout.
	NumRecords int64
	// Timeout is the longest wait for the next record.
	Timeout time.Duration
	// Group consumes as a member of this consumer group; empty reads every
	// partition directly.
	Group         string
	FetchMaxBytes int32
	// FetchMaxPartitionBytes bounds one partition's share of a fetch response.
	FetchMaxPartitionBytes int32
	Output                 cmdutil.OutputFlag
}

func (o *ConsumeOptions) validate() error {
	if o.Topic == "" {
		return cmdutil.Usagef("--topic is required")
	}
	if o.NumRecords < 0 {
		return cmdutil.Usagef("--num-records must not be negative, got %d", o.NumRecords)
	}
	if o.Timeout <= 0 {
		return cmdutil.Usagef("--timeout must be positive, got %s", o.Timeout)
	}
	if o.FetchMaxBytes <= 0 {
		return cmdutil.Usagef("--fetch-max-bytes must be positive, got %d", o.FetchMaxBytes)
	}
	if o.FetchMaxPartitionBytes <= 0 {
		return cmdutil.Usagef("--fetch-max-partition-bytes must be positive, got %d", o.FetchMaxPartitionBytes)
	}
	return o.Output.Validate()
}

// fetchTimer collects the round trip of every Fetch request with the time
// it completed, so the summary can leave out long polls that ran after the
// last record.
type fetchTimer struct {
	mu  sync.Mutex
	obs []fetchObs
}

type fetchObs struct {
	end time.Time
	d   time.Duration
}

var _ kgo.HookBrokerE2E = (*fetchTimer)(nil)

// OnBrokerE2E implements kgo.HookBrokerE2E.
func (t *fetchTimer) OnBrokerE2E(_ kgo.BrokerMetadata, key int16, e2e kgo.BrokerE2E) {
	const fetchKey = 1
	if key != fetchKey || e2e.Err() != nil {
		return
	}
	t.mu.Lock()
	t.obs = append(t.obs, fetchObs{end: time.Now(), d: e2e.DurationE2E()})
	t.mu.Unlock()
}

// until summarises the fetches that completed no later than last.
func (t *fetchTimer) until(last time.Time) (*Latency, int64) {
	t.mu.Lock()
	defer t.mu.Unlock()
	h := newHistogram()
	for _, o := range t.obs {
		if !o.end.After(last) {
			recordLatency(h, o.d)
		}
	}
	return summarize(h), h.TotalCount()
}

// joinTimer remembers when the group first gave this member partitions, so
// the time spent joining (Kafka delays a new group's first rebalance by
// group.initial.rebalance.delay.ms) is reported apart from fetching.
type joinTimer struct {
	mu sync.Mutex
	at time.Time
}

func (j *joinTimer) onAssigned(_ context.Context, _ *kgo.Client, assigned map[string][]int32) {
	if len(assigned) == 0 {
		return
	}
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.at.IsZero() {
		j.at = time.Now()
	}
}

// joined returns the first assignment time, zero before it (and always
// without a group).
func (j *joinTimer) joined() time.Time {
	j.mu.Lock()
	defer j.mu.Unlock()
	return j.at
}

// RunConsume reads records from Topic from the earliest offset (or the
// group's committed offsets) and prints the summary.
func RunConsume(ctx context.Context, f *cmdutil.Factory, o *ConsumeOptions) error {
	if err := o.validate(); err != nil {
		return err
	}
	if err := requireTopic(ctx, f, o.Topic); err != nil {
		return err
	}
	timer := &fetchTimer{}
	join := &joinTimer{}
	opts := []kgo.Opt{
		kgo.ConsumeTopics(o.Topic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.FetchMaxBytes(o.FetchMaxBytes),
		kgo.FetchMaxPartitionBytes(o.FetchMaxPartitionBytes),
		kgo.WithHooks(timer),
	}
	if o.Group != "" {
		opts = append(opts, kgo.ConsumerGroup(o.Group), kgo.OnPartitionsAssigned(join.onAssigned))
	}
	cl, err := f.Client(opts...)
	if err != nil {
		return err
	}
	defer cl.Close()

	res, err := consume(ctx, f, cl, o, timer, join)
	if res != nil {
		if perr := printResult(f.IO.Out, &o.Output, res, "fetch latency"); perr != nil {
			return perr
		}
	}
	return err
}

// consume polls until NumRecords arrived or none came for Timeout. A run cut
// short by the timeout returns its partial result along with the error.
func consume(ctx context.Context, f *cmdutil.Factory, cl *kgo.Client, o *ConsumeOptions, timer *fetchTimer, join *joinTimer) (*Result, error) {
	var records, size atomic.Int64
	prog := maybeProgress(f, "consumed", o.NumRecords, func() (int64, int64) {
		return records.Load(), size.Load()
	})
	defer prog.stop()

	start := time.Now()
	// last is when the latest record arrived, or when fetching could begin.
	last := start
	for o.NumRecords == 0 || records.Load() < o.NumRecords {
		pctx, cancel := context.WithDeadline(ctx, last.Add(o.Timeout))
		fetches := cl.PollFetches(pctx)
		idle := pctx.Err() != nil
		cancel()
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		var ferr error
		fetches.EachError(func(topic string, partition int32, err error) {
			if ferr == nil && !(idle && errors.Is(err, context.DeadlineExceeded)) {
				ferr = fmt.Errorf("consuming %s partition %d: %w", topic, partition, err)
			}
		})
		if ferr != nil {
			return nil, ferr
		}
		got := false
		fetches.EachRecord(func(r *kgo.Record) {
			if o.NumRecords > 0 && records.Load() >= o.NumRecords {
				return
			}
			got = true
			records.Add(1)
			size.Add(int64(len(r.Key) + len(r.Value)))
		})
		if got {
			last = time.Now()
			continue
		}
		if at := join.joined(); records.Load() == 0 && at.After(last) {
			last = at // waiting for the group is not waiting for records
			continue
		}
		if idle {
			break
		}
	}
	prog.stop()

	if o.Group != "" && join.joined().IsZero() {
		return nil, fmt.Errorf("group %s assigned no partitions of %s within %s (--timeout); a new group's first rebalance is delayed by the broker's group.initial.rebalance.delay.ms", o.Group, o.Topic, o.Timeout)
	}
	fetchStart := start
	if at := join.joined(); !at.IsZero() && at.Before(last) {
		fetchStart = at
	}
	res := newResult(records.Load(), size.Load(), last.Sub(fetchStart))
	res.RebalanceSeconds = fetchStart.Sub(start).Seconds()
	res.Latency, res.Fetches = timer.until(last)
	if o.NumRecords > 0 && res.Records < o.NumRecords {
		return res, fmt.Errorf("consumed %d of %d records: none arrived for %s (--timeout)", res.Records, o.NumRecords, o.Timeout)
	}
	return res, nil
}

func newConsumeCommand(f *cmdutil.Factory) *cobra.Command {
	o := &ConsumeOptions{}
	cmd := &cobra.Command{
		Use:   "consume --topic TOPIC",
		Short: "Consume records as fast as possible and report throughput",
		Long: `Consume a topic from the earliest offset (or from the group's committed
offsets with --group) and report records/s, MB/s (keys and values) and the
round trip of the Fetch requests that delivered records (avg, p50, p99, p99.9,
max). With --group, the time until the group assigns partitions is reported
as rebalance seconds and left out of the rates. The run stops after --num-records records, or when no record arrived for
--timeout (the global flag, default 10s). Progress is shown on stderr when stdout
is a terminal.`,
		Example: `  ktool perf consume --topic bench --num-records 1000000
  ktool perf consume --topic bench --group perf-1 --timeout 5s -o json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			o.Timeout = f.ClientTimeout
			return RunConsume(cmd.Context(), f, o)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&o.Topic, "topic", "", "topic to consume (required)")
	fl.Int64Var(&o.NumRecords, "num-records", 0, "stop after this many records; 0 reads until none arrives for --timeout")
	fl.StringVar(&o.Group, "group", "", "consume as a member of this consumer group")
	fl.Int32Var(&o.FetchMaxBytes, "fetch-max-bytes", 50<<20, "most bytes one fetch response may carry")
	fl.Int32Var(&o.FetchMaxPartitionBytes, "fetch-max-partition-bytes", 1<<20, "most bytes one partition may add to a fetch response")
	_ = cmd.MarkFlagRequired("topic")
	_ = cmd.RegisterFlagCompletionFunc("topic", cmdutil.CompleteTopics(f))
	_ = cmd.RegisterFlagCompletionFunc("group", cmdutil.CompleteGroups(f))
	o.Output.Register(cmd)
	return cmd
}
