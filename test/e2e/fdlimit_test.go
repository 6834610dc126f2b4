package e2e

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ktoolhq/ktool/internal/brokerproc"
)

// TestOpenFileLimit starts a broker hosting 300 partitions under a low
// open-file limit (prlimit, soft and hard): at 400 it must refuse to start
// and say the limit, the need and the fix; at 800 it must start, with one
// descriptor per partition where three per partition would not fit.
func TestOpenFileLimit(t *testing.T) {
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	prlimit, err := exec.LookPath("prlimit")
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("prlimit (util-linux) is needed")
		}
		t.Skip("no prlimit (util-linux): cannot start a broker under a low open-file limit")
	}
	dir := t.TempDir()
	data := filepath.Join(dir, "data")
	for p := range 300 {
		if err := os.MkdirAll(filepath.Join(data, fmt.Sprintf("many-%d", p)), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	limited := func(n int) string {
		script := filepath.Join(dir, fmt.Sprintf("ktool-nofile-%d", n))
		body := fmt.Sprintf("#!/bin/sh\nexec %s --nofile=%d:%d -- %s \"$@\"\n", prlimit, n, n, ktoolBin)
		if err := os.WriteFile(script, []byte(body), 0o755); err != nil {
			t.Fatal(err)
		}
		return script
	}
	spec := brokerproc.Spec{Bin: limited(400), ID: 0, Dir: data, ReadyTimeout: 60 * time.Second,
		Overrides: []string{"log.fd.reserve=100"}}
	b, err := brokerproc.Start(spec)
	if err == nil {
		_ = b.Stop(10 * time.Second)
		t.Fatal("the broker started under an open-file limit of 400 with 300 partitions")
	}
	out := ""
	if b != nil {
		out = b.Tail(20)
	}
	for _, want := range []string{"open-file limit is 400", "needs at least 464", "300 partitions", "ulimit -n 464", "LimitNOFILE=464"} {
		if !strings.Contains(out, want) {
			t.Fatalf("start error lacks %q:\n%v\n%s", want, err, out)
		}
	}

	spec.Bin = limited(800)
	b, err = brokerproc.Start(spec)
	if err != nil {
		out := ""
		if b != nil {
			out = b.Tail(40)
		}
		t.Fatalf("broker with 300 partitions under a limit of 800: %v\n%s", err, out)
	}
	defer func() {
		if err := b.Stop(20 * time.Second); err != nil {
			t.Error(err)
		}
	}()
	if !b.Running() {
		t.Fatalf("broker exited: %v\n%s", b.ExitErr(), b.Tail(40))
	}
}
