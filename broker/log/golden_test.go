package log

import (
	"bytes"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
)

// TestGoldenFiles pins the on-disk format: a fixed sequence of appends and a
// clean close must produce exactly the files in testdata/golden. Set
// KTOOL_UPDATE_GOLDEN=1 to rewrite them after an intended format change.
func TestGoldenFiles(t *testing.T) {
	cfg := DefaultConfig()
	cfg.SegmentBytes = 700
	cfg.IndexIntervalBytes = 150
	l, dir := newLog(t, cfg)
	for i := range 12 {
		spec := idem(4, 0, int32(2*i), 2)
		spec.ts = int64(1_600_000_000_000 + 1000*i)
		mustAppend(t, l, makeBatch(t, spec), int32(i/6))
	}
	l.SetHighWatermark(20)
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}

	golden := filepath.Join("testdata", "golden")
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		// A spare holds a checkpoint's previous content, and exists only
		// where names can be exchanged (Linux); TestRewriteCheckpointCreatesNoInode pins it.
		if !strings.HasSuffix(e.Name(), spareSuffix) {
			names = append(names, e.Name())
		}
	}
	sort.Strings(names)
	if os.Getenv("KTOOL_UPDATE_GOLDEN") != "" {
		if err := os.RemoveAll(golden); err != nil {
			t.Fatal(err)
		}
		if err := os.MkdirAll(golden, 0o755); err != nil {
			t.Fatal(err)
		}
		for _, n := range names {
			if err := os.WriteFile(filepath.Join(golden, n), []byte(readFile(t, filepath.Join(dir, n))), 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	want, err := os.ReadDir(golden)
	if err != nil {
		t.Fatal(err)
	}
	var wantNames []string
	for _, e := range want {
		wantNames = append(wantNames, e.Name())
	}
	if got, w := names, wantNames; len(got) != len(w) {
		t.Fatalf("files %v, want %v", got, w)
	}
	for i, n := range wantNames {
		if names[i] != n {
			t.Fatalf("files %v, want %v", names, wantNames)
		}
		if got, w := readFile(t, filepath.Join(dir, n)), readFile(t, filepath.Join(golden, n)); !bytes.Equal([]byte(got), []byte(w)) {
			t.Errorf("%s differs from testdata/golden", n)
		}
	}
}
