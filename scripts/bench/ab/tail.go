package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
)

// runTail measures the acks=all latency tail on a running cluster: first the
// maximum rate (as fast as the producer goes), then a run at a fraction of
// it for a duration, whose p50, p99, p99.9 and maximum it prints with the
// ratio p99/p50 (issue 18: within 3 at half the maximum, over 60 s).
func runTail(ctx context.Context, args []string, out, errOut io.Writer) error {
	fs := newFlags("tail", errOut)
	brokers := fs.String("brokers", "", "bootstrap brokers host:port,... of the cluster")
	partitions := fs.Int("partitions", 6, "partitions of the topic")
	rf := fs.Int("replication-factor", 3, "replication factor")
	minISR := fs.Int("min-insync-replicas", 2, "min.insync.replicas of the topic")
	size := fs.Int("size", 100, "record value bytes")
	probe := fs.Int("probe-records", 500_000, "records of the maximum-rate run")
	fraction := fs.Float64("fraction", 0.5, "fraction of the maximum rate for the measured run")
	duration := fs.Duration("duration", 60*time.Second, "length of the measured run")
	linger := fs.Duration("linger", 5*time.Millisecond, "producer linger")
	baseline := fs.Bool("baseline", true, "also run acks=1 on an RF=1 topic at the same rate, to tell the machine's own tail from replication's")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *brokers == "" {
		return errors.New("--brokers is required")
	}
	addr := strings.Split(*brokers, ",")[0]
	topic := fmt.Sprintf("tail-%d", time.Now().UnixNano())
	if err := createTopic(ctx, addr, topic, int32(*partitions), int16(*rf),
		map[string]*string{"min.insync.replicas": kadm.StringPtr(fmt.Sprint(*minISR))}); err != nil {
		return err
	}
	s := shape{size: *size, count: *probe, partitions: int32(*partitions), acks: "all", batchBytes: 1 << 20, linger: *linger}
	maxRun, err := produce(ctx, addr, topic, s)
	if err != nil {
		return fmt.Errorf("maximum-rate run: %w", err)
	}
	fmt.Fprintf(errOut, "ab: maximum acks=all rate %.0f rec/s (p50 %v p99 %v); load average %s\n", maxRun.recordsPerSec, maxRun.p50, maxRun.p99, loadavg())
	s.rate = int(maxRun.recordsPerSec * *fraction)
	s.count = int(float64(s.rate) * duration.Seconds())
	if s.rate < 1 || s.count < 1 {
		return fmt.Errorf("measured rate %.0f rec/s is too low to run at %.2f of it", maxRun.recordsPerSec, *fraction)
	}
	run, err := produce(ctx, addr, topic, s)
	if err != nil {
		return fmt.Errorf("measured run: %w", err)
	}
	var base produced
	if *baseline {
		btopic := topic + "-rf1"
		if err := createTopic(ctx, addr, btopic, int32(*partitions), 1, nil); err != nil {
			return err
		}
		bs := s
		bs.acks = "1"
		if base, err = produce(ctx, addr, btopic, bs); err != nil {
			return fmt.Errorf("baseline run: %w", err)
		}
	}
	ratio := float64(run.p99) / float64(run.p50)
	verdict := "yes"
	if ratio > 3 {
		verdict = "no"
	}
	fmt.Fprintf(out, "acks=all, RF=%d, min.insync.replicas=%d, %d partitions, %d B records, linger %s; load average at end %s\n",
		*rf, *minISR, *partitions, *size, *linger, loadavg())
	fmt.Fprintf(out, "maximum rate %.0f rec/s; measured run at %.0f%% of it (%d rec/s target, %.0f achieved) for %s: "+
		"p50 %.1f ms, p99 %.1f ms, p99.9 %.1f ms, max %.1f ms; p99/p50 = %.2f (within issue 18's 3: %s)\n",
		maxRun.recordsPerSec, 100**fraction, s.rate, run.recordsPerSec, *duration,
		ms(run.p50), ms(run.p99), ms(run.p999), ms(run.max), ratio, verdict)
	if *baseline {
		fmt.Fprintf(out, "baseline, same brokers and rate, RF=1 acks=1: p50 %.1f ms, p99 %.1f ms, p99.9 %.1f ms, max %.1f ms; p99/p50 = %.2f\n",
			ms(base.p50), ms(base.p99), ms(base.p999), ms(base.max), float64(base.p99)/float64(base.p50))
	}
	return nil
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
