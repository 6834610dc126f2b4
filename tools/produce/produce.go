package produce

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"time"

	"github.com/spf13/cobra"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/ktoolhq/ktool/tools/cmdutil"
)

// Options are the inputs of `ktool produce`.
type Options struct {
	Factory *cmdutil.Factory

	Topic        string
	KeySeparator string
	Headers      []string
	Partition    int32
	Acks         string
	Compression  string
	Linger       time.Duration
	Verbose      bool
}

// NewCommand returns `ktool produce`.
func NewCommand(f *cmdutil.Factory, runF func(context.Context, *Options) error) *cobra.Command {
	opts := &Options{Factory: f}
	cmd := &cobra.Command{
		Use:               "produce TOPIC",
		ValidArgsFunction: cmdutil.CompleteFirstArg(cmdutil.CompleteTopics(f)),
		Short:             "Send each line of standard input as a record",
		Long: `Read standard input and send each line as one record to TOPIC. With
--key-separator each line is KEY<sep>VALUE. Nothing is printed on success
unless -v; the command exits 1 if any record was not delivered.`,
		Example: `  echo hello | ktool produce orders
  printf 'k1:v1\nk2:v2\n' | ktool produce orders --key-separator : -H source=cli
  ktool produce orders --acks 1 --compression zstd --linger 50ms < events.txt`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.Topic = args[0]
			if runF != nil {
				return runF(cmd.Context(), opts)
			}
			return run(cmd.Context(), opts)
		},
	}
	fl := cmd.Flags()
	fl.StringVarP(&opts.KeySeparator, "key-separator", "K", "", "split each line into key and value at the first occurrence of this string")
	fl.StringArrayVarP(&opts.Headers, "header", "H", nil, "record header key=value (repeatable)")
	fl.Int32VarP(&opts.Partition, "partition", "p", -1, "send every record to this partition (-1: by key hash, else spread)")
	fl.StringVar(&opts.Acks, "acks", "all", "acknowledgement: all (-1), leader (1) or none (0)")
	fl.StringVarP(&opts.Compression, "compression", "z", "none", "batch compression: none, gzip, snappy, lz4 or zstd")
	fl.DurationVar(&opts.Linger, "linger", 0, "how long to wait to fill a batch")
	fl.BoolVarP(&opts.Verbose, "verbose", "v", false, "print each record's partition and offset to standard error")
	return cmd
}

// clientOpts turns the flags into producer options.
func (o *Options) clientOpts() ([]kgo.Opt, error) {
	opts := []kgo.Opt{kgo.DefaultProduceTopic(o.Topic), kgo.RecordDeliveryTimeout(o.Factory.ClientTimeout)}
	acks, idempotent, err := cmdutil.ParseAcks(o.Acks)
	if err != nil {
		return nil, err
	}
	opts = append(opts, kgo.RequiredAcks(acks))
	if !idempotent {
		opts = append(opts, kgo.DisableIdempotentWrite())
	}
	codec, err := cmdutil.ParseCompression(o.Compression)
	if err != nil {
		return nil, err
	}
	opts = append(opts, kgo.ProducerBatchCompression(codec))
	if o.Linger < 0 {
		return nil, cmdutil.Usagef("--linger must not be negative")
	}
	if o.Linger > 0 {
		opts = append(opts, kgo.ProducerLinger(o.Linger))
	}
	if o.Partition >= 0 {
		opts = append(opts, kgo.RecordPartitioner(kgo.ManualPartitioner()))
	} else if o.Partition != -1 {
		return nil, cmdutil.Usagef("--partition must be >= 0 (or -1 for the default partitioner)")
	}
	return opts, nil
}

func parseHeaders(hs []string) ([]kgo.RecordHeader, error) {
	var out []kgo.RecordHeader
	for _, h := range hs {
		k, v, ok := strings.Cut(h, "=")
		if !ok || k == "" {
			return nil, cmdutil.Usagef("header %q is not key=value", h)
		}
		out = append(out, kgo.RecordHeader{Key: k, Value: []byte(v)})
	}
	return out, nil
}

func run(ctx context.Context, o *Options) error {
	opts, err := o.clientOpts()
	if err != nil {
		return err
	}
	headers, err := parseHeaders(o.Headers)
	if err != nil {
		return err
	}
	cl, err := o.Factory.Client(opts...)
	if err != nil {
		return err
	}
	defer cl.Close()

	var (
		mu       sync.Mutex
		failed   int
		firstErr error
	)
	errOut := o.Factory.IO.ErrOut
	done := func(r *kgo.Record, err error) {
		mu.Lock()
		defer mu.Unlock()
		if err != nil {
			failed++
			if firstErr == nil {
				firstErr = err
			}
			return
		}
		if o.Verbose {
			fmt.Fprintf(errOut, "delivered to %s-%d@%d\n", r.Topic, r.Partition, r.Offset)
		}
	}

	lines := readLines(o.Factory.IO.In)
	sent, lineNo := 0, 0
	var readErr error
read:
	for {
		var in lineOrErr
		var ok bool
		select {
		case <-ctx.Done():
			// Ctrl-C ends the input; what was read is still delivered.
			break read
		case in, ok = <-lines:
		}
		if !ok {
			break
		}
		if in.err != nil {
			readErr = fmt.Errorf("reading standard input: %w", in.err)
			break
		}
		lineNo++
		r := &kgo.Record{Value: []byte(in.line), Headers: headers, Partition: o.Partition}
		if o.KeySeparator != "" {
			k, v, ok := strings.Cut(in.line, o.KeySeparator)
			if !ok {
				readErr = fmt.Errorf("line %d has no key separator %q", lineNo, o.KeySeparator)
				break
			}
			r.Key, r.Value = []byte(k), []byte(v)
		}
		cl.Produce(context.WithoutCancel(ctx), r, done)
		sent++
	}
	// Flush ends: every record is delivered or fails after the delivery timeout.
	if err := cl.Flush(context.WithoutCancel(ctx)); err != nil {
		return fmt.Errorf("waiting for deliveries: %w", err)
	}
	mu.Lock()
	defer mu.Unlock()
	if failed > 0 {
		return o.Factory.ClusterError(fmt.Sprintf("%d of %d records to %s were not delivered", failed, sent, o.Topic), firstErr)
	}
	return readErr
}

type lineOrErr struct {
	line string
	err  error
}

// readLines delivers the lines of r (without their line ending) until EOF or
// a read error. Reading happens in its own goroutine so that the caller can
// stop waiting for input when its context ends.
func readLines(r io.Reader) <-chan lineOrErr {
	ch := make(chan lineOrErr, 256)
	go func() {
		defer close(ch)
		rd := bufio.NewReaderSize(r, 1<<16)
		for {
			line, err := rd.ReadString('\n')
			if err != nil && !errors.Is(err, io.EOF) {
				ch <- lineOrErr{err: err}
				return
			}
			if line != "" {
				ch <- lineOrErr{line: strings.TrimSuffix(strings.TrimSuffix(line, "\n"), "\r")}
			}
			if err != nil {
				return
			}
		}
	}()
	return ch
}
