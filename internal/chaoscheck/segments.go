package chaoscheck

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/ktoolhq/ktool/internal/batch"
)

// batchHeaderLen is the part of a record batch in front of the records:
// baseOffset .. record count.
const batchHeaderLen = 61

// RawBatch is one record batch as it lies in a segment file.
type RawBatch struct {
	base, last int64
	bytes      []byte
}

// ReadBatches returns the batches of the partition directory dir whose base
// offset is below hw, concatenated over its %020d.log segments in offset
// order. Segment boundaries do not show in the result. It fails on a torn or
// inconsistent batch, and when the batches do not reach hw.
func ReadBatches(dir string, hw int64) ([]RawBatch, error) {
	out, err := scanBatches(dir, hw)
	if err != nil {
		return nil, err
	}
	if hw > 0 && (len(out) == 0 || out[len(out)-1].last+1 < hw) {
		end := int64(0)
		if len(out) > 0 {
			end = out[len(out)-1].last + 1
		}
		return nil, fmt.Errorf("batches end at offset %d, below the high watermark %d", end, hw)
	}
	return out, nil
}

// scanBatches reads the batches of dir whose base offset is below hw.
func scanBatches(dir string, hw int64) ([]RawBatch, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	var segs []string
	for _, e := range entries {
		name := e.Name()
		if strings.HasSuffix(name, ".log") && len(name) == 24 {
			segs = append(segs, name)
		}
	}
	slices.Sort(segs)
	var out []RawBatch
	next := int64(-1)
	for _, seg := range segs {
		b, err := os.ReadFile(filepath.Join(dir, seg))
		if err != nil {
			return nil, err
		}
		for pos := 0; pos < len(b); {
			if len(b)-pos < 12 {
				return nil, fmt.Errorf("%s: torn batch header at position %d", seg, pos)
			}
			base := int64(binary.BigEndian.Uint64(b[pos:]))
			length := int(int32(binary.BigEndian.Uint32(b[pos+8:])))
			if length < batchHeaderLen-12 || len(b)-pos-12 < length {
				return nil, fmt.Errorf("%s: batch at position %d (offset %d) has length %d, %d bytes left", seg, pos, base, length, len(b)-pos-12)
			}
			bt := b[pos : pos+batch.LogOverhead+length]
			last := base + int64(int32(binary.BigEndian.Uint32(bt[batch.OffLastOffsetDelta:])))
			if next >= 0 && base != next {
				return nil, fmt.Errorf("%s: batch at position %d starts at offset %d, want %d", seg, pos, base, next)
			}
			next = last + 1
			pos += 12 + length
			if base >= hw {
				return out, nil
			}
			out = append(out, RawBatch{base: base, last: last, bytes: bt})
		}
	}
	return out, nil
}

// LogEnd is the log end offset of the partition directory dir: the offset
// after its last whole batch (0 when it has none). For the log of a stopped
// (SIGSTOP) broker: it writes each append with one write, so its files hold
// whole batches.
func LogEnd(dir string) (int64, error) {
	bs, err := scanBatches(dir, math.MaxInt64)
	if err != nil || len(bs) == 0 {
		return 0, err
	}
	return bs[len(bs)-1].last + 1, nil
}

// DiffBatches describes the first difference between two replicas' batch
// streams, or returns "" when they are byte-identical.
func DiffBatches(a, b []RawBatch) string {
	for i := 0; i < len(a) && i < len(b); i++ {
		if !bytes.Equal(a[i].bytes, b[i].bytes) {
			return fmt.Sprintf("batch %d differs: offsets %d-%d (%d bytes) vs %d-%d (%d bytes)",
				i, a[i].base, a[i].last, len(a[i].bytes), b[i].base, b[i].last, len(b[i].bytes))
		}
	}
	if len(a) != len(b) {
		return fmt.Sprintf("%d batches vs %d", len(a), len(b))
	}
	return ""
}
