package log

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
)

func FuzzValidateBatches(f *testing.F) {
	one := makeBatch(f, plain(3, 100))
	gz := plain(4, 200)
	gz.gzip = true
	f.Add(one, 0)
	f.Add(append(append([]byte(nil), one...), makeBatch(f, gz)...), 1<<20)
	f.Add(makeBatch(f, idem(9, 1, 5, 2)), 100)
	f.Add(one[:len(one)-1], 0)
	f.Add(one[:20], 0)
	f.Add([]byte{}, 0)
	f.Add(make([]byte, 61), 0)
	f.Fuzz(func(t *testing.T, b []byte, maxBytes int) {
		hdrs, err := ValidateBatches(b, maxBytes)
		if err != nil {
			var ke *kerr.Error
			if !errors.As(err, &ke) {
				t.Fatalf("error %v is not a Kafka error", err)
			}
			return
		}
		var total int64
		for _, h := range hdrs {
			if err := checkRecordCount(h, true); err != nil {
				t.Fatalf("accepted %+v: %v", h, err)
			}
			if batchCRC(b[total:total+h.Size()]) != h.CRC {
				t.Fatal("accepted a batch with a bad CRC")
			}
			if maxBytes > 0 && h.Size() > int64(maxBytes) {
				t.Fatalf("accepted a %d-byte batch with max %d", h.Size(), maxBytes)
			}
			total += h.Size()
		}
		if total != int64(len(b)) {
			t.Fatalf("batches cover %d of %d bytes", total, len(b))
		}
	})
}

// FuzzRecover opens a log whose only segment holds arbitrary bytes: Open
// must cut it to its valid prefix, never fail or panic, and the result must
// read back as valid batches.
func FuzzRecover(f *testing.F) {
	one := makeBatch(f, plain(3, 100))
	two := append(append([]byte(nil), one...), one...)
	setBaseOffset(two[len(one):], 3)
	f.Add(two)
	f.Add(two[:len(two)-9])
	f.Add(one[:30])
	f.Add([]byte("not a log at all"))
	f.Fuzz(func(t *testing.T, b []byte) {
		dir := filepath.Join(t.TempDir(), "t-0")
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(segmentPath(dir, 0, logExt), b, 0o644); err != nil {
			t.Fatal(err)
		}
		l, err := Open(dir, testConfig(), nil)
		if err != nil {
			t.Fatal(err)
		}
		defer l.Close()
		got := readAll(t, l, 0)
		if len(got) > len(b) || string(got) != string(b[:len(got)]) {
			t.Fatal("recovered log is not a prefix of the segment")
		}
	})
}
