package plugin_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"

	"github.com/ktoolhq/ktool/plugins"
	"github.com/ktoolhq/ktool/plugins/codec"
	"github.com/ktoolhq/ktool/tools/cmdutil"
	"github.com/ktoolhq/ktool/tools/plugin"
)

// Started as `__plugin serve KIND NAME`, the test binary is the ktool
// binary serving a built-in, through the real hidden command.
func TestMain(m *testing.M) {
	if len(os.Args) > 1 && os.Args[1] == plugins.ServeCommand {
		ios, _, _, errOut := cmdutil.Test()
		f := cmdutil.NewFactory(ios, cmdutil.BuildInfo{Version: "9.9.9-test"})
		cmd := plugin.NewServeCommand(f)
		cmd.SetArgs(os.Args[2:])
		if err := cmd.Execute(); err != nil {
			fmt.Fprintln(os.Stderr, err, errOut.String())
			os.Exit(1)
		}
		os.Exit(0)
	}
	// Through a symlink named ktool-codec-gzip it is an external "gzip"
	// that really writes zstd: a codec plugin verify must reject.
	if filepath.Base(os.Args[0]) == "ktool-codec-gzip" {
		if err := plugins.ServeCodec(mislabeled{codec.NewZstd()}, "0.1"); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

type mislabeled struct{ codec.Codec }

func (mislabeled) Name() string { return "gzip" }
func (mislabeled) ID() int8     { return codec.IDGzip }

func run(t *testing.T, args ...string) (string, string, error) {
	t.Helper()
	ios, _, out, errOut := cmdutil.Test()
	f := cmdutil.NewFactory(ios, cmdutil.BuildInfo{Version: "test"})
	cmd := plugin.NewCommand(f)
	cmd.SetArgs(args)
	cmd.SetOut(out)
	cmd.SetErr(errOut)
	ctx, cancel := context.WithTimeout(context.Background(), 60*1e9)
	defer cancel()
	err := cmd.ExecuteContext(ctx)
	return out.String(), errOut.String(), err
}

func TestList(t *testing.T) {
	dir := t.TempDir()
	out, _, err := run(t, "list", "--plugin-dir", dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"range", "roundrobin", "cooperative-sticky", "sticky", "gzip", "snappy", "lz4", "zstd", "9.9.9-test", "yes"} {
		if !strings.Contains(out, want) {
			t.Errorf("list output lacks %q:\n%s", want, out)
		}
	}
	if first, _, _ := strings.Cut(out, "\n"); !strings.Contains(first, "NAME") || !strings.Contains(first, "BUILTIN") {
		t.Errorf("table has no header:\n%s", out)
	}

	out, _, err = run(t, "list", "--plugin-dir", dir, "-o", "json")
	if err != nil {
		t.Fatal(err)
	}
	var infos []plugins.Info
	if err := json.Unmarshal([]byte(out), &infos); err != nil {
		t.Fatalf("%v:\n%s", err, out)
	}
	if len(infos) != 8 || infos[0].Kind != "assignor" || infos[0].Name != "cooperative-sticky" || !infos[0].Builtin {
		t.Fatalf("json list: %+v", infos)
	}

	out, _, err = run(t, "list", "--plugin-dir", dir, "-o", "yaml")
	if err != nil {
		t.Fatal(err)
	}
	var y []map[string]any
	if err := yaml.Unmarshal([]byte(out), &y); err != nil || len(y) != 8 || y[7]["name"] != "zstd" {
		t.Fatalf("yaml list %v, %v:\n%s", y, err, out)
	}
}

func TestListReportsBrokenPlugin(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "ktool-codec-broken"), []byte("#!/bin/sh\necho not a plugin\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	out, errOut, err := run(t, "list", "--plugin-dir", dir)
	var ee *cmdutil.ExitErr
	if !errors.As(err, &ee) || ee.Code != cmdutil.ExitProblems {
		t.Fatalf("err = %v, want exit %d", err, cmdutil.ExitProblems)
	}
	if !strings.Contains(out, "broken") || !strings.Contains(out, "(failed)") {
		t.Errorf("broken plugin not listed as failed:\n%s", out)
	}
	if !strings.Contains(errOut, "codec broken") || !strings.Contains(errOut, "ktool-codec-broken") {
		t.Errorf("no reason given on stderr:\n%s", errOut)
	}
}

func TestVerifyCodec(t *testing.T) {
	out, _, err := run(t, "verify", "zstd", "--plugin-dir", t.TempDir(), "--duration", "50ms", "--sample-bytes", "300000", "--batch-bytes", "100000")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"codec zstd 9.9.9-test (built-in", "round trip:      ok (3 batches", "interoperable:   yes", "MB/s"} {
		if !strings.Contains(out, want) {
			t.Errorf("verify output lacks %q:\n%s", want, out)
		}
	}
	out, _, err = run(t, "verify", "snappy", "--plugin-dir", t.TempDir(), "--duration", "50ms", "--sample-bytes", "100000", "-o", "json")
	if err != nil {
		t.Fatal(err)
	}
	var res plugin.VerifyResult
	if err := json.Unmarshal([]byte(out), &res); err != nil {
		t.Fatalf("%v:\n%s", err, out)
	}
	if res.Codec == nil || !res.Codec.Interoperable || res.Codec.Ratio <= 1 || res.Codec.CompressMBps <= 0 || res.Plugin.CodecID != 2 || res.Assignor != nil {
		t.Fatalf("verify result %+v / %+v", res, res.Codec)
	}
}

func TestVerifyAssignor(t *testing.T) {
	out, _, err := run(t, "verify", "roundrobin", "--plugin-dir", t.TempDir(), "--duration", "50ms",
		"--members", "7", "--topics", "3", "--partitions", "10", "-o", "json")
	if err != nil {
		t.Fatal(err)
	}
	var res plugin.VerifyResult
	if err := json.Unmarshal([]byte(out), &res); err != nil {
		t.Fatalf("%v:\n%s", err, out)
	}
	a := res.Assignor
	if a == nil || a.Members != 7 || a.Partitions != 30 || a.MinPerMember != 4 || a.MaxPerMember != 5 || a.AssignmentsPerSec <= 0 {
		t.Fatalf("verify result %+v", a)
	}
	out, _, err = run(t, "verify", "cooperative-sticky", "--plugin-dir", t.TempDir(), "--duration", "10ms", "--members", "3")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out, "cooperative:     true") || !strings.Contains(out, "assignments/s") {
		t.Errorf("verify output:\n%s", out)
	}
}

func TestVerifyErrors(t *testing.T) {
	dir := t.TempDir()
	if _, _, err := run(t, "verify", "nope", "--plugin-dir", dir); err == nil || !strings.Contains(err.Error(), `"nope"`) {
		t.Errorf("unknown plugin: err = %v", err)
	}
	// A codec plugin named like an assignor makes the name ambiguous.
	if err := os.WriteFile(filepath.Join(dir, "ktool-codec-range"), nil, 0o755); err != nil {
		t.Fatal(err)
	}
	_, _, err := run(t, "verify", "range", "--plugin-dir", dir)
	var ee *cmdutil.ExitErr
	if !errors.As(err, &ee) || ee.Code != cmdutil.ExitUsage || !strings.Contains(err.Error(), "--kind") {
		t.Errorf("ambiguous name: err = %v", err)
	}
	if _, _, err := run(t, "verify", "range", "--kind", "bogus"); !errors.As(err, &ee) || ee.Code != cmdutil.ExitUsage {
		t.Errorf("bad kind: err = %v", err)
	}
	if _, _, err := run(t, "verify", "zstd", "--duration", "0s"); !errors.As(err, &ee) || ee.Code != cmdutil.ExitUsage {
		t.Errorf("zero duration: err = %v", err)
	}
}

func TestServeRefusesToRunByHand(t *testing.T) {
	ios, _, _, _ := cmdutil.Test()
	cmd := plugin.NewServeCommand(cmdutil.NewFactory(ios, cmdutil.BuildInfo{}))
	cmd.SetArgs([]string{"serve", "codec", "zstd"})
	var buf bytes.Buffer
	cmd.SetErr(&buf)
	cmd.SetOut(&buf)
	if err := cmd.Execute(); !errors.Is(err, plugins.ErrNotPluginHost) {
		t.Fatalf("err = %v, want ErrNotPluginHost", err)
	}
}

func TestVerifyRejectsCodecInTheWrongFormat(t *testing.T) {
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if err := os.Symlink(self, filepath.Join(dir, "ktool-codec-gzip")); err != nil {
		t.Fatal(err)
	}
	_, _, err = run(t, "verify", "gzip", "--plugin-dir", dir, "--duration", "10ms", "--sample-bytes", "10000")
	if err == nil || !strings.Contains(err.Error(), "built-in gzip cannot read what the plugin wrote") || !strings.Contains(err.Error(), dir) {
		t.Fatalf("err = %v, want the interoperability check to fail", err)
	}
}
