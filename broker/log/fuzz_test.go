package log

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/ktoolhq/ktool/internal/batch"
)

// FuzzRecover opens a log whose only segment holds arbitrary bytes: Open
// must cut it to its valid prefix, never fail or panic, and the result must
// read back as valid batches.
func FuzzRecover(f *testing.F) {
	one := makeBatch(f, plain(3, 100))
	two := append(append([]byte(nil), one...), one...)
	batch.SetBaseOffset(two[len(one):], 3)
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
