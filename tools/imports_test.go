package tools_test

import (
	"os/exec"
	"strings"
	"testing"
)

// TestToolsImportNoBrokerInternals: the commands under tools/ operate any
// Kafka cluster through the protocol (and ZooKeeper); of the broker they may
// import only its configuration table (broker/config), a data definition that
// imports nothing else of ktool. Kafka's znode layout, which `ktool user` and
// `ktool zk` share with the broker, is internal/zkdata. What runs brokers
// lives in cmd/ktool.
func TestToolsImportNoBrokerInternals(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", "-test", "-f", `{{.ImportPath}}`, "./...").CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	const mod = "github.com/ktoolhq/ktool/"
	allowed := map[string]bool{mod + "broker/config": true}
	var bad []string
	for _, p := range strings.Fields(string(out)) {
		if (strings.HasPrefix(p, mod+"broker") || p == mod+"internal/supervisor") && !allowed[p] {
			bad = append(bad, p)
		}
	}
	if len(bad) > 0 {
		t.Fatalf("tools/... depends on broker internals: %v", bad)
	}
}

// TestAllowedBrokerPackagesStayData: what tools/ may import of the broker
// must itself import nothing else of ktool, or the rule above would leak;
// the same holds for the znode layout both sides share.
func TestAllowedBrokerPackagesStayData(t *testing.T) {
	for _, p := range []string{"../broker/config", "../internal/zkdata"} {
		out, err := exec.Command("go", "list", "-deps", "-f", `{{.ImportPath}}`, p).CombinedOutput()
		if err != nil {
			t.Fatalf("go list %s: %v\n%s", p, err, out)
		}
		for _, dep := range strings.Fields(string(out)) {
			if strings.HasPrefix(dep, "github.com/ktoolhq/ktool/") && !strings.HasSuffix(dep, strings.TrimPrefix(p, "..")) {
				t.Errorf("%s imports %s", p, dep)
			}
		}
	}
}
