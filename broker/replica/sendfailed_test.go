package replica

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"
)

// TestSendFailedTakesTheDirOffline: an error sending a partition's records
// (a fetch's sendfile meeting a bad sector) takes its log dir offline when
// the disk returned it, and changes nothing when the connection did.
func TestSendFailedTakesTheDirOffline(t *testing.T) {
	dirs := []string{t.TempDir(), t.TempDir()}
	failed := make(chan string, 2)
	m := jbodManager(t, dirs, func(dir string, _ int) { failed <- dir })
	defer m.Shutdown()
	a, b := TP{"send", 0}, TP{"send", 1}
	for _, tp := range []TP{a, b} {
		if err := lead(t, m, tp); err != nil {
			t.Fatal(err)
		}
	}
	m.Get(b).SendFailed(&os.SyscallError{Syscall: "sendfile", Err: syscall.EPIPE})
	m.Get(b).SendFailed(&os.SyscallError{Syscall: "sendfile", Err: syscall.ECONNRESET})
	if ds := m.Dirs(); ds[0].Err != nil || ds[1].Err != nil {
		t.Fatalf("a connection's error took a dir offline: %+v", ds)
	}
	m.Get(b).SendFailed(&os.SyscallError{Syscall: "sendfile", Err: syscall.EIO})
	select {
	case dir := <-failed:
		if dir != filepath.Clean(dirs[1]) {
			t.Fatalf("dir %s failed, want %s", dir, dirs[1])
		}
	case <-time.After(10 * time.Second):
		t.Fatal("an EIO sending records did not take their dir offline")
	}
	if !m.Get(b).Offline() || m.Get(a).Offline() {
		t.Fatalf("offline: %s %v, %s %v; want only %s", a, m.Get(a).Offline(), b, m.Get(b).Offline(), b)
	}
}
