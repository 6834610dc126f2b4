// Command loopback measures loopback TCP bandwidth: it pushes bytes through
// one 127.0.0.1 connection for a while and prints the rate in MB/s
// (MB = 2^20 bytes) on stdout, as a bare number for scripts. It is the
// ceiling scripts/bench/bench.sh compares consume throughput with.
package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"time"
)

func main() {
	duration := flag.Duration("duration", 3*time.Second, "how long to push bytes")
	chunk := flag.Int("chunk", 1<<20, "bytes per write")
	flag.Parse()
	mbps, err := measure(*duration, *chunk)
	if err != nil {
		fmt.Fprintf(os.Stderr, "loopback: %v\n", err)
		os.Exit(1)
	}
	fmt.Printf("%.1f\n", mbps)
}

// measure writes chunk-sized buffers for d and reports what the reader got.
func measure(d time.Duration, chunk int) (float64, error) {
	if d <= 0 || chunk <= 0 {
		return 0, errors.New("--duration and --chunk must be positive")
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer ln.Close()

	done := make(chan result, 1)
	go func() {
		conn, err := ln.Accept()
		if err != nil {
			done <- result{err: err}
			return
		}
		defer conn.Close()
		done <- drain(conn, chunk)
	}()

	conn, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		return 0, err
	}
	buf := make([]byte, chunk)
	deadline := time.Now().Add(d)
	for time.Now().Before(deadline) {
		if _, err := conn.Write(buf); err != nil {
			conn.Close()
			return 0, err
		}
	}
	if err := conn.Close(); err != nil {
		return 0, err
	}
	r := <-done
	if r.err != nil {
		return 0, r.err
	}
	return float64(r.n) / (1 << 20) / r.elapsed.Seconds(), nil
}

type result struct {
	n       int64
	elapsed time.Duration
	err     error
}

// drain reads into one reused buffer until EOF; io.Discard would read in
// small pieces of its own and understate the bandwidth.
func drain(conn net.Conn, chunk int) result {
	buf := make([]byte, chunk)
	start := time.Now()
	var n int64
	for {
		m, err := conn.Read(buf)
		n += int64(m)
		if errors.Is(err, io.EOF) {
			return result{n: n, elapsed: time.Since(start)}
		}
		if err != nil {
			return result{err: err}
		}
	}
}
