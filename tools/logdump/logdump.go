package logdump

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"

	"github.com/ktoolhq/ktool/internal/batch"
	"github.com/ktoolhq/ktool/plugins"
	"github.com/ktoolhq/ktool/tools/cmdutil"
)

// NewCommand returns `ktool log`, which holds `ktool log dump`.
func NewCommand(f *cmdutil.Factory) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "log",
		Short: "Inspect Kafka log segment files on disk",
	}
	cmd.AddCommand(NewDumpCommand(f, nil))
	return cmd
}

// DumpOptions are the inputs of `ktool log dump`.
type DumpOptions struct {
	Factory     *cmdutil.Factory
	Output      cmdutil.OutputFlag
	Paths       []string
	Records     bool
	VerifyIndex bool
	// OffsetsDecoder reads records as __consumer_offsets records (implies Records).
	OffsetsDecoder bool
	// TransactionDecoder reads records as __transaction_state records (implies Records).
	TransactionDecoder bool
	PluginDir          string
}

// NewDumpCommand returns `ktool log dump PATH...`.
func NewDumpCommand(f *cmdutil.Factory, runF func(context.Context, *DumpOptions) error) *cobra.Command {
	opts := &DumpOptions{Factory: f}
	cmd := &cobra.Command{
		Use:   "dump PATH...",
		Short: "Print the batches of .log segments and the entries of .index, .timeindex and .txnindex files",
		Long: `Dump prints what a partition directory holds, like kafka-dump-log.sh.

For a .log segment, every batch: base and last offset, record count, codec,
producer id, epoch and base sequence, partition leader epoch, whether it is
transactional and whether it is a control batch (a transaction's COMMIT or
ABORT marker), create and max timestamps, position, size and whether its CRC
is valid. With --records a marker shows its type and coordinator epoch. --records decodes
every record (decompressing through the codec plugins): offset, timestamp,
key, value (text when printable, else hex) and headers. --offsets-decoder
reads them as the group coordinator's __consumer_offsets records, like
kafka-dump-log.sh's option of that name: committed offsets (group, topic,
partition, offset, leader epoch, metadata, commit time) and group metadata
(protocol, generation, leader, members with their subscriptions and
assignments); a record without a value is a deletion. --transaction-decoder
(or Kafka's name, --transaction-log-decoder) reads them as the transaction
coordinator's __transaction_state records: transactional id, producer id and
epoch, timeout, state, partitions and timestamps; a record without a value is
an expired transactional id.

A directory (a partition directory such as orders-0) stands for its .log
segments in offset order; its other files (snapshots, checkpoints,
partition.metadata) are left out, and so are such files named on the command
line, with a note on stderr.

For .index and .timeindex files, every entry. For a .txnindex file (the
aborted transaction index), every aborted transaction: producer id, first
offset, last offset (its ABORT marker) and the last stable offset after it. --verify-index checks the
offset and time indexes against their .log segment and reports every
mismatch; the command then exits with status 3 if it found problems (torn or
corrupt batches, bad CRCs, index mismatches).`,
		Example: `  ktool log dump /var/lib/kafka/orders-0
  ktool log dump /var/lib/kafka/orders-0/00000000000000000000.log
  ktool log dump --records --verify-index /var/lib/kafka/orders-0/*.log
  ktool log dump /var/lib/kafka/orders-0/00000000000000000000.timeindex -o json
  ktool log dump /var/lib/kafka/payments-0/00000000000000000000.txnindex
  ktool log dump --offsets-decoder /var/lib/kafka/__consumer_offsets-7
  ktool log dump --transaction-decoder /var/lib/kafka/__transaction_state-12`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.Paths = args
			if err := opts.Output.Validate(); err != nil {
				return err
			}
			if runF != nil {
				return runF(cmd.Context(), opts)
			}
			return runDump(cmd.Context(), opts)
		},
	}
	fl := cmd.Flags()
	fl.BoolVar(&opts.Records, "records", false, "decode every record of .log segments")
	fl.BoolVar(&opts.OffsetsDecoder, "offsets-decoder", false, "decode records as __consumer_offsets records: committed offsets and group metadata (implies --records)")
	fl.BoolVar(&opts.TransactionDecoder, "transaction-decoder", false, "decode records as __transaction_state records: transactional ids and their state (implies --records)")
	fl.BoolVar(&opts.TransactionDecoder, "transaction-log-decoder", false, "kafka-dump-log.sh's name of --transaction-decoder")
	_ = fl.MarkHidden("transaction-log-decoder")
	fl.BoolVar(&opts.VerifyIndex, "verify-index", false, "check .index and .timeindex files against their .log segment")
	fl.StringVar(&opts.PluginDir, "plugin-dir", "", "directory of external codec plugins (env KTOOL_PLUGIN_DIR)")
	opts.Output.Register(cmd)
	return cmd
}

func runDump(ctx context.Context, o *DumpOptions) error {
	var codecs batch.Codecs
	if o.OffsetsDecoder && o.TransactionDecoder {
		return cmdutil.Usagef("--offsets-decoder and --transaction-decoder exclude each other")
	}
	var dec decoder
	switch {
	case o.OffsetsDecoder:
		dec = decodeOffsetsRecord
	case o.TransactionDecoder:
		dec = decodeTxnRecord
	}
	if o.Records || dec != nil {
		cat := plugins.NewCatalog(plugins.Options{Dir: o.PluginDir})
		defer cat.Close()
		codecs = cat
	}
	paths, skipped, err := expandPaths(o.Paths)
	if err != nil {
		return err
	}
	for _, p := range skipped {
		fmt.Fprintf(o.Factory.IO.ErrOut, "Skipped %s: not a segment, offset index, time index or transaction index file.\n", p)
	}
	dumps := make([]FileDump, 0, len(paths))
	for _, p := range paths {
		d, err := dumpFile(ctx, p, o.VerifyIndex, codecs, dec)
		if err != nil {
			return err
		}
		dumps = append(dumps, d)
	}
	w := o.Factory.IO.Out
	if err := o.Output.Print(w, dumps, func() error { return writeText(w, dumps) }); err != nil {
		return err
	}
	for _, d := range dumps {
		if len(d.Problems) > 0 {
			return cmdutil.ProblemsFound()
		}
	}
	return nil
}

// dumpFile reads one file; with verify it also reads the segment's other
// files and records their disagreements as problems.
func dumpFile(ctx context.Context, path string, verify bool, codecs batch.Codecs, dec decoder) (FileDump, error) {
	kind, base, err := parseName(path)
	if err != nil {
		return FileDump{}, err
	}
	var d FileDump
	switch kind {
	case kindLog:
		if d, err = scanLog(ctx, path, base, codecs, dec); err != nil {
			return d, fmt.Errorf("reading %s: %w", path, err)
		}
	case kindIndex:
		d = FileDump{Path: path, Kind: kind, BaseOffset: base}
		if d.Index, d.Problems, err = readIndex(path, base); err != nil {
			return d, fmt.Errorf("reading %s: %w", path, err)
		}
	case kindTimeIndex:
		d = FileDump{Path: path, Kind: kind, BaseOffset: base}
		if d.TimeIndex, d.Problems, err = readTimeIndex(path, base); err != nil {
			return d, fmt.Errorf("reading %s: %w", path, err)
		}
	case kindTxnIndex:
		d = FileDump{Path: path, Kind: kind, BaseOffset: base}
		if d.AbortedTxns, d.Problems, err = readTxnIndex(path); err != nil {
			return d, fmt.Errorf("reading %s: %w", path, err)
		}
		return d, nil // --verify-index checks the offset and time indexes only
	}
	if !verify {
		return d, nil
	}
	d.IndexChecked = true
	batches := d.Batches
	if kind != kindLog {
		seg, err := scanLog(ctx, sibling(path, kindLog), base, nil, nil)
		if err != nil {
			return d, fmt.Errorf("reading the segment of %s: %w", path, err)
		}
		batches = seg.Batches
	}
	if kind == kindLog || kind == kindIndex {
		entries, problems, err := d.Index, []string(nil), error(nil)
		if kind == kindLog {
			entries, problems, err = readIndex(sibling(path, kindIndex), base)
		}
		switch {
		case errors.Is(err, fs.ErrNotExist):
			d.Problems = append(d.Problems, "no offset index "+sibling(path, kindIndex))
		case err != nil:
			return d, err
		default:
			d.Problems = append(d.Problems, prefixed("offset index: ", append(problems, checkIndex(batches, entries)...))...)
		}
	}
	if kind == kindLog || kind == kindTimeIndex {
		entries, problems, err := d.TimeIndex, []string(nil), error(nil)
		if kind == kindLog {
			entries, problems, err = readTimeIndex(sibling(path, kindTimeIndex), base)
		}
		switch {
		case errors.Is(err, fs.ErrNotExist):
			d.Problems = append(d.Problems, "no time index "+sibling(path, kindTimeIndex))
		case err != nil:
			return d, err
		default:
			d.Problems = append(d.Problems, prefixed("time index: ", append(problems, checkTimeIndex(batches, entries)...))...)
		}
	}
	return d, nil
}

func prefixed(p string, ss []string) []string {
	out := make([]string, len(ss))
	for i, s := range ss {
		out[i] = p + s
	}
	return out
}

// expandPaths turns the arguments into the files to dump: a directory gives
// its .log segments (sorted by base offset, which their names encode), an
// existing file that is not a segment file is skipped, and a name that is
// neither an existing file nor a segment file's name is a usage error.
func expandPaths(args []string) (files, skipped []string, err error) {
	for _, p := range args {
		st, serr := os.Stat(p)
		if serr == nil && st.IsDir() {
			entries, err := os.ReadDir(p)
			if err != nil {
				return nil, nil, err
			}
			n := len(files)
			for _, e := range entries {
				if kind, _, err := parseName(e.Name()); err == nil && kind == kindLog && e.Type().IsRegular() {
					files = append(files, filepath.Join(p, e.Name()))
				}
			}
			if len(files) == n {
				return nil, nil, fmt.Errorf("%s holds no .log segment (is it a partition directory such as orders-0?)", p)
			}
			continue
		}
		if _, _, err := parseName(p); err != nil {
			if serr == nil {
				skipped = append(skipped, p)
				continue
			}
			return nil, nil, cmdutil.UsageError(err)
		}
		files = append(files, p)
	}
	if len(files) == 0 {
		return nil, nil, cmdutil.Usagef("none of %s is a segment, offset index, time index or transaction index file", strings.Join(args, ", "))
	}
	return files, skipped, nil
}
