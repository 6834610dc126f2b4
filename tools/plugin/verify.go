package plugin

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"maps"
	"reflect"
	"slices"
	"strconv"
	"time"

	"github.com/spf13/cobra"

	"github.com/ktoolhq/ktool/assignor"
	"github.com/ktoolhq/ktool/internal/batch"
	"github.com/ktoolhq/ktool/plugins"
	"github.com/ktoolhq/ktool/plugins/codec"
	"github.com/ktoolhq/ktool/tools/cmdutil"
)

// VerifyOptions are the inputs of `ktool plugin verify`.
type VerifyOptions struct {
	Factory *cmdutil.Factory
	Output  cmdutil.OutputFlag
	dirFlag

	Name     string
	Kind     string
	Duration time.Duration
	// Codecs: how many bytes of sample records, cut into batches of BatchBytes.
	SampleBytes int
	BatchBytes  int
	// Assignors: the sample group.
	Members, Topics, Partitions int
}

// VerifyResult is what `ktool plugin verify` reports.
type VerifyResult struct {
	Plugin   plugins.Info    `json:"plugin" yaml:"plugin"`
	Codec    *CodecResult    `json:"codec,omitempty" yaml:"codec,omitempty"`
	Assignor *AssignorResult `json:"assignor,omitempty" yaml:"assignor,omitempty"`
}

// CodecResult is the outcome of verifying a codec plugin.
type CodecResult struct {
	Batches         int     `json:"batches" yaml:"batches"`
	InputBytes      int     `json:"input_bytes" yaml:"input_bytes"`
	CompressedBytes int     `json:"compressed_bytes" yaml:"compressed_bytes"`
	Ratio           float64 `json:"ratio" yaml:"ratio"`
	// Interoperable: ktool's built-in codec for the same Kafka id reads what
	// the plugin wrote and the plugin reads what the built-in wrote.
	Interoperable  bool    `json:"interoperable" yaml:"interoperable"`
	CompressMBps   float64 `json:"compress_mb_per_sec" yaml:"compress_mb_per_sec"`
	DecompressMBps float64 `json:"decompress_mb_per_sec" yaml:"decompress_mb_per_sec"`
}

// AssignorResult is the outcome of verifying an assignor plugin.
type AssignorResult struct {
	Members           int     `json:"members" yaml:"members"`
	Partitions        int     `json:"partitions" yaml:"partitions"`
	MaxPerMember      int     `json:"max_per_member" yaml:"max_per_member"`
	MinPerMember      int     `json:"min_per_member" yaml:"min_per_member"`
	AssignmentsPerSec float64 `json:"assignments_per_sec" yaml:"assignments_per_sec"`
}

// NewVerifyCommand returns `ktool plugin verify NAME`.
func NewVerifyCommand(f *cmdutil.Factory, runF func(context.Context, *VerifyOptions) error) *cobra.Command {
	opts := &VerifyOptions{Factory: f}
	cmd := &cobra.Command{
		Use:               "verify NAME",
		ValidArgsFunction: cmdutil.CompleteFirstArg(cmdutil.CompletePlugins(f)),
		Short:             "Check a codec or assignor plugin with sample data and measure its speed",
		Long: `Verify starts the plugin and checks it:

  codec     compresses sample record batches and decompresses them again, checks
            that ktool's built-in codec for the same Kafka codec id reads what
            the plugin wrote (and the other way round), then reports MB/s.
  assignor  assigns a sample group, checks that every partition goes to exactly
            one subscribed member and that the same input gives the same
            output, then reports assignments per second.

A failed check exits with status 1.`,
		Example: `  ktool plugin verify zstd
  ktool plugin verify range --members 1000 --partitions 100
  ktool plugin verify my-codec --plugin-dir ./plugins -o json`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.Name = args[0]
			if err := opts.Output.Validate(); err != nil {
				return err
			}
			if opts.Kind != "" && opts.Kind != plugins.KindCodec && opts.Kind != plugins.KindAssignor {
				return cmdutil.Usagef("--kind must be %s or %s", plugins.KindAssignor, plugins.KindCodec)
			}
			if opts.Duration <= 0 || opts.SampleBytes <= 0 || opts.BatchBytes <= 0 || opts.Members <= 0 || opts.Topics <= 0 || opts.Partitions <= 0 {
				return cmdutil.Usagef("--duration, --sample-bytes, --batch-bytes, --members, --topics and --partitions must be positive")
			}
			if runF != nil {
				return runF(cmd.Context(), opts)
			}
			return runVerify(cmd.Context(), opts)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&opts.Kind, "kind", "", "plugin kind, assignor or codec (needed only when both exist with NAME)")
	fl.DurationVar(&opts.Duration, "duration", 2*time.Second, "how long to measure speed")
	fl.IntVar(&opts.SampleBytes, "sample-bytes", 8<<20, "codecs: bytes of sample records")
	fl.IntVar(&opts.BatchBytes, "batch-bytes", 1<<20, "codecs: bytes per sample batch")
	fl.IntVar(&opts.Members, "members", 100, "assignors: members in the sample group")
	fl.IntVar(&opts.Topics, "topics", 10, "assignors: topics every member subscribes to")
	fl.IntVar(&opts.Partitions, "partitions", 100, "assignors: partitions per topic")
	_ = cmd.RegisterFlagCompletionFunc("kind", cobra.FixedCompletions([]string{plugins.KindAssignor, plugins.KindCodec}, cobra.ShellCompDirectiveNoFileComp))
	opts.dirFlag.register(cmd)
	opts.Output.Register(cmd)
	return cmd
}

func runVerify(ctx context.Context, o *VerifyOptions) error {
	cat := o.catalog()
	defer cat.Close()
	kind := o.Kind
	if kind == "" {
		isCodec, isAssignor := cat.Has(plugins.KindCodec, o.Name), cat.Has(plugins.KindAssignor, o.Name)
		switch {
		case isCodec && isAssignor:
			return cmdutil.Usagef("both an assignor and a codec are named %q: pass --kind", o.Name)
		case isCodec:
			kind = plugins.KindCodec
		case isAssignor:
			kind = plugins.KindAssignor
		default:
			return fmt.Errorf("no assignor or codec plugin named %q (built in or as ktool-KIND-%s in %s)", o.Name, o.Name, cat.Dir())
		}
	}
	info, err := cat.Info(ctx, kind, o.Name)
	if err != nil {
		return err
	}
	res := VerifyResult{Plugin: info}
	if kind == plugins.KindCodec {
		c, err := cat.Codec(ctx, o.Name)
		if err != nil {
			return err
		}
		if res.Codec, err = verifyCodec(ctx, c, o); err != nil {
			return fmt.Errorf("codec %s (%s) failed verification: %w", o.Name, info.Path, err)
		}
	} else {
		a, err := cat.Assignor(ctx, o.Name)
		if err != nil {
			return err
		}
		if res.Assignor, err = verifyAssignor(ctx, a, o); err != nil {
			return fmt.Errorf("assignor %s (%s) failed verification: %w", o.Name, info.Path, err)
		}
	}
	w := o.Factory.IO.Out
	return o.Output.Print(w, res, func() error { return writeVerify(w, res) })
}

// sampleBatches builds records sections of about batchBytes each, in Kafka's
// record format with keys, JSON-like values and a header, so ratios and
// speeds look like those of real traffic.
func sampleBatches(total, batchBytes int) [][]byte {
	var out [][]byte
	var section []byte
	delta := int32(0)
	for i := 0; total > 0; i++ {
		key := []byte("user-" + strconv.Itoa(i%5000))
		value := fmt.Appendf(nil, `{"id":%d,"user":"user-%d","event":"%s","amount":%d.%02d,"ts":%d}`,
			i, i%5000, []string{"view", "click", "purchase", "refund"}[i%4], i*7%1000, i%100, 1700000000000+int64(i)*13)
		headers := []batch.RecordHeader{{Key: "source", Value: []byte("verify")}}
		before := len(section)
		section = batch.AppendRecord(section, int64(i%1000), delta, key, value, headers)
		total -= len(section) - before
		delta++
		if len(section) >= batchBytes || total <= 0 {
			out = append(out, section)
			section, delta = nil, 0
		}
	}
	return out
}

func verifyCodec(ctx context.Context, c codec.Codec, o *VerifyOptions) (*CodecResult, error) {
	in := sampleBatches(o.SampleBytes, o.BatchBytes)
	res := &CodecResult{Batches: len(in)}
	for _, b := range in {
		res.InputBytes += len(b)
	}
	comp, err := c.Compress(ctx, in)
	if err != nil {
		return nil, fmt.Errorf("compress: %w", err)
	}
	for _, b := range comp {
		res.CompressedBytes += len(b)
	}
	res.Ratio = float64(res.InputBytes) / float64(max(res.CompressedBytes, 1))
	back, err := c.Decompress(ctx, comp, 0)
	if err != nil {
		return nil, fmt.Errorf("decompress: %w", err)
	}
	if err := sameSections(back, in); err != nil {
		return nil, fmt.Errorf("round trip: %w", err)
	}
	builtin, err := codec.NewSet(codec.Builtins()...).CodecByID(ctx, c.ID())
	if err != nil {
		return nil, err
	}
	if theirs, err := builtin.Decompress(ctx, comp, 0); err != nil || sameSections(theirs, in) != nil {
		return nil, fmt.Errorf("built-in %s cannot read what the plugin wrote for Kafka codec id %d: %v", builtin.Name(), c.ID(), err)
	}
	ours, err := builtin.Compress(ctx, in)
	if err != nil {
		return nil, err
	}
	if got, err := c.Decompress(ctx, ours, 0); err != nil || sameSections(got, in) != nil {
		return nil, fmt.Errorf("the plugin cannot read what built-in %s wrote for Kafka codec id %d: %v", builtin.Name(), c.ID(), err)
	}
	res.Interoperable = true

	if res.CompressMBps, err = measure(ctx, o.Duration/2, res.InputBytes, func() error {
		_, err := c.Compress(ctx, in)
		return err
	}); err != nil {
		return nil, err
	}
	if res.DecompressMBps, err = measure(ctx, o.Duration/2, res.InputBytes, func() error {
		_, err := c.Decompress(ctx, comp, 0)
		return err
	}); err != nil {
		return nil, err
	}
	return res, nil
}

func sameSections(got, want [][]byte) error {
	if len(got) != len(want) {
		return fmt.Errorf("got %d batches back, want %d", len(got), len(want))
	}
	for i := range want {
		if !bytes.Equal(got[i], want[i]) {
			return fmt.Errorf("batch %d came back different (%d bytes, want %d)", i, len(got[i]), len(want[i]))
		}
	}
	return nil
}

// measure runs fn for about d (at least once) and returns MB/s for n bytes a run.
func measure(ctx context.Context, d time.Duration, n int, fn func() error) (float64, error) {
	runs := 0
	start := time.Now()
	for runs == 0 || time.Since(start) < d {
		if err := ctx.Err(); err != nil {
			return 0, err
		}
		if err := fn(); err != nil {
			return 0, err
		}
		runs++
	}
	return float64(n) * float64(runs) / 1e6 / time.Since(start).Seconds(), nil
}

func verifyAssignor(ctx context.Context, a assignor.Assignor, o *VerifyOptions) (*AssignorResult, error) {
	topics := make([]string, o.Topics)
	partitions := make(map[string]int32, o.Topics)
	for i := range topics {
		topics[i] = fmt.Sprintf("topic-%03d", i)
		partitions[topics[i]] = int32(o.Partitions)
	}
	members := make([]assignor.Member, o.Members)
	for i := range members {
		members[i] = assignor.Member{ID: fmt.Sprintf("member-%05d", i), Topics: topics, Generation: -1,
			UserData: a.UserData(nil, -1)}
	}
	first, err := a.Assign(members, partitions)
	if err != nil {
		return nil, fmt.Errorf("assign: %w", err)
	}
	res := &AssignorResult{Members: o.Members, Partitions: o.Topics * o.Partitions}
	if res.MinPerMember, res.MaxPerMember, err = checkAssignment(first, members, partitions); err != nil {
		return nil, err
	}
	reversed := slices.Clone(members)
	slices.Reverse(reversed)
	again, err := a.Assign(reversed, partitions)
	if err != nil {
		return nil, fmt.Errorf("assign: %w", err)
	}
	if !reflect.DeepEqual(normalize(first), normalize(again)) {
		return nil, fmt.Errorf("the same group in another member order got a different assignment")
	}
	runs := 0
	start := time.Now()
	for runs == 0 || time.Since(start) < o.Duration {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		if _, err := a.Assign(members, partitions); err != nil {
			return nil, fmt.Errorf("assign: %w", err)
		}
		runs++
	}
	res.AssignmentsPerSec = float64(runs) / time.Since(start).Seconds()
	return res, nil
}

// normalize drops empty topic lists so equal assignments compare equal.
func normalize(a assignor.Assignment) assignor.Assignment {
	out := make(assignor.Assignment, len(a))
	for m, ts := range a {
		out[m] = map[string][]int32{}
		for t, ps := range ts {
			if len(ps) > 0 {
				out[m][t] = ps
			}
		}
	}
	return out
}

// checkAssignment verifies that every partition goes to exactly one member
// subscribed to its topic and every member has an entry, and returns the
// fewest and most partitions a member got.
func checkAssignment(a assignor.Assignment, members []assignor.Member, partitions map[string]int32) (minN, maxN int, err error) {
	subscribed := map[string]map[string]bool{}
	for _, m := range members {
		subscribed[m.ID] = map[string]bool{}
		for _, t := range m.Topics {
			subscribed[m.ID][t] = true
		}
		if _, ok := a[m.ID]; !ok {
			return 0, 0, fmt.Errorf("member %s has no entry in the assignment", m.ID)
		}
	}
	owner := map[string]map[int32]string{}
	minN = -1
	for _, m := range slices.Sorted(maps.Keys(a)) {
		if subscribed[m] == nil {
			return 0, 0, fmt.Errorf("assignment names unknown member %s", m)
		}
		n := 0
		for t, ps := range a[m] {
			if !subscribed[m][t] && len(ps) > 0 {
				return 0, 0, fmt.Errorf("member %s got topic %s it does not subscribe to", m, t)
			}
			for _, p := range ps {
				if p < 0 || p >= partitions[t] {
					return 0, 0, fmt.Errorf("member %s got %s/%d, which does not exist", m, t, p)
				}
				if owner[t] == nil {
					owner[t] = map[int32]string{}
				}
				if prev, dup := owner[t][p]; dup {
					return 0, 0, fmt.Errorf("%s/%d went to both %s and %s", t, p, prev, m)
				}
				owner[t][p] = m
				n++
			}
		}
		if minN < 0 || n < minN {
			minN = n
		}
		maxN = max(maxN, n)
	}
	for t, n := range partitions {
		if got := len(owner[t]); got != int(n) {
			return 0, 0, fmt.Errorf("topic %s: %d of %d partitions assigned", t, got, n)
		}
	}
	return minN, maxN, nil
}

func writeVerify(w io.Writer, r VerifyResult) error {
	p := r.Plugin
	where := "external"
	if p.Builtin {
		where = "built-in"
	}
	if _, err := fmt.Fprintf(w, "%s %s %s (%s, %s)\n", p.Kind, p.Name, p.Version, where, p.Path); err != nil {
		return err
	}
	var err error
	if c := r.Codec; c != nil {
		_, err = fmt.Fprintf(w, "Kafka codec id:  %d\nround trip:      ok (%d batches, %d bytes)\ninteroperable:   yes (built-in %s reads it and writes what it reads)\nratio:           %.2f (%d -> %d bytes)\ncompress:        %.1f MB/s\ndecompress:      %.1f MB/s\n",
			p.CodecID, c.Batches, c.InputBytes, codec.NameForID(p.CodecID), c.Ratio, c.InputBytes, c.CompressedBytes, c.CompressMBps, c.DecompressMBps)
	}
	if a := r.Assignor; a != nil {
		_, err = fmt.Fprintf(w, "cooperative:     %v\nassignment:      ok (%d members, %d partitions, %d to %d per member)\nspeed:           %.1f assignments/s\n",
			p.Cooperative, a.Members, a.Partitions, a.MinPerMember, a.MaxPerMember, a.AssignmentsPerSec)
	}
	return err
}
