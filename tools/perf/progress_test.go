package perf

import (
	"bytes"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"
)

// lockedBuffer is written by the progress goroutine and read by the test.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

func TestProgressRedrawsWithRates(t *testing.T) {
	var w lockedBuffer
	var mu sync.Mutex
	records := int64(0)
	p := startProgress(&w, time.Millisecond, "consumed", 0, func() (int64, int64) {
		mu.Lock()
		defer mu.Unlock()
		records += 1000
		return records, records * 100
	})
	deadline := time.Now().Add(10 * time.Second)
	for strings.Count(w.String(), "records/s") < 2 {
		if time.Now().After(deadline) {
			t.Fatalf("no periodic progress lines: %q", w.String())
		}
		time.Sleep(time.Millisecond)
	}
	p.stop()
	p.stop()
	out := w.String()
	if !strings.Contains(out, "\r\033[Kconsumed ") || !regexp.MustCompile(`\r\033\[Kconsumed \d+ records\n$`).MatchString(out) {
		t.Fatalf("progress does not redraw one line and end with the count alone (the summary has the duration): %q", out)
	}
	if regexp.MustCompile(`consumed \d+/\d+`).MatchString(out) {
		t.Fatalf("a run without a total shows one: %q", out)
	}
	var nilProgress *progress
	nilProgress.stop()
}
