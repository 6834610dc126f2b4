// Command ab measures a ktool broker against a reference with the same
// franz-go client in one run, alternating between the two, and prints every
// figure as a ratio against its reference. scripts/bench/ab.sh builds and
// runs it; the README's performance section lists what each mode shows.
//
//	ab kfake     produce and consume, ktool (on disk) against kfake (in memory)
//	ab durable   produce with flush.messages=1 against dd with fdatasync
//	ab consume   consume at 1 KiB against loopback TCP bandwidth, 1 and 2 consumer processes
//	ab tail      acks=all latency percentiles at a fraction of the maximum rate on given brokers
//
// Each mode runs rounds; in a round every side is measured once, in turn, so
// that the machine's load falls on both alike. The ratio reported is the
// median of the per-round ratios.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, os.Args[1:], os.Stdout, os.Stderr); err != nil {
		fmt.Fprintf(os.Stderr, "ab: %v\n", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, args []string, out, errOut io.Writer) error {
	if len(args) == 0 {
		return errors.New("usage: ab kfake|durable|consume|tail [flags]")
	}
	modes := map[string]func(context.Context, []string, io.Writer, io.Writer) error{
		"kfake":   runKfake,
		"durable": runDurable,
		"tail":    runTail,
		"consume": runConsume,
		// one consumer process of "consume"
		"consume-child": runConsumeChild,
	}
	f, ok := modes[args[0]]
	if !ok {
		return fmt.Errorf("unknown mode %q", args[0])
	}
	return f(ctx, args[1:], out, errOut)
}

// newFlags is a flag set that reports errors instead of exiting.
func newFlags(name string, errOut io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(errOut)
	return fs
}
