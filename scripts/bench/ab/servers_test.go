package main

import (
	"os"
	"runtime"
	"testing"
	"time"
)

// TestCPUTimeResolvesMilliseconds: the CPU per GiB the matrix reports comes
// from cpuTime, so it must see a few milliseconds of work, well under the
// 10 ms tick of /proc/PID/stat.
func TestCPUTimeResolvesMilliseconds(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("reads /proc")
	}
	pid := os.Getpid()
	for range 5 {
		before := cpuTime(pid)
		// About 3 ms of CPU on this thread.
		start := time.Now()
		for time.Since(start) < 3*time.Millisecond {
		}
		// A thread's schedstat counts its run time when it is switched
		// out: sleeping makes the spin count before the read (without it,
		// CI once read 0 on a thread still running).
		time.Sleep(2 * time.Millisecond)
		d := cpuTime(pid) - before
		if d <= 0 || d%(10*time.Millisecond) == 0 {
			t.Fatalf("3 ms of work measured as %v: not finer than a 10 ms tick", d)
		}
	}
}
