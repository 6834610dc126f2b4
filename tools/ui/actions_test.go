package ui

import (
	"encoding/json"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/ktoolhq/ktool/tools/cmdutil/cmdtest"
)

// TestActionsChangeTheCluster runs every action through the HTTP API, as the
// page does, and checks its effect with an admin client of its own.
func TestActionsChangeTheCluster(t *testing.T) {
	c := cmdtest.Cluster(t, kfake.NumBrokers(3))
	brokers := c.ListenAddrs()
	adm := admin(t, brokers)
	ctx := t.Context()
	con := startConsole(t, brokers, nil)
	ck, csrf := session(t, con, func(*http.Request) {})
	do := func(action string, body any) (int, actionResult) {
		t.Helper()
		b, _ := json.Marshal(body)
		code, out := post(t, con, "/api/actions/"+action, string(b), func(r *http.Request) { r.AddCookie(ck); r.Header.Set(csrfHeader, csrf) })
		var res actionResult
		_ = json.Unmarshal([]byte(out), &res)
		if code != 200 {
			t.Logf("%s: %d %s", action, code, out)
		}
		return code, res
	}
	ok := func(action string, body any) actionResult {
		t.Helper()
		code, res := do(action, body)
		if code != 200 {
			t.Fatalf("%s failed", action)
		}
		return res
	}

	ok("create-topic", map[string]any{"topic": "orders", "partitions": 2, "replication_factor": 3, "configs": map[string]string{"retention.ms": "1000000"}})
	ok("add-partitions", map[string]any{"topic": "orders", "partitions": 2})
	td, err := adm.ListTopics(ctx, "orders")
	if err != nil || len(td["orders"].Partitions) != 4 {
		t.Fatalf("orders after add-partitions: %v %+v", err, td)
	}
	ok("alter-config", map[string]any{"topic": "orders", "name": "cleanup.policy", "value": "compact"})
	rcs, err := adm.DescribeTopicConfigs(ctx, "orders")
	if err != nil {
		t.Fatal(err)
	}
	if v, err := rcs.On("orders", nil); err != nil || configValue(v, "cleanup.policy") != "compact" {
		t.Fatalf("cleanup.policy after alter-config: %v %+v", err, v)
	}

	produce(t, brokers, &kgo.Record{Topic: "orders", Partition: 1, Value: []byte("a")},
		&kgo.Record{Topic: "orders", Partition: 1, Value: []byte("b")}, &kgo.Record{Topic: "orders", Partition: 1, Value: []byte("c")})
	res := ok("delete-records", map[string]any{"topic": "orders", "partition": 1, "offset": 2})
	starts, err := adm.ListStartOffsets(ctx, "orders")
	if so, _ := starts.Lookup("orders", 1); err != nil || so.Offset != 2 || !strings.Contains(res.Message, "log start is now 2") {
		t.Fatalf("log start after delete-records: %v %+v (%s)", err, so, res.Message)
	}

	commit := kadm.Offsets{}
	commit.Add(kadm.Offset{Topic: "orders", Partition: 1, At: 2, LeaderEpoch: -1})
	if _, err := adm.CommitOffsets(ctx, "billing", commit); err != nil {
		t.Fatal(err)
	}
	plan := ok("reset-offsets", map[string]any{"group": "billing", "topic": "orders", "partition": 1, "to": "latest"})
	if !plan.DryRun || len(plan.Rows) != 1 {
		t.Fatalf("dry run: %+v", plan)
	}
	if got := committedAt(t, adm, "billing", "orders", 1); got != 2 {
		t.Fatalf("the dry run moved the offset to %d", got)
	}
	ok("reset-offsets", map[string]any{"group": "billing", "topic": "orders", "partition": 1, "to": "latest", "execute": true})
	if got := committedAt(t, adm, "billing", "orders", 1); got != 3 {
		t.Fatalf("offset after the reset: %d, want 3", got)
	}
	ok("reset-offsets", map[string]any{"group": "billing", "topic": "orders", "partition": 1, "to": "offset", "offset": 0, "execute": true})
	if got := committedAt(t, adm, "billing", "orders", 1); got != 2 {
		t.Fatalf("offset 0 is below the log start 2, so the reset moves to 2: got %d", got)
	}

	res = ok("elect", map[string]any{"topic": "orders"})
	if !strings.Contains(res.Message, "topic orders") {
		t.Fatalf("election: %+v", res)
	}
	ok("delete-group", map[string]any{"group": "billing"})
	if gs, err := adm.ListGroups(ctx); err != nil || slices.Contains(gs.Groups(), "billing") {
		t.Fatalf("groups after delete-group: %v %v", err, gs.Groups())
	}

	for name, body := range map[string]map[string]any{
		"create-topic":   {"topic": "bad/name", "partitions": 1, "replication_factor": 1},
		"add-partitions": {"topic": "orders", "partitions": 0},
		"reset-offsets":  {"group": "g", "topic": "orders", "to": "sideways"},
		"delete-records": {"topic": "orders", "offset": 1},
		"nope":           {},
	} {
		if code, _ := do(name, body); code == 200 {
			t.Fatalf("%s %v was accepted", name, body)
		}
	}
	if code, _ := do("create-topic", map[string]any{"topic": "x", "partitions": 1, "replication_factor": 1, "unknown": 1}); code != http.StatusBadRequest {
		t.Fatalf("unknown field: %d", code)
	}
}

func configValue(rc kadm.ResourceConfig, key string) string {
	for _, c := range rc.Configs {
		if c.Key == key && c.Value != nil {
			return *c.Value
		}
	}
	return ""
}

func committedAt(t *testing.T, adm *kadm.Client, group, topic string, p int32) int64 {
	t.Helper()
	offsets, err := adm.FetchOffsets(t.Context(), group)
	if err != nil {
		t.Fatal(err)
	}
	o, _ := offsets.Lookup(topic, p)
	return o.At
}
