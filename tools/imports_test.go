package tools_test

import (
	"os/exec"
	"strings"
	"testing"
)

// TestToolsImportNoBrokerInternals: the commands under tools/ operate any
// Kafka cluster through the protocol; of the broker they may import only its
// configuration table (broker/config). What runs brokers lives in cmd/ktool.
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
