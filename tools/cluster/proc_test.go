package cluster

import (
	"bufio"
	"context"
	"os/exec"
	"testing"
	"time"

	"github.com/ktoolhq/ktool/tools/cmdutil"
)

// A PID recorded in cluster.json may belong to another process by the time
// down runs; the start time check must leave that process alone.
func TestDownSparesRecycledPID(t *testing.T) {
	other := exec.Command("sleep", "60")
	if err := other.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = other.Process.Kill()
		_ = other.Wait()
	})
	start, err := procStartTime(other.Process.Pid)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	st := &State{Version: 1, Dir: dir, Mode: ModeZooKeeper, Brokers: []BrokerRecord{
		{ID: 0, Addr: "127.0.0.1:1", Process: &Proc{PID: other.Process.Pid, StartTime: start + "1"}},
	}}
	if err := st.Save(); err != nil {
		t.Fatal(err)
	}
	if st.Running() {
		t.Fatal("a process with another start time counts as the broker")
	}
	ios, _, out, _ := cmdutil.Test()
	f := cmdutil.NewFactory(ios, cmdutil.BuildInfo{})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := runDown(ctx, &DownOptions{Factory: f, Dir: dir, Timeout: time.Second}); err != nil {
		t.Fatal(err)
	}
	if err := runKill(ctx, &BrokerOptions{Factory: f, Dir: dir, ID: 0}); err == nil {
		t.Fatal("kill signalled a process that is not the broker")
	}
	st.Brokers[0].Process.StartTime = start
	if !st.Running() {
		t.Fatal("the real start time is not recognised")
	}
	if !(&Proc{PID: other.Process.Pid, StartTime: start}).Alive() {
		t.Fatalf("the other process was stopped (down said %q)", out)
	}
}

func TestStopProcsKillsAfterGrace(t *testing.T) {
	// A process that ignores SIGTERM must be SIGKILLed. The ignored signal
	// survives exec; "ready" says it is in place.
	cmd := exec.Command("sh", "-c", "trap '' TERM; echo ready; exec sleep 60")
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	if line, err := bufio.NewReader(stdout).ReadString('\n'); err != nil || line != "ready\n" {
		t.Fatalf("read %q: %v", line, err)
	}
	waited := make(chan struct{})
	go func() {
		_ = cmd.Wait()
		close(waited)
	}()
	st, err := procStartTime(cmd.Process.Pid)
	if err != nil {
		t.Fatal(err)
	}
	p := &Proc{PID: cmd.Process.Pid, StartTime: st}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	killed, err := stopProcs(ctx, []*Proc{p, nil}, 200*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	if len(killed) != 1 || killed[0] != p {
		t.Fatalf("killed %v", killed)
	}
	select {
	case <-waited:
	case <-ctx.Done():
		t.Fatal("process still running")
	}
}
