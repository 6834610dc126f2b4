package compat

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// TestConfluentKafkaPythonTransactions: librdkafka's transactional producer
// (through confluent-kafka-python) commits, aborts and commits again, is
// fenced by a newer producer of its transactional.id, and read_committed and
// read_uncommitted consumers see exactly what each should, in order.
func TestConfluentKafkaPythonTransactions(t *testing.T) {
	py := needConfluentKafka(t)
	script, err := filepath.Abs(filepath.Join("confluent", "txn.py"))
	if err != nil {
		t.Fatal(err)
	}
	ctx := testCtx(t, 3*time.Minute)
	b := startStandalone(t)
	createTopic(t, b.Addr(), "py-txn", 1, 1, nil)
	const n = 5
	stdout, stderr, err := runErr(ctx, nil, py, script, b.Addr(), "py-txn", fmt.Sprint(n))
	if err != nil {
		t.Fatalf("txn.py: %v\nstdout:\n%s\nstderr:\n%s", err, stdout, tail(string(stderr), 20))
	}
	values := func(tags ...string) []string {
		var out []string
		for _, tag := range tags {
			for i := range n {
				out = append(out, fmt.Sprintf("%s-%d", tag, i))
			}
		}
		return out
	}
	want := map[string][]string{
		"read_committed":   values("c1", "c2", "c3"),
		"read_uncommitted": values("c1", "a1", "c2", "c3"),
	}
	fenced := false
	for _, line := range strings.Split(strings.TrimSpace(string(stdout)), "\n") {
		var l struct {
			Step, Isolation, Where, Error string
			Values                        []string
		}
		if err := json.Unmarshal([]byte(line), &l); err != nil {
			t.Fatalf("txn.py line %q: %v", line, err)
		}
		switch l.Step {
		case "error":
			t.Errorf("txn.py %s: %s", l.Where, l.Error)
		case "fenced":
			fenced = true
		case "read":
			if !slices.Equal(l.Values, want[l.Isolation]) {
				t.Errorf("%s read %v, want %v", l.Isolation, l.Values, want[l.Isolation])
			}
			delete(want, l.Isolation)
		}
	}
	if !fenced {
		t.Error("the producer was not fenced by a newer one of its transactional.id")
	}
	if len(want) != 0 {
		t.Errorf("no read with %v:\n%s", want, stdout)
	}
}
