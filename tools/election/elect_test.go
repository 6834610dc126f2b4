package election

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/ktoolhq/ktool/tools/cmdutil"
	"github.com/ktoolhq/ktool/tools/cmdutil/cmdtest"
)

func TestParseJSON(t *testing.T) {
	got, err := ParseJSON(strings.NewReader(`{"partitions":[{"topic":"b","partition":1},{"topic":"a","partition":0}]}`))
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || got[0] != (Target{"a", 0}) || got[1] != (Target{"b", 1}) {
		t.Errorf("got %v", got)
	}
	for _, bad := range []string{
		`nope`, `{}`, `{"partitions":[]}`, `{"partitions":[{"topic":"a"}]}`,
		`{"partitions":[{"partition":0}]}`, `{"partitions":[{"topic":"a","partition":-1}]}`,
		`{"partitions":[{"topic":"a","partition":0},{"topic":"a","partition":0}]}`,
	} {
		if _, err := ParseJSON(strings.NewReader(bad)); err == nil {
			t.Errorf("accepted %s", bad)
		}
	}
}

// skewed: p0 led by 1 though 0 is preferred and in sync; p1 led by its
// preferred replica; p2's preferred replica 0 is out of sync.
func skewed(c *kfake.Cluster) {
	cmdtest.FakeMetadata(c, 0, nil, map[string][]cmdtest.Partition{"t": {
		{Leader: 1, Replicas: []int32{0, 1, 2}, ISR: []int32{0, 1, 2}},
		{Leader: 1, Replicas: []int32{1, 2, 0}, ISR: []int32{1, 2, 0}},
		{Leader: 2, Replicas: []int32{0, 2, 1}, ISR: []int32{2, 1}},
	}})
}

func TestDryRunPreferred(t *testing.T) {
	c := cmdtest.Cluster(t, kfake.NumBrokers(3))
	skewed(c)
	elections := 0
	c.ControlKey(int16(kmsg.ElectLeaders), func(kmsg.Request) (kmsg.Response, error, bool) {
		elections++
		return nil, nil, false
	})
	env := cmdtest.NewEnv(t, c.ListenAddrs())
	opts := &Options{Factory: env.F, Preferred: true, AllTopicPartitions: true, DryRun: true}
	opts.Output.Format = "json"
	if err := run(cmdtest.Ctx(t), opts); err != nil {
		t.Fatal(err)
	}
	var plan Plan
	if err := json.Unmarshal(env.Out.Bytes(), &plan); err != nil {
		t.Fatal(err)
	}
	want := []Planned{
		{Topic: "t", Partition: 0, Leader: 1, NewLeader: 0, Outcome: WouldElect},
		{Topic: "t", Partition: 1, Leader: 1, NewLeader: 1, Outcome: NotNeeded},
		{Topic: "t", Partition: 2, Leader: 2, NewLeader: 2, Outcome: WouldFail},
	}
	if len(plan.Partitions) != 3 {
		t.Fatalf("plan %+v", plan)
	}
	for i, w := range want {
		g := plan.Partitions[i]
		g.Reason = ""
		if g != w {
			t.Errorf("partition %d: got %+v, want %+v", i, plan.Partitions[i], w)
		}
	}
	wantImb := []Imbalance{
		{Broker: 0, Preferred: 2, NotLedBefore: 2, BeforePercent: 100, NotLedAfter: 1, AfterPercent: 50},
		{Broker: 1, Preferred: 1, NotLedBefore: 0, BeforePercent: 0, NotLedAfter: 0, AfterPercent: 0},
	}
	if len(plan.Imbalance) != len(wantImb) {
		t.Fatalf("imbalance %+v", plan.Imbalance)
	}
	for i := range wantImb {
		if plan.Imbalance[i] != wantImb[i] {
			t.Errorf("imbalance %d: got %+v, want %+v", i, plan.Imbalance[i], wantImb[i])
		}
	}
	if elections != 0 {
		t.Errorf("dry run sent %d ElectLeaders requests", elections)
	}

	env.Out.Reset()
	opts.Output.Format = "table"
	if err := run(cmdtest.Ctx(t), opts); err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{"1 would change leader, 1 need none, 1 would fail", "100.0%", "50.0%", "not in the ISR"} {
		if !strings.Contains(env.Out.String(), s) {
			t.Errorf("table lacks %q:\n%s", s, env.Out)
		}
	}
}

func TestDryRunUnclean(t *testing.T) {
	c := cmdtest.Cluster(t, kfake.NumBrokers(3))
	cmdtest.FakeMetadata(c, 0, []int32{0, 1}, map[string][]cmdtest.Partition{"t": {
		{Leader: -1, Replicas: []int32{2, 1, 0}, ISR: []int32{2}},
		{Leader: 0, Replicas: []int32{0, 1}, ISR: []int32{0, 1}},
	}})
	env := cmdtest.NewEnv(t, c.ListenAddrs())
	opts := &Options{Factory: env.F, Unclean: true, Topic: "t", Partition: -1, DryRun: true}
	opts.Output.Format = "json"
	if err := run(cmdtest.Ctx(t), opts); err != nil {
		t.Fatal(err)
	}
	var plan Plan
	if err := json.Unmarshal(env.Out.Bytes(), &plan); err != nil {
		t.Fatal(err)
	}
	if p := plan.Partitions[0]; p.Outcome != WouldElect || p.NewLeader != 1 {
		t.Errorf("leaderless partition: %+v, want broker 1 elected", p)
	}
	if p := plan.Partitions[1]; p.Outcome != NotNeeded {
		t.Errorf("led partition: %+v", p)
	}
}

func TestElectSendsRequestAndReportsEachPartition(t *testing.T) {
	c := cmdtest.Cluster(t, kfake.NumBrokers(3), kfake.SeedTopics(3, "t"))
	var mu sync.Mutex
	var sent *kmsg.ElectLeadersRequest
	c.ControlKey(int16(kmsg.ElectLeaders), func(kreq kmsg.Request) (kmsg.Response, error, bool) {
		req := kreq.(*kmsg.ElectLeadersRequest)
		mu.Lock()
		sent = req
		mu.Unlock()
		resp := req.ResponseKind().(*kmsg.ElectLeadersResponse)
		rt := kmsg.NewElectLeadersResponseTopic()
		rt.Topic = "t"
		for p, code := range []int16{0, kerr.ElectionNotNeeded.Code, kerr.PreferredLeaderNotAvailable.Code} {
			rp := kmsg.NewElectLeadersResponseTopicPartition()
			rp.Partition, rp.ErrorCode = int32(p), code
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
		return resp, nil, true
	})
	env := cmdtest.NewEnv(t, c.ListenAddrs())
	dir := t.TempDir()
	path := filepath.Join(dir, "p.json")
	if err := os.WriteFile(path, []byte(`{"partitions":[{"topic":"t","partition":2},{"topic":"t","partition":0},{"topic":"t","partition":1}]}`), 0o644); err != nil {
		t.Fatal(err)
	}
	err := run(cmdtest.Ctx(t), &Options{Factory: env.F, Preferred: true, PathToJSONFile: path, Partition: -1})
	if err == nil || !strings.Contains(err.Error(), "1 of 3") {
		t.Errorf("err = %v, want 1 of 3 failed", err)
	}
	mu.Lock()
	defer mu.Unlock()
	if sent == nil {
		t.Fatal("no ElectLeaders request reached the cluster")
	}
	if sent.ElectionType != 0 || len(sent.Topics) != 1 || sent.Topics[0].Topic != "t" || len(sent.Topics[0].Partitions) != 3 {
		t.Errorf("sent %+v", sent)
	}
	lines := strings.Split(strings.TrimSpace(env.Out.String()), "\n")
	if len(lines) != 3 || !strings.HasPrefix(lines[0], "t-0: elected, leader is now ") ||
		!strings.Contains(lines[1], "t-1: leader") || !strings.Contains(lines[1], "ELECTION_NOT_NEEDED") ||
		!strings.Contains(lines[2], "t-2: failed: PREFERRED_LEADER_NOT_AVAILABLE") {
		t.Errorf("output:\n%s", env.Out)
	}
}

func TestElectAgainstKfake(t *testing.T) {
	c := cmdtest.Cluster(t, kfake.NumBrokers(3), kfake.SeedTopics(2, "t"))
	if err := c.MoveTopicPartition("t", 1, 0); err != nil {
		t.Fatal(err)
	}
	env := cmdtest.NewEnv(t, c.ListenAddrs())
	opts := &Options{Factory: env.F, Unclean: true, Topic: "t", Partition: 1}
	opts.Output.Format = "json"
	if err := run(cmdtest.Ctx(t), opts); err != nil {
		t.Fatal(err)
	}
	var rs []Result
	if err := json.Unmarshal(env.Out.Bytes(), &rs); err != nil {
		t.Fatal(err)
	}
	// kfake elects by moving leadership to the next broker.
	if len(rs) != 1 || rs[0] != (Result{Topic: "t", Partition: 1, Outcome: Elected, Leader: c.LeaderFor("t", 1)}) || rs[0].Leader == 0 {
		t.Errorf("results %+v (kfake leader now %d)", rs, c.LeaderFor("t", 1))
	}
}

func TestElectUnknownTopic(t *testing.T) {
	c := cmdtest.Cluster(t, kfake.NumBrokers(1))
	env := cmdtest.NewEnv(t, c.ListenAddrs())
	err := run(cmdtest.Ctx(t), &Options{Factory: env.F, Preferred: true, Topic: "nope", Partition: -1})
	if err == nil || !strings.Contains(err.Error(), `"nope" does not exist`) {
		t.Errorf("err = %v", err)
	}
}

func TestFlags(t *testing.T) {
	ios, _, _, _ := cmdutil.Test()
	f := cmdutil.NewFactory(ios, cmdutil.BuildInfo{})
	parse := func(args ...string) (*Options, error) {
		var got *Options
		cmd := NewCommand(f, func(_ context.Context, o *Options) error { got = o; return nil })
		cmd.SetArgs(args)
		cmd.SilenceUsage, cmd.SilenceErrors = true, true
		return got, cmd.Execute()
	}
	o, err := parse("--type", "unclean", "--topic", "t", "--partition", "3", "--dry-run")
	if err != nil {
		t.Fatal(err)
	}
	if !o.Unclean || o.Preferred || o.Topic != "t" || o.Partition != 3 || !o.DryRun {
		t.Errorf("parsed %+v", o)
	}
	if o, err = parse("--preferred", "--all-topic-partitions"); err != nil || !o.Preferred || !o.AllTopicPartitions {
		t.Errorf("parsed %+v, %v", o, err)
	}
	for _, bad := range [][]string{
		{"--all-topic-partitions"},
		{"--preferred", "--unclean", "--all-topic-partitions"},
		{"--type", "random", "--all-topic-partitions"},
		{"--preferred"},
		{"--preferred", "--topic", "t", "--all-topic-partitions"},
		{"--preferred", "--partition", "1", "--all-topic-partitions"},
		{"--preferred", "--topic", "t", "--partition", "-2"},
	} {
		_, err := parse(bad...)
		var ee *cmdutil.ExitErr
		if !errors.As(err, &ee) || ee.Code != cmdutil.ExitUsage {
			t.Errorf("%v: err = %v, want a usage error", bad, err)
		}
	}
}
