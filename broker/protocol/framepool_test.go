package protocol

import (
	"bytes"
	"runtime"
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

// TestFramePoolNeighbourClass: a frame takes a free buffer of the class above
// its own (at most four times its size) rather than a new one, never one two
// classes up.
func TestFramePoolNeighbourClass(t *testing.T) {
	defer debug.SetGCPercent(debug.SetGCPercent(-1))
	drainPool(t, 20, 23)
	putFrame(make([]byte, 0, 1<<22))
	if b := getFrame(1 << 20); b != nil {
		t.Fatalf("a class-20 frame took a buffer two classes up (cap %d)", cap(b))
	}
	b := getFrame(3 << 20)
	if b == nil || cap(b) != 1<<22 || len(b) != 3<<20 {
		t.Fatalf("a class-22 frame: %v", b == nil)
	}
	putFrame(b)
	if b := getFrame(1<<21 - 5); b == nil || cap(b) != 1<<22 {
		t.Fatal("a class-21 frame did not take the free class-22 buffer")
	}
}

// TestChunkedReadGivesChunksBack: a frame above eagerFrame read without a
// pooled buffer is read in chunks and copied; the chunks go back to the pool
// (so the next large frame does not allocate them again), and the frame is
// read intact.
func TestChunkedReadGivesChunksBack(t *testing.T) {
	defer debug.SetGCPercent(debug.SetGCPercent(-1))
	drainPool(t, 19, 23)
	body := make([]byte, 2<<20+300<<10)
	for i := range body {
		body[i] = byte(i * 7)
	}
	got, err := readPooledBody(bytes.NewReader(body), len(body), nil)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, body) || cap(got) != 1<<22 {
		t.Fatalf("chunked read: %d bytes, cap %d, equal %v", len(got), cap(got), bytes.Equal(got, body))
	}
	for i := range 2 {
		if b := getFrame(eagerFrame); b == nil {
			t.Fatalf("chunk %d of the read was not given back to the pool", i)
		}
	}
}

// drainPool empties the pool's classes from..to.
func drainPool(t *testing.T, from, to int) {
	t.Helper()
	for c := from; c <= to; c++ {
		if c <= maxKeptClass {
			keptFrame[c].Store(nil)
		}
		for framePool[c].Get() != nil {
		}
	}
}

// TestFramesKeptAcrossGC: the GC empties a sync.Pool, but one buffer of
// each class up to maxKeptClass stays for the next frame of its size; above
// it, none is kept.
func TestFramesKeptAcrossGC(t *testing.T) {
	drainPool(t, minPoolClass, maxPoolClass)
	putFrame(make([]byte, 0, 1<<21))
	putFrame(make([]byte, 0, 1<<(maxKeptClass+1)))
	runtime.GC()
	runtime.GC()
	if b := getFrame(1<<21 - 100); b == nil {
		t.Fatal("the 2 MiB buffer did not outlive two GCs")
	}
	if b := getFrame(1<<(maxKeptClass+1) - 100); b != nil {
		t.Fatalf("a buffer above maxKeptClass (cap %d) outlived two GCs", cap(b))
	}
}

// BenchmarkReadPooledBody reads produce-sized frames through the pool as the
// connection does, each given back once answered: sizes from 0.9 to 5 MiB
// (the 64-partition, 100-byte A/B bench's frames span four classes), in a
// fixed pseudo-random order, with a GC every 20 frames as the broker had in
// that bench (GODEBUG=gctrace=1). A GC moves the pool's buffers to its victim
// cache and the next drops them, so a class unused for two GCs is empty.
//
//	go test -run '^$' -bench BenchmarkReadPooledBody -count 5 ./broker/protocol/
func BenchmarkReadPooledBody(b *testing.B) {
	sizes := []int{900 << 10, 1536 << 10, 3 << 20, 5 << 20}
	src := bytes.Repeat([]byte{7}, 5<<20)
	order := make([]int, 1000)
	x := uint32(1)
	for i := range order {
		x ^= x << 13
		x ^= x >> 17
		x ^= x << 5
		// Mostly the two smaller classes, as in the bench.
		order[i] = []int{0, 0, 0, 1, 1, 1, 2, 2, 3}[x%9]
	}
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		if i%20 == 0 {
			b.StopTimer()
			runtime.GC()
			b.StartTimer()
		}
		n := sizes[order[i%len(order)]]
		i++
		f, err := readPooledBody(bytes.NewReader(src[:n]), n, nil)
		if err != nil {
			b.Fatal(err)
		}
		putFrame(f)
	}
}
