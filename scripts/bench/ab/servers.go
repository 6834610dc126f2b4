package main

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/ktoolhq/ktool/internal/brokerproc"
)

// overrides collects repeated --override key=value flags.
type overrides []string

func (o *overrides) String() string { return strings.Join(*o, ",") }

func (o *overrides) Set(v string) error {
	if !strings.Contains(v, "=") {
		return fmt.Errorf("%q is not key=value", v)
	}
	*o = append(*o, v)
	return nil
}

// startKtool runs a standalone broker with its data under dir.
func startKtool(bin, dir string, settings []string) (*brokerproc.Broker, error) {
	if bin == "" {
		return nil, errors.New("--ktool is required")
	}
	b, err := brokerproc.Start(brokerproc.Spec{Bin: bin, ID: 1, Dir: filepath.Join(dir, "data"),
		Overrides: settings, LogFile: filepath.Join(dir, "broker.log")})
	if err != nil {
		if b != nil {
			err = fmt.Errorf("%w\n%s", err, b.Tail(30))
			_ = b.Stop(10 * time.Second)
		}
		return nil, err
	}
	return b, nil
}

// kfakeServer is scripts/bench/kfake running as a child.
type kfakeServer struct {
	cmd  *exec.Cmd
	addr string
}

func startKfake(bin string) (*kfakeServer, error) {
	if bin == "" {
		return nil, errors.New("--kfake is required")
	}
	cmd := exec.Command(bin, "--port", "0")
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	line := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(out)
		if sc.Scan() {
			line <- sc.Text()
		}
		close(line)
	}()
	select {
	case addr, ok := <-line:
		if ok && addr != "" {
			return &kfakeServer{cmd: cmd, addr: addr}, nil
		}
	case <-time.After(30 * time.Second):
	}
	_ = cmd.Process.Kill()
	_ = cmd.Wait()
	return nil, errors.New("kfake printed no address within 30 s")
}

func (k *kfakeServer) stop() {
	_ = k.cmd.Process.Signal(os.Interrupt)
	done := make(chan struct{})
	go func() { _ = k.cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		_ = k.cmd.Process.Kill()
		<-done
	}
}

// ints parses a comma-separated list of positive integers.
func ints(s string) ([]int, error) {
	var out []int
	for _, f := range strings.Split(s, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n <= 0 {
			return nil, fmt.Errorf("%q is not a positive integer", f)
		}
		out = append(out, n)
	}
	return out, nil
}

// loadavg is the first field of /proc/loadavg, for the report's context.
func loadavg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "?"
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return "?"
	}
	return strings.Join(f[:3], " ")
}

// cpuTime is the CPU time a process has used so far: the sum of its threads'
// time on a CPU in nanoseconds (/proc/PID/task/*/schedstat), or, where that
// cannot be read, user+system time from /proc/PID/stat, which counts in
// 10 ms ticks (at 1,000,000 records of 100 B one tick is 0.1 s/GiB, the size
// of the differences the matrix reports). Threads that exited are not in the
// sum; a Go program keeps its threads. 0 when neither can be read.
func cpuTime(pid int) time.Duration {
	if d, ok := schedstatTime(pid); ok {
		return d
	}
	return statTime(pid)
}

// schedstatTime sums the first field (ns on a CPU) of every thread's schedstat.
func schedstatTime(pid int) (time.Duration, bool) {
	tasks, err := os.ReadDir(fmt.Sprintf("/proc/%d/task", pid))
	if err != nil || len(tasks) == 0 {
		return 0, false
	}
	var sum time.Duration
	for _, t := range tasks {
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/task/%s/schedstat", pid, t.Name()))
		if errors.Is(err, os.ErrNotExist) {
			continue // the thread exited meanwhile
		}
		if err != nil {
			return 0, false
		}
		f := strings.Fields(string(b))
		if len(f) < 1 {
			return 0, false
		}
		ns, err := strconv.ParseInt(f[0], 10, 64)
		if err != nil {
			return 0, false
		}
		sum += time.Duration(ns)
	}
	return sum, true
}

// statTime is user+system time from /proc/PID/stat, in 10 ms ticks.
func statTime(pid int) time.Duration {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	// The command name (field 2) may hold spaces; fields count from after it.
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return 0
	}
	f := strings.Fields(s[i+1:])
	if len(f) < 13 {
		return 0
	}
	utime, err1 := strconv.ParseInt(f[11], 10, 64)
	stime, err2 := strconv.ParseInt(f[12], 10, 64)
	if err1 != nil || err2 != nil {
		return 0
	}
	const ticks = 100 // USER_HZ on Linux
	return time.Duration(utime+stime) * time.Second / ticks
}
