package cluster

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"time"
)

// Proc is a process the cluster started. StartTime is the kernel's record
// of when the process began, so that a PID reused by another process after
// ours died is never signalled.
type Proc struct {
	PID       int    `json:"pid"`
	StartTime string `json:"start_time"`
	Log       string `json:"log"`
}

// Alive reports whether the recorded process still runs (and is ours).
func (p *Proc) Alive() bool {
	if p == nil || p.PID <= 0 {
		return false
	}
	st, err := procStartTime(p.PID)
	return err == nil && st == p.StartTime
}

// signal sends sig to the process if it is still ours.
func (p *Proc) signal(sig syscall.Signal) error {
	if !p.Alive() {
		return nil
	}
	if err := syscall.Kill(p.PID, sig); err != nil && err != syscall.ESRCH {
		return fmt.Errorf("signal %v to pid %d: %w", sig, p.PID, err)
	}
	return nil
}

// spawn starts cmd detached from the caller (its own session, no terminal),
// its output appended to logPath, and returns its record.
func spawn(cmd *exec.Cmd, logPath string) (*Proc, error) {
	if err := os.MkdirAll(filepath.Dir(logPath), 0o755); err != nil {
		return nil, err
	}
	logFile, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, err
	}
	defer logFile.Close()
	cmd.Stdin = nil
	cmd.Stdout = logFile
	cmd.Stderr = logFile
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("starting %s: %w", cmd.Path, err)
	}
	pid := cmd.Process.Pid
	st, err := procStartTime(pid)
	if err != nil {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		return nil, fmt.Errorf("reading the start time of pid %d: %w", pid, err)
	}
	// Reaped by init once this command exits; until then a dead child is a
	// zombie, which procStartTime reports as gone.
	_ = cmd.Process.Release()
	return &Proc{PID: pid, StartTime: st, Log: logPath}, nil
}

// stopProcs sends SIGTERM to every live process, waits up to grace for them
// to exit, then SIGKILLs the rest and waits for them to go. It returns the
// processes it had to kill.
func stopProcs(ctx context.Context, procs []*Proc, grace time.Duration) (killed []*Proc, err error) {
	for _, p := range procs {
		if err := p.signal(syscall.SIGTERM); err != nil {
			return nil, err
		}
	}
	if waitGone(ctx, procs, grace) {
		return nil, nil
	}
	for _, p := range procs {
		if p.Alive() {
			killed = append(killed, p)
			if err := p.signal(syscall.SIGKILL); err != nil {
				return killed, err
			}
		}
	}
	if !waitGone(ctx, killed, 10*time.Second) {
		return killed, fmt.Errorf("processes still alive after SIGKILL: %v", pids(killed))
	}
	return killed, nil
}

// waitGone polls until no process of procs is alive, for at most d.
func waitGone(ctx context.Context, procs []*Proc, d time.Duration) bool {
	deadline := time.Now().Add(d)
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for {
		alive := false
		for _, p := range procs {
			if p.Alive() {
				alive = true
				break
			}
		}
		if !alive {
			return true
		}
		if time.Now().After(deadline) {
			return false
		}
		select {
		case <-ctx.Done():
			return false
		case <-tick.C:
		}
	}
}

func pids(procs []*Proc) []int {
	out := make([]int, len(procs))
	for i, p := range procs {
		out[i] = p.PID
	}
	return out
}
