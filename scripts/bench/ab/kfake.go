package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"strings"
	"text/tabwriter"
	"time"
)

// side is one server the client alternates between.
type side struct {
	name string
	addr string
	pid  int
}

type caseResult struct {
	s            shape
	prod, cons   map[string][]float64 // side -> per-round records/s
	p50, p99     map[string][]float64 // side -> per-round ms
	cpu          map[string][]float64 // side -> server CPU seconds per GiB produced
	prodR, consR []float64            // per-round ktool/reference ratios
}

// runKfake alternates the same franz-go producer and consumer between a
// ktool broker and kfake, for every combination of record size, partition
// count and acks.
func runKfake(ctx context.Context, args []string, out, errOut io.Writer) error {
	fs := newFlags("kfake", errOut)
	ktool := fs.String("ktool", "", "the ktool binary")
	kfakeBin := fs.String("kfake", "", "the scripts/bench/kfake binary")
	dir := fs.String("dir", "", "directory for the broker's data (a temporary one when empty)")
	sizes := fs.String("sizes", "100,1024", "record value sizes in bytes, comma-separated")
	partitions := fs.String("partitions", "6", "partition counts, comma-separated")
	acksList := fs.String("acks", "1,all", "acks settings, comma-separated (1, all)")
	records := fs.Int("records", 2_000_000, "records per run at 100 B; other sizes send the same bytes")
	rounds := fs.Int("rounds", 5, "rounds; each measures both servers once, in alternating order")
	batch := fs.Int("batch-bytes", 1<<20, "producer batch size (ProducerBatchMaxBytes)")
	linger := fs.Duration("linger", 5*time.Millisecond, "producer linger")
	noConsume := fs.Bool("no-consume", false, "measure produce only")
	var ov overrides
	fs.Var(&ov, "override", "a ktool broker setting key=value (repeatable)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	sz, err := ints(*sizes)
	if err != nil {
		return fmt.Errorf("--sizes: %w", err)
	}
	ps, err := ints(*partitions)
	if err != nil {
		return fmt.Errorf("--partitions: %w", err)
	}
	acks := strings.Split(*acksList, ",")
	for _, a := range acks {
		if _, _, err := ackOpt(a); err != nil {
			return err
		}
	}
	if *rounds < 1 || *records < 1 {
		return fmt.Errorf("--rounds and --records must be positive")
	}
	if *dir == "" {
		d, err := os.MkdirTemp("", "ktool-ab-")
		if err != nil {
			return err
		}
		defer os.RemoveAll(d)
		*dir = d
	}

	kb, err := startKtool(*ktool, *dir, ov)
	if err != nil {
		return fmt.Errorf("ktool broker: %w", err)
	}
	defer kb.Stop(30 * time.Second)
	kf, err := startKfake(*kfakeBin)
	if err != nil {
		return err
	}
	defer kf.stop()
	sides := []side{{"ktool", kb.Addr(), kb.PID()}, {"kfake", kf.addr, kf.cmd.Process.Pid}}
	fmt.Fprintf(errOut, "ab: ktool on %s (data in %s), kfake on %s; load average %s\n", kb.Addr(), *dir, kf.addr, loadavg())

	var results []*caseResult
	for _, size := range sz {
		for _, p := range ps {
			for _, a := range acks {
				s := shape{size: size, count: max(*records*100/size, 1000), partitions: int32(p), acks: a,
					batchBytes: int32(*batch), linger: *linger}
				r, err := abCase(ctx, sides, s, *rounds, !*noConsume, errOut)
				if err != nil {
					return fmt.Errorf("%s: %w", s, err)
				}
				results = append(results, r)
			}
		}
	}
	fmt.Fprintf(out, "\nktool (on disk) against kfake (in memory), same franz-go client, %d rounds alternated; "+
		"batch %d B, linger %s; ratio = median of per-round ktool/kfake; load average at end %s\n\n",
		*rounds, *batch, *linger, loadavg())
	tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "size\tpartitions\tacks\trecords\tktool produce rec/s\tkfake\tratio\tktool p50/p99 ms\tkfake p50/p99 ms\tserver CPU s/GiB ktool\tkfake\tktool consume rec/s\tkfake\tratio\t")
	for _, r := range results {
		cons := "-\t-\t-"
		if len(r.consR) > 0 {
			cons = fmt.Sprintf("%.0f\t%.0f\t%.2f", median(r.cons["ktool"]), median(r.cons["kfake"]), median(r.consR))
		}
		fmt.Fprintf(tw, "%d\t%d\t%s\t%d\t%.0f\t%.0f\t%.2f\t%.1f/%.1f\t%.1f/%.1f\t%.2f\t%.2f\t%s\t\n",
			r.s.size, r.s.partitions, r.s.acks, r.s.count,
			median(r.prod["ktool"]), median(r.prod["kfake"]), median(r.prodR),
			median(r.p50["ktool"]), median(r.p99["ktool"]), median(r.p50["kfake"]), median(r.p99["kfake"]),
			median(r.cpu["ktool"]), median(r.cpu["kfake"]), cons)
	}
	return tw.Flush()
}

func abCase(ctx context.Context, sides []side, s shape, rounds int, withConsume bool, errOut io.Writer) (*caseResult, error) {
	r := &caseResult{s: s, prod: map[string][]float64{}, cons: map[string][]float64{},
		p50: map[string][]float64{}, p99: map[string][]float64{}, cpu: map[string][]float64{}}
	for round := range rounds {
		order := sides
		if round%2 == 1 {
			order = []side{sides[1], sides[0]}
		}
		pr, cr := map[string]float64{}, map[string]float64{}
		for _, sd := range order {
			topic := fmt.Sprintf("ab-%d-%d-%s-%d", s.size, s.partitions, s.acks, round)
			if err := createTopic(ctx, sd.addr, topic, s.partitions, 1, nil); err != nil {
				return nil, fmt.Errorf("%s: %w", sd.name, err)
			}
			cpu0 := cpuTime(sd.pid)
			p, err := produce(ctx, sd.addr, topic, s)
			if err != nil {
				return nil, fmt.Errorf("%s produce: %w", sd.name, err)
			}
			gib := float64(s.count) * float64(s.size) / (1 << 30)
			cpuPerGiB := (cpuTime(sd.pid) - cpu0).Seconds() / gib
			r.cpu[sd.name] = append(r.cpu[sd.name], cpuPerGiB)
			pr[sd.name] = p.recordsPerSec
			r.prod[sd.name] = append(r.prod[sd.name], p.recordsPerSec)
			r.p50[sd.name] = append(r.p50[sd.name], float64(p.p50)/float64(time.Millisecond))
			r.p99[sd.name] = append(r.p99[sd.name], float64(p.p99)/float64(time.Millisecond))
			line := fmt.Sprintf("ab: %s round %d %s: produce %.0f rec/s (%.1f MB/s) p50 %v p99 %v, server CPU %.2f s/GiB",
				s, round+1, sd.name, p.recordsPerSec, p.mbPerSec, p.p50, p.p99, cpuPerGiB)
			if withConsume {
				c, err := consume(ctx, sd.addr, topic, nil, s.count)
				if err != nil {
					return nil, fmt.Errorf("%s consume: %w", sd.name, err)
				}
				cr[sd.name] = c.recordsPerSec
				r.cons[sd.name] = append(r.cons[sd.name], c.recordsPerSec)
				line += fmt.Sprintf(", consume %.0f rec/s (%.1f MB/s)", c.recordsPerSec, c.mbPerSec)
			}
			fmt.Fprintln(errOut, line)
			if err := deleteTopic(ctx, sd.addr, topic); err != nil {
				return nil, fmt.Errorf("%s delete topic: %w", sd.name, err)
			}
		}
		r.prodR = append(r.prodR, pr["ktool"]/pr["kfake"])
		if withConsume {
			r.consR = append(r.consR, cr["ktool"]/cr["kfake"])
		}
	}
	return r, nil
}
