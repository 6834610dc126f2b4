package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"text/tabwriter"
	"time"
)

// runDurable measures produce with log.flush.interval.messages=1 (every
// acknowledged record synced first) against dd writing blocks of the record
// size with a data sync after each (oflag=dsync) to the same disk, the
// reference the issue names, alternated round by round.
func runDurable(ctx context.Context, args []string, out, errOut io.Writer) error {
	fs := newFlags("durable", errOut)
	ktool := fs.String("ktool", "", "the ktool binary")
	dir := fs.String("dir", "", "directory on the disk to measure (a temporary one when empty)")
	size := fs.Int("size", 1024, "record value size and dd block size, bytes")
	records := fs.Int("records", 20000, "records per produce run")
	ddBlocks := fs.Int("dd-blocks", 2000, "blocks per dd run")
	partitions := fs.String("partitions", "1,6", "partition counts, comma-separated")
	producersList := fs.String("producers", "1,4", "concurrent producer clients, comma-separated")
	acksList := fs.String("acks", "1,all", "acks settings, comma-separated")
	rounds := fs.Int("rounds", 3, "rounds")
	linger := fs.Duration("linger", 5*time.Millisecond, "producer linger")
	flushMessages := fs.Int64("flush-messages", 1, "log.flush.interval.messages of the broker (a huge value shows the cost of the syncs)")
	serial := fs.Bool("serial", false, "each producer waits for every record's acknowledgement before the next: one record per request and sync, the hardest case for group commit")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *serial {
		*linger = 0 // a lingering record would wait for company that never comes
	}
	ps, err := ints(*partitions)
	if err != nil {
		return fmt.Errorf("--partitions: %w", err)
	}
	prods, err := ints(*producersList)
	if err != nil {
		return fmt.Errorf("--producers: %w", err)
	}
	acks := strings.Split(*acksList, ",")
	for _, a := range acks {
		if _, _, err := ackOpt(a); err != nil {
			return err
		}
	}
	if *dir == "" {
		d, err := os.MkdirTemp("", "ktool-durable-")
		if err != nil {
			return err
		}
		defer os.RemoveAll(d)
		*dir = d
	}
	kb, err := startKtool(*ktool, *dir, []string{fmt.Sprintf("log.flush.interval.messages=%d", *flushMessages)})
	if err != nil {
		return fmt.Errorf("ktool broker: %w", err)
	}
	defer kb.Stop(30 * time.Second)
	fmt.Fprintf(errOut, "ab: ktool on %s with log.flush.interval.messages=%d (data in %s); load average %s\n", kb.Addr(), *flushMessages, *dir, loadavg())

	type row struct {
		s      shape
		rates  []float64
		ratios []float64
		p50    []float64
		p99    []float64
	}
	var rows []*row
	for _, p := range ps {
		for _, n := range prods {
			for _, a := range acks {
				rows = append(rows, &row{s: shape{size: *size, count: *records, partitions: int32(p), acks: a,
					batchBytes: 1 << 20, linger: *linger, producers: n, serial: *serial}})
			}
		}
	}
	var dds []float64
	for round := range *rounds {
		for i, r := range rows {
			dd, err := ddRate(ctx, *dir, *size, *ddBlocks)
			if err != nil {
				return err
			}
			dds = append(dds, dd)
			topic := fmt.Sprintf("durable-%d-%d", i, round)
			if err := createTopic(ctx, kb.Addr(), topic, r.s.partitions, 1, nil); err != nil {
				return err
			}
			res, err := produce(ctx, kb.Addr(), topic, r.s)
			if err != nil {
				return fmt.Errorf("%s: %w", r.s, err)
			}
			if err := deleteTopic(ctx, kb.Addr(), topic); err != nil {
				return err
			}
			r.rates = append(r.rates, res.recordsPerSec)
			r.ratios = append(r.ratios, res.recordsPerSec/dd)
			r.p50 = append(r.p50, float64(res.p50)/float64(time.Millisecond))
			r.p99 = append(r.p99, float64(res.p99)/float64(time.Millisecond))
			fmt.Fprintf(errOut, "ab: round %d %s, %d producers: dd %.0f blocks/s, ktool %.0f rec/s (x%.2f) p50 %v p99 %v\n",
				round+1, r.s, r.s.producers, dd, res.recordsPerSec, res.recordsPerSec/dd, res.p50, res.p99)
		}
	}
	how := fmt.Sprintf("batched (linger %s, 1 MiB batches)", *linger)
	if *serial {
		how = "serial (each producer waits for every acknowledgement: one record per request)"
	}
	fmt.Fprintf(out, "\ndurable produce (log.flush.interval.messages=1), producers %s, against dd bs=%d oflag=dsync on the same disk, %d rounds, "+
		"dd run before each produce run; ratio = median of per-run ktool/dd; load average at end %s\n\n", how, *size, *rounds, loadavg())
	fmt.Fprintf(out, "dd: median %.0f blocks/s of %d B (%s)\n\n", median(dds), *size, *dir)
	tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "size\tpartitions\tproducers\tacks\trecords\tktool rec/s\tratio to dd\tp50 ms\tp99 ms\t")
	for _, r := range rows {
		fmt.Fprintf(tw, "%d\t%d\t%d\t%s\t%d\t%.0f\t%.2f\t%.1f\t%.1f\t\n", r.s.size, r.s.partitions, r.s.producers, r.s.acks, r.s.count,
			median(r.rates), median(r.ratios), median(r.p50), median(r.p99))
	}
	return tw.Flush()
}

// ddRate runs dd with a data sync after every block and returns blocks/s.
func ddRate(ctx context.Context, dir string, size, blocks int) (float64, error) {
	path := filepath.Join(dir, "dd.out")
	defer os.Remove(path)
	cmd := exec.CommandContext(ctx, "dd", "if=/dev/zero", "of="+path, fmt.Sprintf("bs=%d", size),
		fmt.Sprintf("count=%d", blocks), "oflag=dsync")
	start := time.Now()
	if out, err := cmd.CombinedOutput(); err != nil {
		return 0, fmt.Errorf("dd: %w\n%s", err, out)
	}
	return float64(blocks) / time.Since(start).Seconds(), nil
}
