package plugins_test

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/ktoolhq/ktool/assignor"
	"github.com/ktoolhq/ktool/assignor/assignortest"
	"github.com/ktoolhq/ktool/plugins"
	"github.com/ktoolhq/ktool/plugins/codec"
)

func TestBuiltinCodecsThroughPlugin(t *testing.T) {
	ctx := testContext(t)
	cat := newCatalog(t)
	in := [][]byte{bytes.Repeat([]byte("kafka records "), 5000), []byte("second batch"), {}}
	for _, builtin := range codec.Builtins() {
		t.Run(builtin.Name(), func(t *testing.T) {
			c, err := cat.Codec(ctx, builtin.Name())
			if err != nil {
				t.Fatal(err)
			}
			if c.Name() != builtin.Name() || c.ID() != builtin.ID() {
				t.Fatalf("got codec %s/%d, want %s/%d", c.Name(), c.ID(), builtin.Name(), builtin.ID())
			}
			comp, err := c.Compress(ctx, in)
			if err != nil {
				t.Fatal(err)
			}
			// What the plugin compressed, the in-process codec reads, and the other way round.
			back, err := builtin.Decompress(ctx, comp, 0)
			if err != nil {
				t.Fatal(err)
			}
			local, err := builtin.Compress(ctx, in)
			if err != nil {
				t.Fatal(err)
			}
			back2, err := c.Decompress(ctx, local, 0)
			if err != nil {
				t.Fatal(err)
			}
			for i := range in {
				if !bytes.Equal(back[i], in[i]) || !bytes.Equal(back2[i], in[i]) {
					t.Fatalf("section %d did not survive the round trip", i)
				}
			}
		})
	}
	if got := cat.Calls(); got != int64(2*len(codec.Builtins())) {
		t.Errorf("Calls() = %d, want %d", got, 2*len(codec.Builtins()))
	}
}

func TestPluginProcessReused(t *testing.T) {
	ctx := testContext(t)
	cat := newCatalog(t)
	a, err := cat.Info(ctx, plugins.KindCodec, "zstd")
	if err != nil {
		t.Fatal(err)
	}
	c1, _ := cat.Codec(ctx, "zstd")
	c2, _ := cat.Codec(ctx, "zstd")
	for _, c := range []codec.Codec{c1, c2} {
		if _, err := c.Compress(ctx, [][]byte{[]byte("x")}); err != nil {
			t.Fatal(err)
		}
	}
	b, _ := cat.Info(ctx, plugins.KindCodec, "zstd")
	if a != b || !a.Builtin || a.Version != "test" || a.CodecID != codec.IDZstd {
		t.Fatalf("info %+v then %+v", a, b)
	}
	if n := countPluginProcs(t, os.Getpid()); n != 1 {
		t.Fatalf("%d plugin processes running, want 1", n)
	}
}

// countPluginProcs counts the live children of pid.
func countPluginProcs(t *testing.T, pid int) int {
	t.Helper()
	return len(children(t, pid))
}

// children lists the child processes of pid, from every thread: a child
// belongs to the thread that started it.
func children(t *testing.T, pid int) []int {
	t.Helper()
	files, err := filepath.Glob("/proc/" + strconv.Itoa(pid) + "/task/*/children")
	if err != nil || len(files) == 0 {
		t.Skipf("cannot read children from /proc (%v)", err)
	}
	var out []int
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		for _, field := range strings.Fields(string(b)) {
			if n, err := strconv.Atoi(field); err == nil && alive(n) {
				out = append(out, n)
			}
		}
	}
	return out
}

// alive reports whether pid runs and is not a zombie.
func alive(pid int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	// The state follows the command name in parentheses.
	i := bytes.LastIndexByte(b, ')')
	return i >= 0 && i+2 < len(b) && b[i+2] != 'Z'
}

func TestCloseStopsPlugins(t *testing.T) {
	ctx := testContext(t)
	cat := newCatalog(t)
	for _, name := range []string{"gzip", "lz4"} {
		if _, err := cat.Codec(ctx, name); err != nil {
			t.Fatal(err)
		}
	}
	if n := countPluginProcs(t, os.Getpid()); n != 2 {
		t.Fatalf("%d plugin processes, want 2", n)
	}
	cat.Close()
	if n := countPluginProcs(t, os.Getpid()); n != 0 {
		t.Fatalf("%d plugin processes left after Close", n)
	}
	if _, err := cat.Codec(ctx, "gzip"); err == nil {
		t.Fatal("a closed catalog started a plugin")
	}
}

func TestMissingPlugin(t *testing.T) {
	ctx := testContext(t)
	cat := newCatalog(t)
	_, err := cat.Codec(ctx, "brotli")
	if err == nil || !strings.Contains(err.Error(), "ktool-codec-brotli") || !strings.Contains(err.Error(), cat.Dir()) {
		t.Fatalf("err = %v, want one naming the executable and the directory", err)
	}
	if _, err := cat.Assignor(ctx, "../range"); err == nil {
		t.Fatal("a name with a path separator was accepted")
	}
	if _, err := cat.CodecByID(ctx, 7); err == nil {
		t.Fatal("codec id 7 was accepted")
	}
}

func TestCrashMidCall(t *testing.T) {
	ctx := testContext(t)
	cat := newCatalog(t, "ktool-codec-crashy")
	c, err := cat.Codec(ctx, "crashy")
	if err != nil {
		t.Fatal(err)
	}
	_, err = c.Compress(ctx, [][]byte{[]byte("boom")})
	if err == nil {
		t.Fatal("a crashing plugin returned no error")
	}
	t.Log(err)
	for _, want := range []string{`"crashy"`, "ktool-codec-crashy", "crashy: out of luck"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("err = %v, want it to mention %q", err, want)
		}
	}
	// The next call starts the plugin again; Decompress works there.
	out, err := c.Decompress(ctx, [][]byte{[]byte("fine")}, 0)
	if err != nil || string(out[0]) != "fine" {
		t.Fatalf("after a restart: %q, %v", out, err)
	}
}

func TestStuckCallIsBounded(t *testing.T) {
	self, _ := os.Executable()
	dir := t.TempDir()
	if err := os.Symlink(self, filepath.Join(dir, "ktool-codec-stuck")); err != nil {
		t.Fatal(err)
	}
	cat := plugins.NewCatalog(plugins.Options{Dir: dir, Self: self, CallTimeout: 200 * time.Millisecond})
	defer cat.Close()
	c, err := cat.Codec(testContext(t), "stuck")
	if err != nil {
		t.Fatal(err)
	}
	// No deadline on the caller's context: the catalog's CallTimeout applies.
	_, err = c.Compress(context.Background(), [][]byte{{1}})
	t.Log(err)
	if !errors.Is(err, context.DeadlineExceeded) || !strings.Contains(err.Error(), `"stuck"`) {
		t.Fatalf("err = %v, want a deadline error naming the plugin", err)
	}
	// The caller's own deadline applies as well.
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	if _, err := c.Compress(ctx, [][]byte{{1}}); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("err = %v, want a deadline error", err)
	}
	// Other calls still reach the plugin.
	if out, err := c.Decompress(testContext(t), [][]byte{[]byte("ok")}, 0); err != nil || string(out[0]) != "ok" {
		t.Fatalf("Decompress after stuck calls: %q, %v", out, err)
	}
}

func TestPluginErrorsAndPanicsAreErrors(t *testing.T) {
	ctx := testContext(t)
	cat := newCatalog(t, "ktool-codec-failing")
	c, err := cat.Codec(ctx, "failing")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Compress(ctx, [][]byte{{1}}); err == nil || !strings.Contains(err.Error(), "disk on fire") {
		t.Fatalf("err = %v, want the plugin's error", err)
	}
	if _, err := c.Decompress(ctx, [][]byte{{1}}, 0); err == nil || !strings.Contains(err.Error(), "unexpected state") {
		t.Fatalf("err = %v, want the plugin's panic as an error", err)
	}
	// The panic did not take the process down: the next call still reaches it.
	if _, err := c.Compress(ctx, [][]byte{{1}}); err == nil || !strings.Contains(err.Error(), "disk on fire") {
		t.Fatalf("err = %v after a panic", err)
	}
}

func TestWrongHandshake(t *testing.T) {
	ctx := testContext(t)
	cat := newCatalog(t, "ktool-codec-future")
	_, err := cat.Codec(ctx, "future")
	t.Log(err)
	if err == nil || !strings.Contains(err.Error(), "ktool-codec-future") || !strings.Contains(err.Error(), "version") {
		t.Fatalf("err = %v, want a protocol version error naming the plugin", err)
	}
}

func TestNotAPluginTimesOut(t *testing.T) {
	self, _ := os.Executable()
	dir := t.TempDir()
	if err := os.Symlink(self, dir+"/ktool-codec-silent"); err != nil {
		t.Fatal(err)
	}
	cat := plugins.NewCatalog(plugins.Options{Dir: dir, Self: self, StartTimeout: time.Second})
	defer cat.Close()
	_, err := cat.Codec(testContext(t), "silent")
	t.Log(err)
	if err == nil || !strings.Contains(err.Error(), "ktool-codec-silent") || !strings.Contains(err.Error(), "timeout") {
		t.Fatalf("err = %v, want a start timeout naming the plugin", err)
	}
	if n := countPluginProcs(t, os.Getpid()); n != 0 {
		t.Fatalf("%d processes left after a failed start", n)
	}
}

func TestCallerContextBoundsStart(t *testing.T) {
	self, _ := os.Executable()
	dir := t.TempDir()
	if err := os.Symlink(self, dir+"/ktool-codec-silent"); err != nil {
		t.Fatal(err)
	}
	cat := plugins.NewCatalog(plugins.Options{Dir: dir, Self: self, StartTimeout: time.Second})
	defer cat.Close()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := cat.Codec(ctx, "silent"); err == nil || !strings.Contains(err.Error(), "canceled") {
		t.Fatalf("err = %v, want the caller's cancellation", err)
	}
}

func TestExternalOverridesBuiltinAndListing(t *testing.T) {
	ctx := testContext(t)
	cat := newCatalog(t, "ktool-codec-gzip", "ktool-codec-liar", "ktool-codec-crashy")
	c, err := cat.CodecByID(ctx, codec.IDGzip)
	if err != nil {
		t.Fatal(err)
	}
	info, err := cat.Info(ctx, plugins.KindCodec, "gzip")
	if err != nil {
		t.Fatal(err)
	}
	if info.Builtin || info.Version != "external-1" || !strings.HasSuffix(info.Path, "ktool-codec-gzip") {
		t.Fatalf("gzip info %+v, want the external plugin", info)
	}
	if _, err := c.Compress(ctx, [][]byte{[]byte("x")}); err != nil {
		t.Fatal(err)
	}
	list, err := cat.List(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	byName := map[string]plugins.Info{}
	for _, i := range list {
		got = append(got, i.Kind+"/"+i.Name)
		byName[i.Name] = i
	}
	want := "assignor/cooperative-sticky assignor/range assignor/roundrobin assignor/sticky codec/crashy codec/gzip codec/liar codec/lz4 codec/snappy codec/zstd"
	if strings.Join(got, " ") != want {
		t.Fatalf("listed %v\nwant %v", got, want)
	}
	if i := byName["liar"]; !strings.Contains(i.Error, `"zstd"`) {
		t.Errorf("liar listed as %+v, want an error about its name", i)
	}
	if i := byName["range"]; !i.Builtin || i.Version != "test" || i.Error != "" || i.Cooperative {
		t.Errorf("range listed as %+v", i)
	}
	if i := byName["cooperative-sticky"]; !i.Cooperative {
		t.Errorf("cooperative-sticky listed as %+v", i)
	}
	if i := byName["crashy"]; i.Builtin || i.Version != "v0" || i.CodecID != codec.IDGzip {
		t.Errorf("crashy listed as %+v", i)
	}
}

func TestBuiltinAssignorsThroughPlugin(t *testing.T) {
	ctx := testContext(t)
	cat := newCatalog(t)
	for _, builtin := range assignor.Builtins() {
		t.Run(builtin.Name(), func(t *testing.T) {
			a, err := cat.Assignor(ctx, builtin.Name())
			if err != nil {
				t.Fatal(err)
			}
			// The handle finds the live plugin process on every call, so one serves all cases.
			assignortest.Run(t, func() assignor.Assignor { return a })
		})
	}
}

func TestAssignorPluginMatchesInProcess(t *testing.T) {
	ctx := testContext(t)
	cat := newCatalog(t)
	owned := map[string][]int32{"a": {0, 2}, "b": {1}}
	members := []assignor.Member{
		{ID: "m1", Topics: []string{"a", "b"}, Generation: 3, Owned: owned},
		{ID: "m2", InstanceID: "static-2", Topics: []string{"a"}, Owned: map[string][]int32{}, Generation: -1},
		{ID: "m3", Topics: []string{"b", "c"}, Generation: -1},
	}
	partitions := map[string]int32{"a": 6, "b": 3, "c": 0}
	for _, builtin := range assignor.Builtins() {
		p, err := cat.Assignor(ctx, builtin.Name())
		if err != nil {
			t.Fatal(err)
		}
		if p.Name() != builtin.Name() || p.Cooperative() != builtin.Cooperative() {
			t.Fatalf("plugin says %s/%v, want %s/%v", p.Name(), p.Cooperative(), builtin.Name(), builtin.Cooperative())
		}
		ms := append([]assignor.Member(nil), members...)
		for i := range ms {
			ms[i].UserData = builtin.UserData(ms[i].Owned, ms[i].Generation)
			if ud := p.UserData(ms[i].Owned, ms[i].Generation); !bytes.Equal(ud, ms[i].UserData) || (ud == nil) != (ms[i].UserData == nil) {
				t.Fatalf("%s: plugin user data %x, want %x", builtin.Name(), ud, ms[i].UserData)
			}
		}
		want, err := builtin.Assign(ms, partitions)
		if err != nil {
			t.Fatal(err)
		}
		got, err := p.Assign(ms, partitions)
		if err != nil {
			t.Fatal(err)
		}
		if !sameAssignment(got, want) {
			t.Fatalf("%s: plugin assigned %v, in process %v", builtin.Name(), got, want)
		}
		// Bad input is the assignor's error, carried back as an error.
		if _, err := p.Assign([]assignor.Member{{ID: ""}}, partitions); err == nil {
			t.Fatalf("%s: an empty member id was accepted", builtin.Name())
		}
	}
}

func sameAssignment(a, b assignor.Assignment) bool {
	if len(a) != len(b) {
		return false
	}
	for m, ta := range a {
		tb, ok := b[m]
		if !ok || len(ta) != len(tb) {
			return false
		}
		for topic, pa := range ta {
			pb, ok := tb[topic]
			if !ok || len(pa) != len(pb) {
				return false
			}
			for i := range pa {
				if pa[i] != pb[i] {
					return false
				}
			}
		}
	}
	return true
}

// The plugin dies with its host even when the host is killed outright.
func TestPluginDiesWithHost(t *testing.T) {
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	host := exec.Command(self, hostRole)
	host.Stderr = os.Stderr
	out, err := host.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := host.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		_ = host.Process.Kill()
		_ = host.Wait()
	}()
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil || strings.TrimSpace(line) != "ready" {
		t.Fatalf("host said %q, %v", line, err)
	}
	kids := children(t, host.Process.Pid)
	if len(kids) != 1 {
		t.Fatalf("host has %d plugin processes, want 1", len(kids))
	}
	if err := host.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = host.Wait()
	deadline := time.Now().Add(10 * time.Second)
	for alive(kids[0]) {
		if time.Now().After(deadline) {
			t.Fatalf("plugin %d still running after its host was killed", kids[0])
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestCodecByIDInProcessOnce: a built-in codec id resolves to the in-process
// codec, the same instance every time, and using it makes no plugin call.
func TestCodecByIDInProcessOnce(t *testing.T) {
	ctx := testContext(t)
	cat := newCatalog(t)
	in := [][]byte{bytes.Repeat([]byte("kafka records "), 5000)}
	for _, b := range codec.Builtins() {
		c1, err := cat.CodecByID(ctx, b.ID())
		if err != nil {
			t.Fatal(err)
		}
		c2, err := cat.CodecByID(ctx, b.ID())
		if err != nil || c1 != c2 {
			t.Fatalf("%s: a second lookup gave %p, %v; want the first one %p", b.Name(), c2, err, c1)
		}
		if _, ok := c1.(codec.Streamer); !ok {
			t.Fatalf("%s resolved to %T, not the in-process codec", b.Name(), c1)
		}
		comp, err := c1.Compress(ctx, in)
		if err != nil {
			t.Fatal(err)
		}
		if back, err := c1.Decompress(ctx, comp, 0); err != nil || !bytes.Equal(back[0], in[0]) {
			t.Fatalf("%s round trip: %v", b.Name(), err)
		}
	}
	if n := cat.Calls(); n != 0 {
		t.Fatalf("%d plugin calls for built-in codecs", n)
	}
}

// TestPluginDecompressHonoursLimit: a codec plugin process is sent the
// caller's limit and stops there, so a bomb inflates in neither process.
func TestPluginDecompressHonoursLimit(t *testing.T) {
	ctx := testContext(t)
	cat := newCatalog(t)
	remote, err := cat.Codec(ctx, "zstd")
	if err != nil {
		t.Fatal(err)
	}
	bomb, err := codec.NewZstd().Compress(ctx, [][]byte{make([]byte, 64<<20)})
	if err != nil {
		t.Fatal(err)
	}
	_, err = remote.Decompress(ctx, bomb, 1<<20)
	if !errors.Is(err, codec.ErrTooLarge) {
		t.Fatalf("err = %v, want ErrTooLarge from the plugin process", err)
	}
	if out, err := remote.Decompress(ctx, bomb, 64<<20); err != nil || len(out[0]) != 64<<20 {
		t.Fatalf("at a limit it fits: %v", err)
	}
}
