package faultfs

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// TestMain lets TestSweepDetachesDeadServers run this binary as the
// process that mounts and is then killed.
func TestMain(m *testing.M) {
	if dir := os.Getenv("FAULTFS_CHILD_MOUNT"); dir != "" {
		if _, err := New(os.Getenv("FAULTFS_CHILD_BACKING"), dir); err != nil {
			fmt.Println(err)
			os.Exit(1)
		}
		fmt.Println("mounted")
		if os.Getenv("FAULTFS_CHILD_EXIT") != "" {
			// Exit with a file open on the mount this process serves.
			if _, err := os.Create(filepath.Join(dir, "left-open")); err != nil {
				fmt.Println(err)
				os.Exit(1)
			}
			os.Exit(0)
		}
		select {}
	}
	os.Exit(m.Run())
}

// TestFaultClasses: each class fails the operations it names, with the
// errno asked for, and only those: with every other class failing, the
// operation still succeeds.
func TestFaultClasses(t *testing.T) {
	f := Mount(t)
	path := filepath.Join(f.Dir(), "seg.log")
	w, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	if _, err := w.Write([]byte("healthy")); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(f.Dir(), "a"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	open := func(name string, flag int) func() error {
		return func() error {
			h, err := os.OpenFile(filepath.Join(f.Dir(), name), flag, 0o644)
			if err == nil {
				h.Close()
			}
			return err
		}
	}
	renamed := false
	buf := make([]byte, 7)
	cases := []struct {
		name  string
		fault Fault
		op    func() error
		want  syscall.Errno
	}{
		{"write", Fault{Ops: Write}, func() error { _, err := w.WriteAt([]byte("x"), 7); return err }, syscall.EIO},
		{"enospc", Fault{Ops: Write, Errno: syscall.ENOSPC}, func() error { _, err := w.WriteAt([]byte("x"), 7); return err }, syscall.ENOSPC},
		{"truncate", Fault{Ops: Write}, func() error { return w.Truncate(7) }, syscall.EIO},
		// Direct I/O: the bytes just written are not served from the page cache.
		{"read", Fault{Ops: Read}, func() error { _, err := w.ReadAt(buf, 0); return err }, syscall.EIO},
		{"fsync", Fault{Ops: Sync}, w.Sync, syscall.EIO},
		{"open", Fault{Ops: Open}, open("seg.log", os.O_RDONLY), syscall.EIO},
		{"create", Fault{Ops: Open}, open("new", os.O_CREATE|os.O_WRONLY), syscall.EIO},
		{"mkdir", Fault{Ops: Meta}, func() error { return os.Mkdir(filepath.Join(f.Dir(), "d"), 0o755) }, syscall.EIO},
		{"rename", Fault{Ops: Meta}, func() error {
			from, to := "a", "b"
			if renamed {
				from, to = to, from
			}
			err := os.Rename(filepath.Join(f.Dir(), from), filepath.Join(f.Dir(), to))
			renamed = renamed != (err == nil)
			return err
		}, syscall.EIO},
		{"readdir", Fault{Ops: Meta}, func() error { _, err := os.ReadDir(f.Dir()); return err }, syscall.EIO},
	}
	for _, c := range cases {
		f.Set(c.fault)
		before := f.Injected()
		if err := c.op(); !errors.Is(err, c.want) {
			t.Errorf("%s under %+v: %v, want %v", c.name, c.fault, err, c.want)
		}
		if got := f.Injected() - before; got != 1 {
			t.Errorf("%s: %d errors injected, want 1", c.name, got)
		}
		f.Set(Fault{Ops: All &^ c.fault.Ops})
		if err := c.op(); err != nil {
			t.Errorf("%s with every other class failing: %v", c.name, err)
		}
	}
	f.Set(Fault{Ops: All})
	if _, err := w.ReadAt(buf, 0); !errors.Is(err, syscall.EIO) {
		t.Errorf("read with every class failing: %v", err)
	}
	if _, err := os.Stat(path); err != nil {
		t.Errorf("stat with every class failing: %v (lookups and stat never fail)", err)
	}
	f.Clear()
	if _, err := w.ReadAt(buf, 0); err != nil || string(buf) != "healthy" {
		t.Fatalf("after Clear: %q %v", buf, err)
	}
	if st, err := os.Stat(filepath.Join(f.Backing(), "seg.log")); err != nil || st.Size() != 7 {
		t.Fatalf("backing file: %v %v, want the 7 bytes written before the faults", st, err)
	}
}

func TestFlakey(t *testing.T) {
	f := Mount(t)
	w, err := os.Create(filepath.Join(f.Dir(), "flakey"))
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	f.Set(Fault{Ops: Write, Fail: 1, Every: 4})
	var failed []int
	for i := 1; i <= 12; i++ {
		if _, err := w.Write([]byte{byte(i)}); err != nil {
			failed = append(failed, i)
		}
	}
	if fmt.Sprint(failed) != "[4 8 12]" {
		t.Fatalf("writes that failed: %v, want [4 8 12]", failed)
	}
}

// TestAfterBytes: the write crossing the budget lands in part (torn), and
// every write after it fails.
func TestAfterBytes(t *testing.T) {
	f := Mount(t)
	w, err := os.Create(filepath.Join(f.Dir(), "torn"))
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	f.Set(Fault{Ops: Write, AfterBytes: 25})
	chunk := []byte("0123456789")
	for i, want := range []bool{true, true, false, false} {
		_, err := w.Write(chunk)
		if (err == nil) != want {
			t.Fatalf("write %d: %v", i, err)
		}
	}
	got, err := os.ReadFile(filepath.Join(f.Backing(), "torn"))
	if err != nil || string(got) != "0123456789012345678901234" {
		t.Fatalf("backing file holds %q (%v), want the 25 bytes of the budget", got, err)
	}
}

// TestBadSector: only reads and writes touching the bad bytes fail.
func TestBadSector(t *testing.T) {
	f := Mount(t)
	path := filepath.Join(f.Dir(), "seg")
	if err := os.WriteFile(path, make([]byte, 3*4096), 0o644); err != nil {
		t.Fatal(err)
	}
	h, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	f.Set(Fault{Ops: Read | Write | Sync, At: 5000, Len: 10})
	buf := make([]byte, 100)
	for _, c := range []struct {
		off  int64
		fail bool
	}{{0, false}, {4900, false}, {4901, true}, {5009, true}, {5010, false}} {
		_, rerr := h.ReadAt(buf, c.off)
		_, werr := h.WriteAt(buf, c.off)
		if (rerr != nil) != c.fail || (werr != nil) != c.fail {
			t.Errorf("100 bytes at %d: read %v, write %v; want failing %v", c.off, rerr, werr, c.fail)
		}
	}
	if err := h.Sync(); err != nil {
		t.Errorf("fsync with a bad sector: %v", err)
	}
}

// TestSendfileMeetsReadFault: a broker sends segments with sendfile(2); the
// read fault reaches it too.
func TestSendfileMeetsReadFault(t *testing.T) {
	f := Mount(t)
	path := filepath.Join(f.Dir(), "seg")
	if err := os.WriteFile(path, make([]byte, 64<<10), 0o644); err != nil {
		t.Fatal(err)
	}
	in, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	out, err := os.Create(filepath.Join(t.TempDir(), "out"))
	if err != nil {
		t.Fatal(err)
	}
	defer out.Close()
	var off int64
	if n, err := unix.Sendfile(int(out.Fd()), int(in.Fd()), &off, 4096); err != nil || n != 4096 {
		t.Fatalf("healthy sendfile: %d %v", n, err)
	}
	f.Set(Fault{Ops: Read})
	if n, err := unix.Sendfile(int(out.Fd()), int(in.Fd()), &off, 4096); !errors.Is(err, syscall.EIO) {
		t.Fatalf("sendfile under a read fault: %d %v, want EIO", n, err)
	}
}

// TestCloseWithOpenFile: a file still open makes Close a lazy unmount that
// completes when the file is closed.
func TestCloseWithOpenFile(t *testing.T) {
	f := Mount(t)
	h, err := os.Create(filepath.Join(f.Dir(), "open"))
	if err != nil {
		t.Fatal(err)
	}
	go func() {
		time.Sleep(300 * time.Millisecond)
		h.Close()
	}()
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	if mounted(t, f.Dir()) {
		t.Fatalf("%s still mounted after Close", f.Dir())
	}
}

// TestSweepDetachesDeadServers: a process that mounted and was killed left
// a mount whose every access fails (ENOTCONN, not a hang); Sweep detaches
// it, and leaves the mounts of live processes alone.
func TestSweepDetachesDeadServers(t *testing.T) {
	Mount(t) // root and /dev/fuse, or skip
	backing, dir := t.TempDir(), t.TempDir()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), "FAULTFS_CHILD_MOUNT="+dir, "FAULTFS_CHILD_BACKING="+backing)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cmd.Process.Kill()
		cmd.Wait()
		unix.Unmount(dir, unix.MNT_DETACH)
	})
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil || line != "mounted\n" {
		t.Fatalf("child: %q %v", line, err)
	}
	if err := Sweep(); err != nil || !mounted(t, dir) {
		t.Fatalf("Sweep with the server alive: %v; mounted: %v", err, mounted(t, dir))
	}
	if err := cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	cmd.Wait()
	done := make(chan error, 1)
	go func() { _, err := os.ReadDir(dir); done <- err }()
	select {
	case err := <-done:
		if !errors.Is(err, syscall.ENOTCONN) {
			t.Fatalf("listing the mount of a dead server: %v, want ENOTCONN", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("listing the mount of a dead server hangs")
	}
	if err := Sweep(); err != nil {
		t.Fatal(err)
	}
	if mounted(t, dir) {
		t.Fatalf("%s still mounted after Sweep", dir)
	}
}

func TestUnescape(t *testing.T) {
	if got := unescape(`/tmp/a\040b\\c\134d`); got != `/tmp/a b\\c\d` {
		t.Fatalf("unescape: %q", got)
	}
}

func mounted(t *testing.T, dir string) bool {
	t.Helper()
	info, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(info), "\n") {
		if f := strings.Fields(line); len(f) > 4 && unescape(f[4]) == dir {
			return true
		}
	}
	return false
}

// TestChildrenDoNotInheritTheConnection: a process the test starts (a
// broker) must not hold /dev/fuse, or the mount would hang rather than fail
// once the test process is gone.
func TestChildrenDoNotInheritTheConnection(t *testing.T) {
	Mount(t)
	out, err := exec.Command("ls", "-l", "/proc/self/fd/").CombinedOutput()
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(out), "/dev/fuse") {
		t.Fatalf("a child process holds the FUSE connection:\n%s", out)
	}
}

// TestCloseWithACopyInAnotherNamespace: a mount namespace created while the
// file system is mounted (as ip netns exec creates one for each command)
// holds a private copy of the mount, so unmounting does not end the
// connection; Close aborts it.
func TestCloseWithACopyInAnotherNamespace(t *testing.T) {
	f := Mount(t)
	if _, err := exec.LookPath("unshare"); err != nil {
		t.Skipf("unshare (util-linux) is missing: %v", err)
	}
	holder := exec.Command("unshare", "--mount", "--propagation", "private", "sleep", "60")
	if err := holder.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		holder.Process.Kill()
		holder.Wait()
	}()
	waitForNamespace(t, holder.Process.Pid, f.Dir())
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	if mounted(t, f.Dir()) {
		t.Fatalf("%s still mounted after Close", f.Dir())
	}
}

// waitForNamespace waits until process pid sees a mount on dir.
func waitForNamespace(t *testing.T, pid int, dir string) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		info, _ := os.ReadFile(fmt.Sprintf("/proc/%d/mountinfo", pid))
		self, _ := os.Readlink("/proc/self/ns/mnt")
		other, _ := os.Readlink(fmt.Sprintf("/proc/%d/ns/mnt", pid))
		if other != "" && other != self && strings.Contains(string(info), dir) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("process %d has no namespace of its own with %s in it", pid, dir)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestExitWithAFileOpenOnItsOwnMount: a test process that ends (a panic, a
// timeout) with a file open on a mount it serves must still exit. Closing
// the file at exit sent FUSE a FLUSH that the process's dead server could
// never answer, and the process hung for ever in its exit.
func TestExitWithAFileOpenOnItsOwnMount(t *testing.T) {
	Mount(t) // root and /dev/fuse, or skip
	backing, dir := t.TempDir(), t.TempDir()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), "FAULTFS_CHILD_MOUNT="+dir, "FAULTFS_CHILD_BACKING="+backing, "FAULTFS_CHILD_EXIT=1")
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { unix.Unmount(dir, unix.MNT_DETACH) })
	done := make(chan error, 1)
	go func() {
		b, _ := io.ReadAll(out)
		err := cmd.Wait()
		if err == nil && string(b) != "mounted\n" {
			err = fmt.Errorf("child said %q", b)
		}
		done <- err
	}()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the process did not exit with a file open on the mount it serves")
	}
}
