package perf

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"
	"github.com/spf13/cobra"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/ktoolhq/ktool/tools/cmdutil"
)

// ProduceOptions configure `ktool perf produce`.
type ProduceOptions struct {
	Topic      string
	NumRecords int64
	// RecordSize is the value size of every record; exactly one of
	// RecordSize and PayloadFile is set.
	RecordSize int
	// PayloadFile holds newline-separated payloads; each record takes one at random.
	PayloadFile string
	Acks        string // all, -1, 1 or 0
	Compression string // none, gzip, snappy, lz4 or zstd
	// Throughput caps records per second; negative means no cap.
	Throughput    float64
	BatchMaxBytes int32
	Linger        time.Duration
	// MaxInFlight is the produce requests in flight per broker for a
	// non-idempotent producer; 0 leaves the client default.
	MaxInFlight int
	// Idempotent nil follows the client default (on), except that acks other
	// than all turn it off since idempotence requires acks=all.
	Idempotent *bool
	// Transactional produces in transactions of TransactionSize records,
	// each committed, under TransactionalID (a fresh one when empty).
	Transactional   bool
	TransactionSize int64
	TransactionalID string
	// Partitions and ReplicationFactor are used when the topic has to be
	// created; -1 takes the broker defaults.
	Partitions        int32
	ReplicationFactor int16
	Output            cmdutil.OutputFlag

	clock clock
}

// Broker write limit of the client: a batch cannot be larger than a request.
const maxBatchMaxBytes = 100 << 20

func (o *ProduceOptions) validate() error {
	if o.Topic == "" {
		return cmdutil.Usagef("--topic is required")
	}
	if o.NumRecords <= 0 {
		return cmdutil.Usagef("--num-records must be positive, got %d", o.NumRecords)
	}
	switch {
	case o.PayloadFile != "" && o.RecordSize > 0:
		return cmdutil.Usagef("--record-size and --payload-file are mutually exclusive")
	case o.PayloadFile == "" && o.RecordSize <= 0:
		return cmdutil.Usagef("--record-size must be positive, got %d", o.RecordSize)
	}
	_, acksAll, err := cmdutil.ParseAcks(o.Acks)
	if err != nil {
		return err
	}
	if _, err := cmdutil.ParseCompression(o.Compression); err != nil {
		return err
	}
	if o.Throughput == 0 {
		return cmdutil.Usagef("--throughput must be positive, or -1 for no cap")
	}
	if o.BatchMaxBytes < 512 || o.BatchMaxBytes > maxBatchMaxBytes {
		return cmdutil.Usagef("--batch-max-bytes must be between 512 and %d, got %d", maxBatchMaxBytes, o.BatchMaxBytes)
	}
	if o.Linger < 0 || o.Linger > time.Minute {
		return cmdutil.Usagef("--linger must be between 0 and 1m, got %s", o.Linger)
	}
	if o.MaxInFlight < 0 {
		return cmdutil.Usagef("--max-in-flight must not be negative, got %d", o.MaxInFlight)
	}
	if o.Idempotent != nil && *o.Idempotent && !acksAll {
		return cmdutil.Usagef("--idempotent requires --acks all")
	}
	if o.Transactional {
		if !o.idempotent() {
			return cmdutil.Usagef("--transactional needs an idempotent producer (--acks all)")
		}
		if o.TransactionSize <= 0 {
			return cmdutil.Usagef("--transaction-size must be positive, got %d", o.TransactionSize)
		}
	}
	if o.idempotent() && o.MaxInFlight > 0 {
		return cmdutil.Usagef("--max-in-flight applies to non-idempotent producers only (use --idempotent=false)")
	}
	if err := o.Output.Validate(); err != nil {
		return err
	}
	if o.Partitions == 0 || o.Partitions < -1 {
		return cmdutil.Usagef("--partitions must be positive, or -1 for the broker default")
	}
	if o.ReplicationFactor == 0 || o.ReplicationFactor < -1 {
		return cmdutil.Usagef("--replication-factor must be positive, or -1 for the broker default")
	}
	return nil
}

func (o *ProduceOptions) idempotent() bool {
	if o.Idempotent != nil {
		return *o.Idempotent
	}
	_, possible, _ := cmdutil.ParseAcks(o.Acks)
	return possible
}

// clientOpts turns validated options into producer settings.
func (o *ProduceOptions) clientOpts() []kgo.Opt {
	acks, _, _ := cmdutil.ParseAcks(o.Acks)
	codec, _ := cmdutil.ParseCompression(o.Compression)
	opts := []kgo.Opt{
		kgo.DefaultProduceTopic(o.Topic),
		kgo.RequiredAcks(acks),
		kgo.ProducerBatchCompression(codec),
		kgo.ProducerBatchMaxBytes(o.BatchMaxBytes),
		kgo.ProducerLinger(o.Linger),
	}
	if o.Transactional {
		opts = append(opts, kgo.TransactionalID(o.TransactionalID))
	}
	if !o.idempotent() {
		opts = append(opts, kgo.DisableIdempotentWrite())
		if o.MaxInFlight > 0 {
			opts = append(opts, kgo.MaxProduceRequestsInflightPerBroker(o.MaxInFlight))
		}
	}
	return opts
}

// payloads returns the values to send: one random value of RecordSize bytes
// reused for every record, or the lines of PayloadFile.
func (o *ProduceOptions) payloads() ([][]byte, error) {
	if o.PayloadFile == "" {
		v := make([]byte, o.RecordSize)
		for i := range v {
			v[i] = byte('A' + rand.IntN(26))
		}
		return [][]byte{v}, nil
	}
	b, err := os.ReadFile(o.PayloadFile)
	if err != nil {
		return nil, cmdutil.Usagef("reading --payload-file: %v", err)
	}
	var out [][]byte
	for _, line := range bytes.Split(b, []byte("\n")) {
		if len(line) > 0 {
			out = append(out, line)
		}
	}
	if len(out) == 0 {
		return nil, cmdutil.Usagef("--payload-file %s holds no payloads (one per line)", o.PayloadFile)
	}
	return out, nil
}

// RunProduce sends NumRecords records to Topic, creating it first if it is
// missing, and prints the summary.
func RunProduce(ctx context.Context, f *cmdutil.Factory, o *ProduceOptions) error {
	if err := o.validate(); err != nil {
		return err
	}
	payloads, err := o.payloads()
	if err != nil {
		return err
	}
	if err := ensureTopic(ctx, f, o.Topic, o.Partitions, o.ReplicationFactor); err != nil {
		return err
	}
	if o.Transactional && o.TransactionalID == "" {
		o.TransactionalID = fmt.Sprintf("ktool-perf-%d-%d", os.Getpid(), time.Now().UnixNano())
	}
	cl, err := f.Client(o.clientOpts()...)
	if err != nil {
		return err
	}
	defer cl.Close()

	res, err := produce(ctx, f, cl, o, payloads)
	if err != nil {
		return err
	}
	return printResult(f.IO.Out, &o.Output, res, "latency")
}

// producer tracks acknowledgements; promises may run concurrently with the
// send loop, so everything here is atomic or under mu.
type producer struct {
	acked, ackedBytes atomic.Int64
	failed            atomic.Bool

	mu       sync.Mutex
	firstErr error
	hist     *hdrhistogram.Histogram
}

func (p *producer) ack(d time.Duration, size int, err error) {
	if err != nil {
		p.mu.Lock()
		if p.firstErr == nil {
			p.firstErr = err
		}
		p.mu.Unlock()
		p.failed.Store(true)
		return
	}
	p.mu.Lock()
	recordLatency(p.hist, d)
	p.mu.Unlock()
	p.acked.Add(1)
	p.ackedBytes.Add(int64(size))
}

func produce(ctx context.Context, f *cmdutil.Factory, cl *kgo.Client, o *ProduceOptions, payloads [][]byte) (*Result, error) {
	c := o.clock
	if c == nil {
		c = realClock{}
	}
	p := &producer{hist: newHistogram()}
	prog := maybeProgress(f, "produced", o.NumRecords, func() (int64, int64) {
		return p.acked.Load(), p.ackedBytes.Load()
	})
	defer prog.stop()

	start := time.Now()
	thr := newThrottle(o.Throughput, c)
	txns := int64(0)
	for i := int64(0); i < o.NumRecords && !p.failed.Load(); i++ {
		if err := thr.wait(ctx, i); err != nil {
			return nil, err
		}
		if o.Transactional && i%o.TransactionSize == 0 {
			if i > 0 {
				if err := commitTxn(ctx, cl); err != nil {
					return nil, err
				}
				txns++
			}
			if err := cl.BeginTransaction(); err != nil {
				return nil, err
			}
		}
		v := payloads[0]
		if len(payloads) > 1 {
			v = payloads[rand.IntN(len(payloads))]
		}
		sent := time.Now()
		cl.Produce(ctx, &kgo.Record{Value: v}, func(_ *kgo.Record, err error) {
			p.ack(time.Since(sent), len(v), err)
		})
	}
	if o.Transactional && !p.failed.Load() {
		if err := commitTxn(ctx, cl); err != nil {
			return nil, err
		}
		txns++
	}
	if err := cl.Flush(ctx); err != nil {
		return nil, err
	}
	elapsed := time.Since(start)
	prog.stop()

	p.mu.Lock()
	defer p.mu.Unlock()
	if p.firstErr != nil {
		if errors.Is(p.firstErr, context.Canceled) && ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, fmt.Errorf("producing to %s failed after %d acknowledged records: %w", o.Topic, p.acked.Load(), p.firstErr)
	}
	res := newResult(p.acked.Load(), p.ackedBytes.Load(), elapsed)
	res.Latency = summarize(p.hist)
	res.Transactions = txns
	return res, nil
}

// commitTxn flushes the open transaction's records and commits it.
func commitTxn(ctx context.Context, cl *kgo.Client) error {
	if err := cl.Flush(ctx); err != nil {
		return err
	}
	if err := cl.EndTransaction(ctx, kgo.TryCommit); err != nil {
		return fmt.Errorf("committing a transaction: %w", err)
	}
	return nil
}

func newProduceCommand(f *cmdutil.Factory) *cobra.Command {
	o := &ProduceOptions{}
	var idempotent bool
	cmd := &cobra.Command{
		Use:   "produce --topic TOPIC",
		Short: "Produce records as fast as allowed and report throughput and latency",
		Long: `Produce --num-records records to a topic and report records/s, MB/s and the
latency of each record from the produce call to its acknowledgement
(avg, p50, p99, p99.9, max). The topic is created with --partitions and
--replication-factor if it does not exist. Progress is shown on stderr when
stdout is a terminal. --transactional produces in transactions of
--transaction-size records, each committed before the next begins; the
commits count in the elapsed time.`,
		Example: `  ktool perf produce --topic bench --num-records 1000000 --record-size 100 --acks 1
  ktool perf produce --topic bench --throughput 5000 --compression zstd -o json
  ktool perf produce --topic bench --transactional --transaction-size 10000`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if cmd.Flags().Changed("idempotent") {
				o.Idempotent = &idempotent
			}
			if o.PayloadFile != "" && !cmd.Flags().Changed("record-size") {
				o.RecordSize = 0
			}
			if o.idempotent() && !cmd.Flags().Changed("max-in-flight") {
				o.MaxInFlight = 0
			}
			return RunProduce(cmd.Context(), f, o)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&o.Topic, "topic", "", "topic to produce to (required)")
	fl.Int64Var(&o.NumRecords, "num-records", 1_000_000, "number of records to produce")
	fl.IntVar(&o.RecordSize, "record-size", 100, "value size in bytes (exclusive with --payload-file)")
	fl.StringVar(&o.PayloadFile, "payload-file", "", "file of newline-separated payloads, chosen at random per record")
	fl.StringVar(&o.Acks, "acks", "all", "required acks: all (-1), 1 or 0")
	fl.StringVar(&o.Compression, "compression", "none", "batch compression: none, gzip, snappy, lz4 or zstd")
	fl.Float64Var(&o.Throughput, "throughput", -1, "cap on records per second, -1 for no cap")
	fl.Int32Var(&o.BatchMaxBytes, "batch-max-bytes", 1_000_012, "largest record batch in bytes")
	fl.DurationVar(&o.Linger, "linger", 10*time.Millisecond, "how long a partition waits for more records before sending")
	fl.IntVar(&o.MaxInFlight, "max-in-flight", 5, "produce requests in flight per broker; idempotent producers always use 5")
	fl.BoolVar(&idempotent, "idempotent", true, "idempotent writes (needs --acks all; off by default with --acks 1 or 0)")
	fl.BoolVar(&o.Transactional, "transactional", false, "produce in transactions of --transaction-size records, each committed")
	fl.Int64Var(&o.TransactionSize, "transaction-size", 10000, "records per transaction with --transactional")
	fl.StringVar(&o.TransactionalID, "transactional-id", "", "transactional id with --transactional (default: a new one per run)")
	fl.Int32Var(&o.Partitions, "partitions", -1, "partitions when creating the topic, -1 for the broker default")
	fl.Int16Var(&o.ReplicationFactor, "replication-factor", -1, "replication factor when creating the topic, -1 for the broker default")
	_ = cmd.MarkFlagRequired("topic")
	_ = cmd.RegisterFlagCompletionFunc("topic", cmdutil.CompleteTopics(f))
	o.Output.Register(cmd)
	for name, values := range map[string][]string{
		"acks":        {"all", "1", "0"},
		"compression": {"none", "gzip", "snappy", "lz4", "zstd"},
	} {
		_ = cmd.RegisterFlagCompletionFunc(name, cobra.FixedCompletions(values, cobra.ShellCompDirectiveNoFileComp))
	}
	return cmd
}
