package chaoscheck

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ktoolhq/ktool/internal/batch"
)

// fakeBatch is a syntactically plausible batch for the parser's tests:
// only the fields ReadBatches looks at are meaningful.
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

	a, err := ReadBatches(one, 9)
	if err != nil {
		t.Fatal(err)
	}
	b, err := ReadBatches(two, 9)
	if err != nil {
		t.Fatal(err)
	}
	if len(a) != 3 || a[2].base != 5 || a[2].last != 8 {
		t.Fatalf("got %d batches up to offset 9, last %+v", len(a), a[len(a)-1])
	}
	if d := DiffBatches(a, b); d != "" {
		t.Fatalf("same batches in other segments differ: %s", d)
	}

	other := t.TempDir()
	writeSegment(t, other, 0, b0, fakeBatch(3, 2, 'x'), b5)
	c, err := ReadBatches(other, 9)
	if err != nil {
		t.Fatal(err)
	}
	if d := DiffBatches(a, c); !strings.Contains(d, "batch 1 differs") {
		t.Fatalf("diff = %q, want batch 1 to differ", d)
	}
}

func TestLogEnd(t *testing.T) {
	dir := t.TempDir()
	if end, err := LogEnd(dir); err != nil || end != 0 {
		t.Fatalf("empty log: end %d, %v", end, err)
	}
	writeSegment(t, dir, 0, fakeBatch(0, 3, 'a'))
	writeSegment(t, dir, 3, fakeBatch(3, 2, 'b'), fakeBatch(5, 4, 'c'))
	if end, err := LogEnd(dir); err != nil || end != 9 {
		t.Fatalf("end %d, %v; want 9", end, err)
	}
	writeSegment(t, dir, 9, fakeBatch(9, 1, 'd')[:20])
	if _, err := LogEnd(dir); err == nil {
		t.Fatal("a torn batch accepted")
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
			if _, err := ReadBatches(dir, 5); err == nil {
				t.Fatal("no error")
			}
		})
	}
}
