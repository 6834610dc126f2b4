package plugins_test

import (
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/ktoolhq/ktool/assignor"
	"github.com/ktoolhq/ktool/assignor/assignortest"
	"github.com/ktoolhq/ktool/plugins"
)

// The example external assignor, built with go build into a plugin
// directory, works through the catalog and passes the conformance suite.
func TestExampleAssignorPlugin(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a plugin binary with go build")
	}
	gobin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go command to build the example plugin")
	}
	dir := t.TempDir()
	build := exec.Command(gobin, "build", "-o", filepath.Join(dir, plugins.ExecutableName(plugins.KindAssignor, "reverse")),
		"../examples/plugins/assignor-reverse")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("building the example plugin: %v\n%s", err, out)
	}
	cat := plugins.NewCatalog(plugins.Options{Dir: dir})
	t.Cleanup(cat.Close)
	ctx := testContext(t)

	info, err := cat.Info(ctx, plugins.KindAssignor, "reverse")
	if err != nil {
		t.Fatal(err)
	}
	if info.Builtin || info.Version != "1.0.0" || info.Cooperative {
		t.Fatalf("info %+v", info)
	}
	a, err := cat.Assignor(ctx, "reverse")
	if err != nil {
		t.Fatal(err)
	}
	got, err := a.Assign([]assignor.Member{
		{ID: "a", Topics: []string{"t"}}, {ID: "b", Topics: []string{"t"}}, {ID: "c", Topics: []string{"t", "u"}},
	}, map[string]int32{"t": 4, "u": 1})
	if err != nil {
		t.Fatal(err)
	}
	want := assignor.Assignment{
		"c": {"t": {0, 3}}, "b": {"t": {1}}, "a": {"t": {2}},
	}
	want["c"]["u"] = []int32{0}
	if !sameAssignment(got, want) {
		t.Fatalf("assigned %v, want %v", got, want)
	}
	assignortest.Run(t, func() assignor.Assignor { return a })
}
