package protocol

import (
	"bytes"
	"runtime/debug"
	"testing"
)

func TestFramePoolClasses(t *testing.T) {
	// sync.Pool drops its buffers at a GC: none may run between put and get.
	defer debug.SetGCPercent(debug.SetGCPercent(-1))
	for _, c := range []struct{ n, class int }{{64 << 10, 16}, {64<<10 + 1, 17}, {1 << 20, 20}, {1<<20 + 60, 21}} {
		if got := ceilClass(c.n); got != c.class {
			t.Errorf("ceilClass(%d) = %d, want %d", c.n, got, c.class)
		}
	}
	// Too small to pool: never handed out, never kept.
	if b := getFrame(1 << 10); b != nil {
		t.Fatalf("a 1 KiB frame came from the pool (cap %d)", cap(b))
	}
	// A body read through the pool is sized to its class, so it can be
	// pooled and handed out again for a frame of the same size.
	body := bytes.Repeat([]byte{7}, 1<<20+60)
	b, err := readPooledBody(bytes.NewReader(body), len(body), nil)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(b, body) || cap(b) != 1<<21 {
		t.Fatalf("pooled read: %d bytes, cap %d", len(b), cap(b))
	}
	putFrame(b)
	again := getFrame(len(body))
	if again == nil || cap(again) < len(body) || len(again) != len(body) {
		t.Fatalf("frame of the same class after a put: len %d cap %d", len(again), cap(again))
	}
	// A cut-short body is an error and gives its buffer back.
	if _, err := readPooledBody(bytes.NewReader(body[:100]), len(body), nil); err == nil {
		t.Fatal("a truncated body read without error")
	}
}
