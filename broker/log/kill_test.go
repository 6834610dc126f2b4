package log

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

const (
	killChildEnv   = "KTOOL_LOG_KILL_CHILD"
	killDurableEnv = "KTOOL_LOG_KILL_DURABLE" // the child runs with flush.messages=1 and acknowledges after Sync
)

func killConfig(durable bool) Config {
	cfg := DefaultConfig()
	cfg.SegmentBytes = 4 << 20
	if durable {
		cfg.FlushIntervalMessages = 1
	}
	return cfg
}

// TestKillMidStream runs a child process that appends 1,000,000 records as
// an idempotent producer and reports each acknowledged append, kills it with
// SIGKILL part way, and checks that the reopened log holds every
// acknowledged record, reads back as valid batches, and still knows the
// producer's sequence.
func TestKillMidStream(t *testing.T) {
	if dir := os.Getenv(killChildEnv); dir != "" {
		runKillChild(t, dir, false)
		return
	}
	killMidStream(t, "TestKillMidStream", 600_000, "")
}

// TestKillMidStreamDurable is TestKillMidStream in durable mode
// (flush.messages=1): every append is acknowledged only once Sync returned,
// with no Flush, so after the SIGKILL recovery starts from an old recovery
// point (or none) and must find every acknowledged record by rescanning.
// (A SIGKILL leaves the page cache alone: what this proves is the recovery
// of synced-but-never-flushed records and the acknowledgement order, not
// the disk's write cache.)
func TestKillMidStreamDurable(t *testing.T) {
	if dir := os.Getenv(killChildEnv); dir != "" {
		runKillChild(t, dir, true)
		return
	}
	killMidStream(t, "TestKillMidStreamDurable", 30_000, "1")
}

func killMidStream(t *testing.T, name string, killAt int64, durable string) {
	if testing.Short() {
		t.Skip("spawns a child process")
	}
	dir := filepath.Join(t.TempDir(), "topic-0")
	cmd := exec.Command(os.Args[0], "-test.run=^"+name+"$", "-test.count=1")
	cmd.Env = append(os.Environ(), killChildEnv+"="+dir, killDurableEnv+"="+durable)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	waited := false
	t.Cleanup(func() {
		if !waited {
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
		}
		_ = stdin.Close()
	})

	acked := int64(-1)
	sc := bufio.NewScanner(stdout)
	for sc.Scan() {
		v, ok := strings.CutPrefix(sc.Text(), "acked ")
		if !ok {
			continue
		}
		if acked, err = strconv.ParseInt(v, 10, 64); err != nil {
			t.Fatal(err)
		}
		if acked >= killAt {
			break
		}
	}
	if acked < killAt {
		t.Fatalf("child stopped at %d: %v", acked, sc.Err())
	}
	if err := cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	_, _ = io.Copy(io.Discard, stdout)
	_ = cmd.Wait()
	waited = true

	l := openLog(t, dir, killConfig(durable != ""))
	defer l.Close()
	leo := l.LogEndOffset()
	if leo <= acked {
		t.Fatalf("LEO %d lost acknowledged offset %d", leo, acked)
	}
	next := int64(0)
	for off := int64(0); off < leo; {
		r, err := l.Read(off, 1<<20, leo, true)
		if err != nil {
			t.Fatal(err)
		}
		b := regionBytes(t, r)
		r.Release()
		for _, h := range headers(t, b) {
			if h.BaseOffset != next || h.BaseSequence != int32(next) {
				t.Fatalf("batch at %d (sequence %d), want %d", h.BaseOffset, h.BaseSequence, next)
			}
			next = h.LastOffset() + 1
		}
		off = next
	}
	res, err := l.AppendAsLeader(makeBatch(t, idem(1, 0, int32(leo-100), 100)), 0)
	if err != nil || !res.Duplicate || res.BaseOffset != leo-100 {
		t.Fatalf("retry of the last batch after the kill: %+v, %v", res, err)
	}
	mustAppend(t, l, makeBatch(t, idem(1, 0, int32(leo), 100)), 0)
}

func runKillChild(t *testing.T, dir string, durable bool) {
	l, err := Open(dir, killConfig(durable), nil)
	if err != nil {
		t.Fatal(err)
	}
	out := bufio.NewWriter(os.Stdout)
	for i := range 10_000 {
		res, err := l.AppendAsLeader(makeBatch(t, idem(1, 0, int32(100*i), 100)), 0)
		if err != nil {
			t.Fatal(err)
		}
		if durable {
			if !res.Sync {
				t.Fatal("flush.messages=1 asked for no sync")
			}
			if err := l.Sync(res.LastOffset + 1); err != nil {
				t.Fatal(err)
			}
		} else if i%1000 == 999 {
			if err := l.Flush(); err != nil {
				t.Fatal(err)
			}
		}
		fmt.Fprintf(out, "acked %d\n", res.LastOffset)
		if err := out.Flush(); err != nil {
			t.Fatal(err)
		}
	}
	// Wait to be killed; the parent closing stdin also ends the wait.
	_, _ = io.Copy(io.Discard, os.Stdin)
}
