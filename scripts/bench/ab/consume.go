package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"text/tabwriter"
	"time"
)

// runConsume measures consuming 1 KiB records against loopback TCP
// bandwidth, alternated round by round: one consumer process reading every
// partition, then K consumer processes each reading its own share of the
// partitions at once (does a second consumer scale it?).
func runConsume(ctx context.Context, args []string, out, errOut io.Writer) error {
	fs := newFlags("consume", errOut)
	ktool := fs.String("ktool", "", "the ktool binary")
	loopback := fs.String("loopback", "", "the scripts/bench/loopback binary")
	dir := fs.String("dir", "", "directory for the broker's data (a temporary one when empty)")
	size := fs.Int("size", 1024, "record value bytes")
	records := fs.Int("records", 300_000, "records in the topic, read by every measurement")
	partitions := fs.Int("partitions", 6, "partitions of the topic")
	consumersList := fs.String("consumers", "1,2", "consumer process counts, comma-separated")
	rounds := fs.Int("rounds", 3, "rounds")
	lbDuration := fs.String("loopback-duration", "2s", "how long each loopback measurement pushes bytes")
	if err := fs.Parse(args); err != nil {
		return err
	}
	counts, err := ints(*consumersList)
	if err != nil {
		return fmt.Errorf("--consumers: %w", err)
	}
	if *loopback == "" {
		return fmt.Errorf("--loopback is required")
	}
	self, err := os.Executable()
	if err != nil {
		return err
	}
	if *dir == "" {
		d, err := os.MkdirTemp("", "ktool-consume-")
		if err != nil {
			return err
		}
		defer os.RemoveAll(d)
		*dir = d
	}
	kb, err := startKtool(*ktool, *dir, nil)
	if err != nil {
		return fmt.Errorf("ktool broker: %w", err)
	}
	defer kb.Stop(30 * time.Second)
	const topic = "consume-1k"
	if err := createTopic(ctx, kb.Addr(), topic, int32(*partitions), 1, nil); err != nil {
		return err
	}
	p, err := produce(ctx, kb.Addr(), topic, shape{size: *size, count: *records, partitions: int32(*partitions), acks: "1",
		batchBytes: 1 << 20, linger: 5 * time.Millisecond})
	if err != nil {
		return err
	}
	fmt.Fprintf(errOut, "ab: %d x %d B records in %d partitions on %s (produced at %.1f MB/s); load average %s\n",
		*records, *size, *partitions, kb.Addr(), p.mbPerSec, loadavg())

	lbs := []float64{}
	ratios := map[int][]float64{}
	rates := map[int][]float64{}
	for round := range *rounds {
		lb, err := exec.CommandContext(ctx, *loopback, "--duration", *lbDuration).Output()
		if err != nil {
			return fmt.Errorf("loopback: %w", err)
		}
		lbMBps, err := strconv.ParseFloat(strings.TrimSpace(string(lb)), 64)
		if err != nil {
			return fmt.Errorf("loopback printed %q", lb)
		}
		lbs = append(lbs, lbMBps)
		for _, k := range counts {
			mbps, err := consumeProcesses(ctx, self, kb.Addr(), topic, *partitions, k, *records)
			if err != nil {
				return fmt.Errorf("%d consumers: %w", k, err)
			}
			rates[k] = append(rates[k], mbps)
			ratios[k] = append(ratios[k], mbps/lbMBps)
			fmt.Fprintf(errOut, "ab: round %d: loopback %.0f MB/s, %d consumer process(es) %.1f MB/s (%.2f of loopback)\n",
				round+1, lbMBps, k, mbps, mbps/lbMBps)
		}
	}
	fmt.Fprintf(out, "\nconsume %d x %d B records (%d partitions, direct franz-go consumers, one process each) against loopback TCP "+
		"(one connection, 1 MiB writes) measured before each round, %d rounds; ratio = median of per-round ratios; load average at end %s\n\n",
		*records, *size, *partitions, *rounds, loadavg())
	fmt.Fprintf(out, "loopback: median %.0f MB/s\n\n", median(lbs))
	tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "consumer processes\tMB/s (all together)\tratio to loopback\t")
	for _, k := range counts {
		fmt.Fprintf(tw, "%d\t%.1f\t%.2f\t\n", k, median(rates[k]), median(ratios[k]))
	}
	return tw.Flush()
}

// consumeProcesses runs k consumer processes at once, each reading its
// share of the partitions from the start, and returns their bytes over the
// longest of their reading times (each from its first fetch to its last
// record: process start-up and metadata are not counted).
func consumeProcesses(ctx context.Context, self, addr, topic string, partitions, k, records int) (float64, error) {
	shares := make([][]string, k)
	for p := range partitions {
		shares[p%k] = append(shares[p%k], strconv.Itoa(p))
	}
	type result struct {
		mb, secs float64
		err      error
	}
	results := make([]result, k)
	var wg sync.WaitGroup
	for i := range k {
		wg.Add(1)
		go func() {
			defer wg.Done()
			cmd := exec.CommandContext(ctx, self, "consume-child", "--broker", addr, "--topic", topic,
				"--partitions", strings.Join(shares[i], ","), "--total-partitions", strconv.Itoa(partitions),
				"--total-records", strconv.Itoa(records))
			cmd.Stderr = os.Stderr
			o, err := cmd.Output()
			if err != nil {
				results[i].err = err
				return
			}
			sc := bufio.NewScanner(strings.NewReader(string(o)))
			for sc.Scan() {
				if _, err := fmt.Sscanf(sc.Text(), "mb=%g secs=%g", &results[i].mb, &results[i].secs); err == nil {
					return
				}
			}
			results[i].err = fmt.Errorf("consumer printed no mb= secs= line: %q", o)
		}()
	}
	wg.Wait()
	var mb, secs float64
	for _, r := range results {
		if r.err != nil {
			return 0, r.err
		}
		mb += r.mb
		secs = max(secs, r.secs)
	}
	return mb / secs, nil
}

// runConsumeChild is one consumer process of runConsume: it reads its
// partitions to the end offsets it finds at the start and prints the MB it
// read and the seconds it took.
func runConsumeChild(ctx context.Context, args []string, out, errOut io.Writer) error {
	fs := newFlags("consume-child", errOut)
	addr := fs.String("broker", "", "broker host:port")
	topic := fs.String("topic", "", "topic")
	parts := fs.String("partitions", "", "partitions to read, comma-separated")
	total := fs.Int("total-partitions", 0, "partitions of the topic")
	totalRecords := fs.Int("total-records", 0, "records in the topic")
	if err := fs.Parse(args); err != nil {
		return err
	}
	var ps []int32
	for _, f := range strings.Split(*parts, ",") {
		n, err := strconv.Atoi(f)
		if err != nil {
			return fmt.Errorf("--partitions: %q", f)
		}
		ps = append(ps, int32(n))
	}
	want, err := recordsIn(ctx, *addr, *topic, ps)
	if err != nil {
		return err
	}
	if len(ps) == *total && want != *totalRecords {
		return fmt.Errorf("topic holds %d records, want %d", want, *totalRecords)
	}
	c, err := consume(ctx, *addr, *topic, ps, want)
	if err != nil {
		return err
	}
	secs := float64(want) / c.recordsPerSec
	fmt.Fprintf(out, "mb=%f secs=%f\n", c.mbPerSec*secs, secs)
	return nil
}
