package protocol

import (
	"errors"
	"io"
	"math/bits"
	"sync"
	"sync/atomic"
)

// Frames larger than smallFrame whose handler keeps nothing of the request
// once it has answered (Server.ReuseFrame) go back to the pool when
// answered, and the next frame of their size class is read into one of them:
// a producer's 1 MiB requests then cost no allocation, zeroing or page
// faults each. Buffers come in power-of-two classes. One buffer of each
// class up to maxKeptClass is kept across GCs (at most 16 MiB in all); the
// rest sit in a sync.Pool, which the GC empties of a class unused for two
// cycles. In the 64-partition A/B bench the broker ran a GC every ~20 frames
// of 1-5 MiB, and 12% of its frames missed the pool that way.
const (
	minPoolClass = 16 // 64 KiB, above smallFrame
	maxKeptClass = 23 // 8 MiB
	maxPoolClass = 30 // 1 GiB
)

var (
	keptFrame [maxKeptClass + 1]atomic.Pointer[[]byte]
	framePool [maxPoolClass + 1]sync.Pool
)

// ceilClass is the smallest class whose buffers hold n bytes.
func ceilClass(n int) int { return bits.Len(uint(n - 1)) }

// getFrame returns a pooled buffer of length n, or nil when none is free:
// one of n's class, else one of the class above (at most four times n, as
// a frame read into a new buffer of its class takes up to twice n). A
// producer's frames vary across neighbouring classes; a miss is an
// allocation, its page faults and a copy of the chunks (readBodyCap).
func getFrame(n int) []byte {
	c := ceilClass(n)
	if c < minPoolClass || c > maxPoolClass {
		return nil
	}
	for k := c; k <= min(c+1, maxPoolClass); k++ {
		if k <= maxKeptClass {
			if p := keptFrame[k].Swap(nil); p != nil {
				return (*p)[:n]
			}
		}
		if p, _ := framePool[k].Get().(*[]byte); p != nil {
			return (*p)[:n]
		}
	}
	return nil
}

// putFrame gives b back for frames of its class (the largest its capacity holds).
func putFrame(b []byte) {
	c := bits.Len(uint(cap(b))) - 1
	if c < minPoolClass || c > maxPoolClass {
		return
	}
	b = b[:0]
	if c <= maxKeptClass && keptFrame[c].CompareAndSwap(nil, &b) {
		return
	}
	framePool[c].Put(&b)
}

// readPooledBody reads an n-byte body into a pooled buffer when one is free,
// else as readBody does, into a new buffer sized to its class so that it can
// be pooled afterwards. Either way no more memory is taken before the bytes
// arrive than readBody takes: a pooled buffer is memory already held. A pooled
// buffer is filled in readBody's chunks, with grow called before each, so a
// frame's share of the budget follows its bytes there too.
func readPooledBody(r io.Reader, n int, grow func(upto int) error) ([]byte, error) {
	if b := getFrame(n); b != nil {
		for off := 0; off < n; {
			end := off + min(n-off, eagerFrame)
			err := callGrow(grow, end)
			if err == nil {
				_, err = io.ReadFull(r, b[off:end])
			}
			if err != nil {
				putFrame(b)
				if off > 0 && errors.Is(err, io.EOF) {
					err = io.ErrUnexpectedEOF
				}
				return nil, err
			}
			off = end
		}
		return b, nil
	}
	c := ceilClass(n)
	if c < minPoolClass || c > maxPoolClass {
		return readBodyCap(r, n, n, grow)
	}
	return readBodyCap(r, n, 1<<c, grow)
}
