package chaos

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/ktoolhq/ktool/internal/batch"
)

// batchHeaderLen is the part of a record batch in front of the records:
// baseOffset .. record count.
const batchHeaderLen = 61

// rawBatch is one record batch as it lies in a segment file.
type rawBatch struct {
	base, last int64
	bytes      []byte
}

// readBatches returns the batches of the partition directory dir whose base
// offset is below hw, concatenated over its %020d.log segments in offset
// order. Segment boundaries do not show in the result. It fails on a torn or
// inconsistent batch, and when the batches do not reach hw.
func readBatches(dir string, hw int64) ([]rawBatch, error) {
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
	var out []rawBatch
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
			out = append(out, rawBatch{base: base, last: last, bytes: bt})
		}
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

// diffBatches describes the first difference between two replicas' batch
// streams, or returns "" when they are byte-identical.
func diffBatches(a, b []rawBatch) string {
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

// fakeBatch is a syntactically plausible batch for the parser's tests:
// only the fields readBatches looks at are meaningful.
func fakeBatch(base int64, records int32, fill byte) []byte {
	b := make([]byte, batchHeaderLen+4)
	binary.BigEndian.PutUint64(b, uint64(base))
	binary.BigEndian.PutUint32(b[batch.OffLength:], uint32(len(b)-batch.LogOverhead))
	b[16] = 2
	binary.BigEndian.PutUint32(b[batch.OffLastOffsetDelta:], uint32(records-1))
	for i := batchHeaderLen; i < len(b); i++ {
		b[i] = fill
	}
	return b
}

func writeSegment(t *testing.T, dir string, base int64, batches ...[]byte) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("%020d.log", base)), bytes.Join(batches, nil), 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestReadBatchesAcrossSegments(t *testing.T) {
	one, two := t.TempDir(), t.TempDir()
	b0, b3, b5, b9 := fakeBatch(0, 3, 'a'), fakeBatch(3, 2, 'b'), fakeBatch(5, 4, 'c'), fakeBatch(9, 1, 'd')
	writeSegment(t, one, 0, b0, b3, b5, b9)
	writeSegment(t, two, 0, b0)
	writeSegment(t, two, 3, b3, b5)
	writeSegment(t, two, 9, b9)

	a, err := readBatches(one, 9)
	if err != nil {
		t.Fatal(err)
	}
	b, err := readBatches(two, 9)
	if err != nil {
		t.Fatal(err)
	}
	if len(a) != 3 || a[2].base != 5 || a[2].last != 8 {
		t.Fatalf("got %d batches up to offset 9, last %+v", len(a), a[len(a)-1])
	}
	if d := diffBatches(a, b); d != "" {
		t.Fatalf("same batches in other segments differ: %s", d)
	}

	other := t.TempDir()
	writeSegment(t, other, 0, b0, fakeBatch(3, 2, 'x'), b5)
	c, err := readBatches(other, 9)
	if err != nil {
		t.Fatal(err)
	}
	if d := diffBatches(a, c); !strings.Contains(d, "batch 1 differs") {
		t.Fatalf("diff = %q, want batch 1 to differ", d)
	}
}

func TestReadBatchesRejectsDamage(t *testing.T) {
	for name, segs := range map[string][][]byte{
		"torn":  {fakeBatch(0, 3, 'a'), fakeBatch(3, 2, 'b')[:20]},
		"gap":   {fakeBatch(0, 3, 'a'), fakeBatch(4, 2, 'b')},
		"short": {fakeBatch(0, 3, 'a')},
	} {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			writeSegment(t, dir, 0, segs...)
			if _, err := readBatches(dir, 5); err == nil {
				t.Fatal("no error")
			}
		})
	}
}
