package replica

import (
	"path/filepath"
	"testing"
)

func TestPartitionDirStaysInLogDir(t *testing.T) {
	root := t.TempDir()
	for _, topic := range []string{"../x", "..", ".", "a/b", "/etc", "a\x00b", "", string(make([]byte, 250))} {
		if dir, err := partitionDir(root, TP{Topic: topic, Partition: 0}); err == nil {
			t.Errorf("topic %q: got %s, want a refusal", topic, dir)
		}
	}
	if _, err := partitionDir(root, TP{Topic: "ok", Partition: -1}); err == nil {
		t.Error("negative partition accepted")
	}
	dir, err := partitionDir(root, TP{Topic: "..x_y-z.", Partition: 3})
	if err != nil || filepath.Dir(dir) != root {
		t.Fatalf("legal topic: %s, %v", dir, err)
	}
}
