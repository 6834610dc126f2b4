package consume

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"sync"
	"syscall"

	"github.com/spf13/cobra"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/ktoolhq/ktool/assignor"
	"github.com/ktoolhq/ktool/plugins"
	"github.com/ktoolhq/ktool/tools/cmdutil"
)

// Options are the inputs of `ktool consume`.
type Options struct {
	Factory *cmdutil.Factory

	Topic      string
	Offset     string
	Partitions []int32
	Count      int
	Group      string
	Assignor   string
	PluginDir  string
	Format     string
	ExitAtEnd  bool
	Isolation  string // read_uncommitted or read_committed
}

// NewCommand returns `ktool consume`.
func NewCommand(f *cmdutil.Factory, runF func(context.Context, *Options) error) *cobra.Command {
	opts := &Options{Factory: f}
	cmd := &cobra.Command{
		Use:               "consume TOPIC",
		ValidArgsFunction: cmdutil.CompleteFirstArg(cmdutil.CompleteTopics(f)),
		Short:             "Print records of a topic (kcat-style -f formats)",
		Long: `Print records of TOPIC to standard output, one formatted record at a time.

--offset: beginning, end, N (an absolute offset), -N (N records before the
end of each partition) or @MS (the first record at or after epoch milliseconds
MS). With --group the committed offsets win and --offset applies where the
group has none.

--assignor picks the group's partition assignor, a plugin: the built-ins
range, roundrobin, sticky and cooperative-sticky, or an external assignor,
an executable named ktool-assignor-NAME in the plugin directory (see
` + "`ktool plugin list`" + `). Members of one group must agree on the assignor's name.

--isolation read_committed reads only committed transactional records: it
stops at each partition's last stable offset (an open transaction holds it)
and skips records of aborted transactions; the end of -e and -N is then the
last stable offset. read_uncommitted (the default) reads everything below the
high watermark. Transaction markers are never printed.

-f format (kcat's): %t topic, %p partition, %o offset, %k key, %s value,
%T timestamp (ms), %h headers (k=v,k=v), %K key length, %S value length,
%% a percent sign; \n \t escapes. Default "%s\n".`,
		Example: `  ktool consume orders -e
  ktool consume orders --offset -10 -f '%p@%o %k=%s\n'
  ktool consume orders --group audit --assignor cooperative-sticky
  ktool consume orders --offset @1700000000000 -c 1
  ktool consume payments --isolation read_committed -e`,
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
	fl.StringVarP(&opts.Offset, "offset", "o", "beginning", "where to start: beginning, end, N, -N or @timestamp-ms")
	fl.Int32SliceVarP(&opts.Partitions, "partition", "p", nil, "only these partitions (repeatable or comma-separated)")
	fl.IntVarP(&opts.Count, "count", "c", 0, "exit after this many records (0: no limit)")
	fl.StringVarP(&opts.Group, "group", "g", "", "consume as a member of this consumer group, committing offsets")
	_ = cmd.RegisterFlagCompletionFunc("group", cmdutil.CompleteGroups(f))
	fl.StringVar(&opts.Assignor, "assignor", "range", "group partition assignor plugin: range, roundrobin, sticky, cooperative-sticky or an external one")
	fl.StringVar(&opts.PluginDir, "plugin-dir", "", "directory of external plugins (env KTOOL_PLUGIN_DIR; default "+plugins.DefaultDir()+")")
	fl.StringVarP(&opts.Format, "format", "f", `%s\n`, "output format (see above)")
	fl.BoolVarP(&opts.ExitAtEnd, "exit", "e", false, "exit when every partition has been read to its end")
	fl.StringVar(&opts.Isolation, "isolation", "read_uncommitted", "read_uncommitted or read_committed (only committed transactions, up to the last stable offset)")
	_ = cmd.RegisterFlagCompletionFunc("isolation", cobra.FixedCompletions([]string{"read_uncommitted", "read_committed"}, cobra.ShellCompDirectiveNoFileComp))
	return cmd
}

// Balancer returns the group balancer for an --assignor name: the assignor
// plugin of that name from the catalog, started if need be.
func Balancer(ctx context.Context, cat *plugins.Catalog, name string) (kgo.GroupBalancer, error) {
	if n := strings.ToLower(name); n == "round-robin" {
		name = "roundrobin"
	} else if _, builtin := assignor.ByName(n); builtin {
		name = n
	}
	if !cat.Has(plugins.KindAssignor, name) {
		return nil, cmdutil.Usagef("--assignor %q: no such assignor; available: %s", name, strings.Join(available(cat), ", "))
	}
	a, err := cat.Assignor(ctx, name)
	if err != nil {
		return nil, fmt.Errorf("starting assignor %q: %w", name, err)
	}
	return assignor.Balancer(a), nil
}

// available lists the assignors the catalog has: the built-ins and the
// external ones in its directory.
func available(cat *plugins.Catalog) []string {
	var names []string
	for _, a := range assignor.Builtins() {
		names = append(names, a.Name())
	}
	prefix := plugins.ExecutableName(plugins.KindAssignor, "")
	entries, _ := os.ReadDir(cat.Dir())
	for _, e := range entries {
		name, ok := strings.CutPrefix(e.Name(), prefix)
		if ok && name != "" && !slices.Contains(names, name) && cat.Has(plugins.KindAssignor, name) {
			names = append(names, name+" (in "+cat.Dir()+")")
		}
	}
	return names
}

type prepared struct {
	spec    OffsetSpec
	format  Format
	bal     kgo.GroupBalancer
	catalog *plugins.Catalog // serves bal; nil without a group
}

// prepare checks the options and, for a group, starts the assignor plugin;
// the caller closes p.catalog.
func (o *Options) prepare(ctx context.Context) (p prepared, err error) {
	if p.spec, err = ParseOffset(o.Offset); err != nil {
		return p, cmdutil.UsageError(err)
	}
	if p.format, err = ParseFormat(o.Format); err != nil {
		return p, cmdutil.UsageError(err)
	}
	if o.Count < 0 {
		return p, cmdutil.Usagef("--count must not be negative")
	}
	if o.Isolation == "" {
		o.Isolation = "read_uncommitted"
	}
	if o.Isolation != "read_uncommitted" && o.Isolation != "read_committed" {
		return p, cmdutil.Usagef("--isolation %q: read_uncommitted or read_committed", o.Isolation)
	}
	if o.Group != "" && len(o.Partitions) > 0 {
		return p, cmdutil.Usagef("--partition cannot be used with --group: the group assigns partitions")
	}
	for _, pt := range o.Partitions {
		if pt < 0 {
			return p, cmdutil.Usagef("--partition %d: partitions are numbered from 0", pt)
		}
	}
	if o.Group != "" {
		p.catalog = plugins.NewCatalog(plugins.Options{Dir: o.PluginDir})
		if p.bal, err = Balancer(ctx, p.catalog, o.Assignor); err != nil {
			p.catalog.Close()
			return prepared{}, err
		}
	}
	return p, nil
}

// positions are where reading starts and where the end was when it started.
type positions struct {
	next map[int32]int64
	end  map[int32]int64
}

// plan lists the partitions, their ends and the start positions the spec
// (and, for a group, the committed offsets) give.
func (o *Options) plan(ctx context.Context, spec OffsetSpec) (positions, error) {
	adm, err := o.Factory.Admin()
	if err != nil {
		return positions{}, err
	}
	defer adm.Close()
	rctx, cancel := o.Factory.RequestContext(ctx)
	defer cancel()
	m, err := cmdutil.Metadata(rctx, adm, o.Topic)
	if err != nil {
		return positions{}, o.Factory.ClusterError("reading metadata of "+o.Topic, err)
	}
	td := m.Topics[o.Topic]
	if errors.Is(td.Err, kerr.UnknownTopicOrPartition) {
		return positions{}, fmt.Errorf("topic %q does not exist (see `ktool topic list`)", o.Topic)
	}
	if td.Err != nil {
		return positions{}, fmt.Errorf("topic %q: %w", o.Topic, td.Err)
	}
	parts := o.Partitions
	if len(parts) == 0 {
		parts = td.Partitions.Numbers()
	}
	for _, p := range parts {
		if _, ok := td.Partitions[p]; !ok {
			return positions{}, cmdutil.Usagef("topic %q has no partition %d (it has %d)", o.Topic, p, len(td.Partitions))
		}
	}
	starts, err := adm.ListStartOffsets(rctx, o.Topic)
	if err != nil {
		return positions{}, o.Factory.ClusterError("listing start offsets", err)
	}
	listEnds := adm.ListEndOffsets
	if o.readCommitted() {
		listEnds = adm.ListCommittedOffsets // the last stable offsets
	}
	ends, err := listEnds(rctx, o.Topic)
	if err != nil {
		return positions{}, o.Factory.ClusterError("listing end offsets", err)
	}
	var atTime kadm.ListedOffsets
	if spec.Kind == "timestamp" {
		if atTime, err = adm.ListOffsetsAfterMilli(rctx, spec.Value, o.Topic); err != nil {
			return positions{}, o.Factory.ClusterError("listing offsets by time", err)
		}
	}
	var committed kadm.OffsetResponses
	if o.Group != "" {
		// A group that never committed may not exist yet.
		committed, err = adm.FetchOffsetsForTopics(rctx, o.Group, o.Topic)
		if err != nil && !errors.Is(err, kerr.GroupIDNotFound) {
			return positions{}, o.Factory.ClusterError("reading the committed offsets of group "+o.Group, err)
		}
	}
	pos := positions{next: map[int32]int64{}, end: map[int32]int64{}}
	for _, p := range parts {
		s, _ := starts.Lookup(o.Topic, p)
		e, _ := ends.Lookup(o.Topic, p)
		if s.Err != nil || e.Err != nil {
			return positions{}, fmt.Errorf("partition %d of %q has no readable offsets: %w", p, o.Topic, errors.Join(s.Err, e.Err))
		}
		t := int64(-1)
		if lo, ok := atTime.Lookup(o.Topic, p); ok && lo.Err == nil {
			t = lo.Offset
		}
		pos.end[p] = e.Offset
		pos.next[p] = spec.Resolve(s.Offset, e.Offset, t)
		if c, ok := committed.Lookup(o.Topic, p); ok && c.Err == nil && c.At >= 0 {
			pos.next[p] = c.At
		}
	}
	return pos, nil
}

func run(ctx context.Context, o *Options) error {
	prep, err := o.prepare(ctx)
	if err != nil {
		return err
	}
	if prep.catalog != nil {
		defer prep.catalog.Close()
	}
	pos, err := o.plan(ctx, prep.spec)
	if err != nil {
		return err
	}

	var mu sync.Mutex
	assigned := map[int32]bool{}
	// Markers come back too, so that the position moves past them (to the
	// end, with -e) though they are not printed.
	opts := []kgo.Opt{kgo.KeepControlRecords()}
	if o.readCommitted() {
		opts = append(opts, kgo.FetchIsolationLevel(kgo.ReadCommitted()))
	}
	if o.Group != "" {
		opts = append(opts,
			kgo.ConsumerGroup(o.Group), kgo.ConsumeTopics(o.Topic), kgo.Balancers(prep.bal),
			// Only printed records are committed: -c may stop mid-batch.
			kgo.AutoCommitMarks(),
			kgo.ConsumeResetOffset(prep.spec.Reset()),
			kgo.OnPartitionsAssigned(func(_ context.Context, _ *kgo.Client, m map[string][]int32) {
				mu.Lock()
				defer mu.Unlock()
				for _, p := range m[o.Topic] {
					assigned[p] = true
				}
			}),
			kgo.OnPartitionsRevoked(func(_ context.Context, _ *kgo.Client, m map[string][]int32) {
				mu.Lock()
				defer mu.Unlock()
				for _, p := range m[o.Topic] {
					delete(assigned, p)
				}
			}),
		)
	} else {
		offsets := map[int32]kgo.Offset{}
		for p, at := range pos.next {
			offsets[p] = kgo.NewOffset().At(at)
			assigned[p] = true
		}
		opts = append(opts, kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{o.Topic: offsets}))
	}
	// atEnd reports whether every partition being read has reached the end
	// it had when reading began.
	atEnd := func() bool {
		mu.Lock()
		defer mu.Unlock()
		if len(assigned) == 0 {
			return false
		}
		for p := range assigned {
			if pos.next[p] < pos.end[p] {
				return false
			}
		}
		return true
	}

	if o.ExitAtEnd && o.Group == "" && atEnd() {
		return nil
	}
	cl, err := o.Factory.Client(opts...)
	if err != nil {
		return err
	}
	defer cl.Close()
	if o.Group != "" {
		defer func() {
			cctx, cancel := o.Factory.RequestContext(context.WithoutCancel(ctx))
			defer cancel()
			if err := cl.CommitMarkedOffsets(cctx); err != nil {
				fmt.Fprintf(o.Factory.IO.ErrOut, "Warning: committing offsets of group %s: %v\n", o.Group, err)
			}
		}()
	}

	w := bufio.NewWriterSize(o.Factory.IO.Out, 1<<16)
	buf := make([]byte, 0, 4096)
	seen := 0
	lastErr := ""
	for {
		fetches := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			return quiet(w.Flush())
		}
		var fatal error
		fetches.EachError(func(t string, p int32, err error) {
			if errors.Is(err, kgo.ErrClientClosed) || errors.Is(err, context.Canceled) {
				fatal = err
				return
			}
			if msg := err.Error(); msg != lastErr {
				fmt.Fprintf(o.Factory.IO.ErrOut, "Warning: reading %s-%d: %v\n", t, p, err)
				lastErr = msg
			}
		})
		if fatal != nil {
			return quiet(w.Flush())
		}
		stop := false
		fetches.EachRecord(func(r *kgo.Record) {
			if stop {
				return
			}
			if r.Attrs.IsControl() {
				if o.Group != "" {
					cl.MarkCommitRecords(r)
				}
				mu.Lock()
				pos.next[r.Partition] = max(pos.next[r.Partition], r.Offset+1)
				mu.Unlock()
				return
			}
			buf = prep.format.Append(buf[:0], r)
			if _, err := w.Write(buf); err != nil {
				stop = true
				return
			}
			if o.Group != "" {
				cl.MarkCommitRecords(r)
			}
			mu.Lock()
			if r.Offset+1 > pos.next[r.Partition] {
				pos.next[r.Partition] = r.Offset + 1
			}
			mu.Unlock()
			seen++
			if o.Count > 0 && seen >= o.Count {
				stop = true
			}
		})
		if err := w.Flush(); err != nil {
			return quiet(err)
		}
		if stop || (o.ExitAtEnd && atEnd()) {
			return nil
		}
	}
}

func (o *Options) readCommitted() bool { return o.Isolation == "read_committed" }

// quiet ends a pipeline whose reader went away (`| head`) without an error.
func quiet(err error) error {
	if errors.Is(err, syscall.EPIPE) {
		return nil
	}
	return err
}
