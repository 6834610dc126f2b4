package logdirs

import (
	"context"
	"fmt"
	"io"
	"sort"
	"strconv"

	"github.com/spf13/cobra"
	"github.com/twmb/franz-go/pkg/kadm"

	"github.com/ktoolhq/ktool/tools/cmdutil"
)

// Replica is one partition replica in a log dir.
type Replica struct {
	Topic     string `json:"topic" yaml:"topic"`
	Partition int32  `json:"partition" yaml:"partition"`
	Size      int64  `json:"size" yaml:"size"`
	// OffsetLag is how far the replica's log end is behind the high
	// watermark (for a future replica: behind the current one).
	OffsetLag int64 `json:"offset_lag" yaml:"offset_lag"`
	IsFuture  bool  `json:"is_future" yaml:"is_future"`
}

// Dir is one log directory of a broker. A dir whose disk failed (KIP-112)
// has Error KAFKA_STORAGE_ERROR and no replicas.
type Dir struct {
	Path     string    `json:"path" yaml:"path"`
	Error    string    `json:"error,omitempty" yaml:"error,omitempty"`
	Size     int64     `json:"size" yaml:"size"`
	Replicas []Replica `json:"replicas" yaml:"replicas"`
	// TotalBytes and UsableBytes are the volume's size and free space, -1
	// when the broker does not say (DescribeLogDirs below v4).
	TotalBytes  int64 `json:"total_bytes" yaml:"total_bytes"`
	UsableBytes int64 `json:"usable_bytes" yaml:"usable_bytes"`
}

// Broker is one broker's log dirs and their total.
type Broker struct {
	ID       int32  `json:"broker" yaml:"broker"`
	Size     int64  `json:"size" yaml:"size"`
	Replicas int    `json:"replicas" yaml:"replicas"`
	Dirs     []Dir  `json:"dirs" yaml:"dirs"`
	Error    string `json:"error,omitempty" yaml:"error,omitempty"`
}

// DescribeOptions are the inputs of `ktool log-dirs describe`.
type DescribeOptions struct {
	Factory *cmdutil.Factory
	Output  cmdutil.OutputFlag
	Brokers []int32
	Topics  []string
}

// NewCommand returns `ktool log-dirs` with describe and move.
func NewCommand(f *cmdutil.Factory) *cobra.Command {
	cmd := &cobra.Command{
		Use:     "log-dirs",
		Aliases: []string{"logdirs"},
		Short:   "Show brokers' log directories and the replicas in them, and move replicas between them",
	}
	cmd.AddCommand(NewDescribeCommand(f, nil), NewMoveCommand(f, nil))
	return cmd
}

// NewDescribeCommand returns `ktool log-dirs describe`.
func NewDescribeCommand(f *cmdutil.Factory, runF func(context.Context, *DescribeOptions) error) *cobra.Command {
	opts := &DescribeOptions{Factory: f}
	cmd := &cobra.Command{
		Use:   "describe [--broker ID,...] [--topics T,...]",
		Short: "Sizes and offset lag of every replica per log dir, with totals per broker",
		Long: `Describe asks every broker (or --broker ones) for its log directories
(DescribeLogDirs), as kafka-log-dirs.sh --describe: each directory with the
replicas in it, their size on disk and how far their log end is behind the
high watermark, the volume's size and free space (brokers that answer
DescribeLogDirs v4), and each broker's total. A dir whose disk failed is
listed with KAFKA_STORAGE_ERROR, and the command then exits with status 1.`,
		Example: `  ktool log-dirs describe
  ktool log-dirs describe --broker 1 --topics orders -o json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := opts.Output.Validate(); err != nil {
				return err
			}
			if runF != nil {
				return runF(cmd.Context(), opts)
			}
			return RunDescribe(cmd.Context(), opts)
		},
	}
	cmd.Flags().Int32SliceVar(&opts.Brokers, "broker", nil, "only these broker ids")
	cmd.Flags().StringSliceVar(&opts.Topics, "topics", nil, "only these topics")
	_ = cmd.RegisterFlagCompletionFunc("topics", cmdutil.CompleteTopics(f))
	opts.Output.Register(cmd)
	return cmd
}

// Describe reads the log dirs of brokers (all when empty) for topics (all when empty).
func Describe(ctx context.Context, adm *kadm.Client, brokers []int32, topics []string) ([]Broker, error) {
	var set kadm.TopicsSet
	if len(topics) > 0 {
		tds, err := adm.ListTopics(ctx, topics...)
		if err != nil {
			return nil, err
		}
		for _, t := range topics {
			td, ok := tds[t]
			if !ok || td.Err != nil {
				return nil, fmt.Errorf("topic %q does not exist", t)
			}
			for p := range td.Partitions {
				set.Add(t, p)
			}
		}
	}
	all := kadm.DescribedAllLogDirs{}
	var err error
	if len(brokers) == 0 {
		all, err = adm.DescribeAllLogDirs(ctx, set)
		if err != nil && len(all) == 0 {
			return nil, err
		}
	}
	out := []Broker{}
	for _, id := range brokers {
		ds, derr := adm.DescribeBrokerLogDirs(ctx, id, set)
		if derr != nil {
			out = append(out, Broker{ID: id, Dirs: []Dir{}, Error: derr.Error()})
			continue
		}
		all[id] = ds
	}
	for id, ds := range all {
		b := Broker{ID: id, Dirs: []Dir{}}
		for _, d := range ds.Sorted() {
			dir := Dir{Path: d.Dir, Replicas: []Replica{}, TotalBytes: d.TotalBytes, UsableBytes: d.UsableBytes}
			if d.Err != nil {
				dir.Error = d.Err.Error()
			}
			d.Topics.Each(func(p kadm.DescribedLogDirPartition) {
				dir.Replicas = append(dir.Replicas, Replica{Topic: p.Topic, Partition: p.Partition, Size: p.Size, OffsetLag: p.OffsetLag, IsFuture: p.IsFuture})
				dir.Size += p.Size
			})
			sort.Slice(dir.Replicas, func(i, j int) bool {
				a, c := dir.Replicas[i], dir.Replicas[j]
				return a.Topic < c.Topic || a.Topic == c.Topic && a.Partition < c.Partition
			})
			b.Size += dir.Size
			b.Replicas += len(dir.Replicas)
			b.Dirs = append(b.Dirs, dir)
		}
		out = append(out, b)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out, err
}

// RunDescribe is `ktool log-dirs describe`.
func RunDescribe(ctx context.Context, o *DescribeOptions) error {
	adm, err := o.Factory.Admin()
	if err != nil {
		return err
	}
	defer adm.Close()
	rctx, cancel := o.Factory.RequestContext(ctx)
	defer cancel()
	rows, err := Describe(rctx, adm, o.Brokers, o.Topics)
	if err != nil && rows == nil {
		return o.Factory.ClusterError("describing log dirs", err)
	}
	w := o.Factory.IO.Out
	if perr := o.Output.Print(w, rows, func() error { return writeTable(w, rows) }); perr != nil {
		return perr
	}
	failed := 0
	for _, b := range rows {
		if b.Error != "" {
			failed++
		}
		for _, d := range b.Dirs {
			if d.Error != "" {
				failed++
			}
		}
	}
	if failed > 0 {
		return fmt.Errorf("%d brokers could not be described or log dirs are offline (see above)", failed)
	}
	if err != nil {
		return o.Factory.ClusterError("describing log dirs", err)
	}
	return nil
}

func writeTable(w io.Writer, rows []Broker) error {
	if len(rows) == 0 {
		_, err := fmt.Fprintln(w, "No brokers answered.")
		return err
	}
	dirs := cmdutil.NewTable(w, "Broker", "Dir", "State", "Replicas", "Size", "Usable", "Total")
	for _, b := range rows {
		if b.Error != "" {
			dirs.Append([]string{strconv.Itoa(int(b.ID)), "-", "error: " + b.Error, "-", "-", "-", "-"})
			continue
		}
		for _, d := range b.Dirs {
			state := "online"
			if d.Error != "" {
				state = "offline: " + d.Error
			}
			dirs.Append([]string{strconv.Itoa(int(b.ID)), d.Path, state, strconv.Itoa(len(d.Replicas)),
				strconv.FormatInt(d.Size, 10), bytesOrDash(d.UsableBytes), bytesOrDash(d.TotalBytes)})
		}
	}
	if err := dirs.Render(); err != nil {
		return err
	}
	fmt.Fprintln(w)
	tbl := cmdutil.NewTable(w, "Broker", "Dir", "Topic", "Partition", "Size", "Offset lag", "Future")
	for _, b := range rows {
		for _, d := range b.Dirs {
			for _, r := range d.Replicas {
				future := ""
				if r.IsFuture {
					future = "yes"
				}
				tbl.Append([]string{strconv.Itoa(int(b.ID)), d.Path, r.Topic, strconv.Itoa(int(r.Partition)),
					strconv.FormatInt(r.Size, 10), strconv.FormatInt(r.OffsetLag, 10), future})
			}
		}
	}
	if err := tbl.Render(); err != nil {
		return err
	}
	fmt.Fprintln(w, "\nTotals per broker:")
	tot := cmdutil.NewTable(w, "Broker", "Dirs", "Replicas", "Size")
	for _, b := range rows {
		tot.Append([]string{strconv.Itoa(int(b.ID)), strconv.Itoa(len(b.Dirs)), strconv.Itoa(b.Replicas), strconv.FormatInt(b.Size, 10)})
	}
	return tot.Render()
}

// bytesOrDash is n, or "-" when the broker did not say (-1).
func bytesOrDash(n int64) string {
	if n < 0 {
		return "-"
	}
	return strconv.FormatInt(n, 10)
}
