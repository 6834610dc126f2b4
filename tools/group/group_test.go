package group

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/spf13/cobra"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/ktoolhq/ktool/tools/cmdutil"
	"github.com/ktoolhq/ktool/tools/cmdutil/cmdtest"
)

// newEnv starts kfake with topics t and u of two partitions each and writes
// ten records to every partition, record i with timestamp 1000*(i+1) ms.
func newEnv(t *testing.T) *cmdtest.Env {
	t.Helper()
	c := cmdtest.Cluster(t, kfake.NumBrokers(1), kfake.SeedTopics(2, "t", "u"))
	env := cmdtest.NewEnv(t, c.ListenAddrs())
	cl, err := env.F.Client(kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	for _, topic := range []string{"t", "u"} {
		for p := int32(0); p < 2; p++ {
			for i := 0; i < 10; i++ {
				r := &kgo.Record{Topic: topic, Partition: p, Value: []byte(fmt.Sprint(i)), Timestamp: time.UnixMilli(int64(1000 * (i + 1)))}
				if err := cl.ProduceSync(cmdtest.Ctx(t), r).FirstErr(); err != nil {
					t.Fatal(err)
				}
			}
		}
	}
	return env
}

// member joins group as a kgo consumer of topic t under clientID; it never
// commits on its own. It leaves the group when the test ends unless closed before.
func member(t *testing.T, env *cmdtest.Env, group, clientID string) *kgo.Client {
	t.Helper()
	cl, err := env.F.Client(kgo.ConsumerGroup(group), kgo.ConsumeTopics("t"), kgo.ClientID(clientID),
		kgo.DisableAutoCommit(), kgo.HeartbeatInterval(100*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	return cl
}

// commitAs commits offsets through a group member, as a consumer does.
func commitAs(t *testing.T, cl *kgo.Client, offsets map[string]map[int32]int64) {
	t.Helper()
	want := map[string]map[int32]kgo.EpochOffset{}
	for topic, ps := range offsets {
		want[topic] = map[int32]kgo.EpochOffset{}
		for p, o := range ps {
			want[topic][p] = kgo.EpochOffset{Epoch: -1, Offset: o}
		}
	}
	var cerr error
	cl.CommitOffsetsSync(cmdtest.Ctx(t), want, func(_ *kgo.Client, _ *kmsg.OffsetCommitRequest, resp *kmsg.OffsetCommitResponse, err error) {
		cerr = err
		if err == nil {
			for _, rt := range resp.Topics {
				for _, rp := range rt.Partitions {
					if rp.ErrorCode != 0 {
						cerr = fmt.Errorf("%s-%d: error code %d", rt.Topic, rp.Partition, rp.ErrorCode)
					}
				}
			}
		}
	})
	if cerr != nil {
		t.Fatalf("commit: %v", cerr)
	}
}

// commitEmpty commits offsets for a group without members, as tools do.
func commitEmpty(t *testing.T, env *cmdtest.Env, group string, offsets map[string]map[int32]int64) {
	t.Helper()
	adm, err := env.F.Admin()
	if err != nil {
		t.Fatal(err)
	}
	defer adm.Close()
	os := kadm.Offsets{}
	for topic, ps := range offsets {
		for p, o := range ps {
			os.Add(kadm.Offset{Topic: topic, Partition: p, At: o, LeaderEpoch: -1})
		}
	}
	if err := adm.CommitAllOffsets(cmdtest.Ctx(t), group, os); err != nil {
		t.Fatalf("commit: %v", err)
	}
}

func committed(t *testing.T, env *cmdtest.Env, group string) map[string]map[int32]int64 {
	t.Helper()
	adm, err := env.F.Admin()
	if err != nil {
		t.Fatal(err)
	}
	defer adm.Close()
	resps, err := adm.FetchOffsets(cmdtest.Ctx(t), group)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]map[int32]int64{}
	resps.Each(func(o kadm.OffsetResponse) {
		if o.At < 0 {
			return
		}
		if out[o.Topic] == nil {
			out[o.Topic] = map[int32]int64{}
		}
		out[o.Topic][o.Partition] = o.At
	})
	return out
}

// run executes a command with args and returns stdout, stderr and the exit code.
func run(t *testing.T, env *cmdtest.Env, cmd *cobra.Command, args ...string) (string, string, int) {
	t.Helper()
	env.Out.Reset()
	env.ErrOut.Reset()
	cmd.SetArgs(args)
	cmd.SetOut(env.Out)
	cmd.SetErr(env.ErrOut)
	cmd.SilenceErrors, cmd.SilenceUsage = true, true
	err := cmd.ExecuteContext(cmdtest.Ctx(t))
	code := cmdutil.ExitCode(env.ErrOut, err)
	return env.Out.String(), env.ErrOut.String(), code
}

func describeJSON(t *testing.T, env *cmdtest.Env, group string) (Group, error) {
	t.Helper()
	out, errOut, code := run(t, env, NewDescribeCommand(env.F, nil), group, "-o", "json")
	if code != 0 {
		return Group{}, fmt.Errorf("exit %d: %s", code, errOut)
	}
	var gs []Group
	if err := json.Unmarshal([]byte(out), &gs); err != nil {
		return Group{}, fmt.Errorf("%v in %s", err, out)
	}
	if len(gs) != 1 {
		return Group{}, fmt.Errorf("want one group, got %s", out)
	}
	return gs[0], nil
}

// waitStable waits until group is Stable with n members that hold every
// partition of t between them.
func waitStable(t *testing.T, env *cmdtest.Env, group string, n int) Group {
	t.Helper()
	var g Group
	cmdtest.WaitFor(t, fmt.Sprintf("group %s stable with %d members", group, n), func() bool {
		var err error
		if g, err = describeJSON(t, env, group); err != nil {
			return false
		}
		var parts []int32
		for _, m := range g.Members {
			for _, a := range m.Assigned {
				parts = append(parts, a.Partitions...)
			}
		}
		slices.Sort(parts)
		return g.State == "Stable" && len(g.Members) == n && slices.Equal(parts, []int32{0, 1})
	})
	return g
}

func TestDescribeShowsMembersAndLag(t *testing.T) {
	env := newEnv(t)
	a := member(t, env, "g", "client-a")
	member(t, env, "g", "client-b")
	waitStable(t, env, "g", 2)
	commitAs(t, a, map[string]map[int32]int64{"t": {0: 3, 1: 5}})

	g, err := describeJSON(t, env, "g")
	if err != nil {
		t.Fatal(err)
	}
	if g.ProtocolType != "consumer" || g.Protocol == "" || g.Coordinator < 0 {
		t.Errorf("protocol %q/%q coordinator %d", g.ProtocolType, g.Protocol, g.Coordinator)
	}
	clients := map[string]Member{}
	for _, m := range g.Members {
		clients[m.ClientID] = m
		if m.MemberID == "" || m.Host == "" || !slices.Equal(m.Subscription, []string{"t"}) {
			t.Errorf("member %+v", m)
		}
		if len(m.Assigned) != 1 || m.Assigned[0].Topic != "t" || len(m.Assigned[0].Partitions) != 1 {
			t.Errorf("member %s assigned %+v, want one partition of t", m.ClientID, m.Assigned)
		}
	}
	if _, ok := clients["client-a"]; !ok || len(clients) != 2 {
		t.Errorf("members %v, want client-a and client-b", clients)
	}
	want := map[int32][3]int64{0: {3, 10, 7}, 1: {5, 10, 5}}
	if len(g.Offsets) != 2 {
		t.Fatalf("offsets %+v", g.Offsets)
	}
	for _, o := range g.Offsets {
		if w := want[o.Partition]; o.Topic != "t" || [3]int64{o.Committed, o.LogEnd, o.Lag} != w || o.LogStart != 0 {
			t.Errorf("partition %d: %+v, want committed/end/lag %v", o.Partition, o, w)
		}
		owner := g.Members[0]
		if !slices.Contains(owner.Assigned[0].Partitions, o.Partition) {
			owner = g.Members[1]
		}
		if o.MemberID != owner.MemberID || o.ClientID != owner.ClientID {
			t.Errorf("partition %d attributed to %s, assigned to %s", o.Partition, o.MemberID, owner.MemberID)
		}
	}
	if len(g.TopicLag) != 1 || g.TopicLag[0] != (TopicLag{Topic: "t", Lag: 12}) || g.TotalLag != 12 {
		t.Errorf("topic lag %+v total %d, want t 12", g.TopicLag, g.TotalLag)
	}

	table, _, code := run(t, env, NewDescribeCommand(env.F, nil), "g")
	if code != 0 {
		t.Fatalf("table: exit %d", code)
	}
	for _, s := range []string{"State: Stable", "client-a", "client-b", "Total lag: 12", "LOG END"} {
		if !strings.Contains(table, s) {
			t.Errorf("table lacks %q:\n%s", s, table)
		}
	}
}

func TestDescribeEmptyGroupAndMissingGroup(t *testing.T) {
	env := newEnv(t)
	commitEmpty(t, env, "idle", map[string]map[int32]int64{"t": {0: 4}, "u": {1: 10}})
	g, err := describeJSON(t, env, "idle")
	if err != nil {
		t.Fatal(err)
	}
	if g.State != "Empty" || len(g.Members) != 0 || g.TotalLag != 6 || len(g.Offsets) != 2 {
		t.Errorf("empty group: %+v", g)
	}
	for _, o := range g.Offsets {
		if o.MemberID != "" {
			t.Errorf("an empty group's partition has member %q", o.MemberID)
		}
	}
	_, errOut, code := run(t, env, NewDescribeCommand(env.F, nil), "nobody")
	if code != cmdutil.ExitError || !strings.Contains(errOut, `group "nobody" does not exist`) {
		t.Errorf("missing group: exit %d, %q", code, errOut)
	}
	_, _, code = run(t, env, NewDescribeCommand(env.F, nil))
	if code != cmdutil.ExitUsage {
		t.Errorf("no group and no --all: exit %d", code)
	}
}

func TestList(t *testing.T) {
	env := newEnv(t)
	if out, _, code := run(t, env, NewListCommand(env.F, nil)); code != 0 || out != "No groups.\n" {
		t.Errorf("no groups: exit %d %q", code, out)
	}
	member(t, env, "busy", "c1")
	member(t, env, "busy", "c2")
	waitStable(t, env, "busy", 2)
	commitEmpty(t, env, "idle", map[string]map[int32]int64{"t": {0: 1}})

	list := func(args ...string) []Listed {
		out, errOut, code := run(t, env, NewListCommand(env.F, nil), append(args, "-o", "json")...)
		if code != 0 {
			t.Fatalf("list %v: exit %d %s", args, code, errOut)
		}
		var ls []Listed
		if err := json.Unmarshal([]byte(out), &ls); err != nil {
			t.Fatal(err)
		}
		return ls
	}
	all := list()
	if len(all) != 2 || all[0].Group != "busy" || all[1].Group != "idle" {
		t.Fatalf("list: %+v", all)
	}
	if b := all[0]; b.State != "Stable" || b.ProtocolType != "consumer" || b.Members != 2 || b.Protocol == "" {
		t.Errorf("busy: %+v", b)
	}
	if i := all[1]; i.State != "Empty" || i.Members != 0 {
		t.Errorf("idle: %+v", i)
	}
	if got := list("--state", "empty"); len(got) != 1 || got[0].Group != "idle" {
		t.Errorf("--state empty: %+v", got)
	}
	if _, _, code := run(t, env, NewListCommand(env.F, nil), "--state", "sleepy"); code != cmdutil.ExitUsage {
		t.Errorf("unknown state: exit %d", code)
	}
	out, errOut, code := run(t, env, NewDescribeCommand(env.F, nil), "--all", "-o", "json")
	var gs []Group
	if err := json.Unmarshal([]byte(out), &gs); code != 0 || err != nil || len(gs) != 2 || gs[0].Group != "busy" || len(gs[0].Members) != 2 || gs[1].Group != "idle" {
		t.Errorf("describe --all: exit %d %s %s", code, out, errOut)
	}
	table, _, _ := run(t, env, NewListCommand(env.F, nil))
	if !strings.Contains(table, "busy") || !strings.Contains(table, "consumer/") {
		t.Errorf("table:\n%s", table)
	}
}

func TestResetOffsetsPlanThenExecute(t *testing.T) {
	env := newEnv(t)
	start := map[string]map[int32]int64{"t": {0: 4, 1: 6}, "u": {0: 2}}
	tests := []struct {
		args []string
		want map[string]map[int32]int64 // the new offsets
	}{
		{[]string{"--all-topics", "--to-earliest"}, map[string]map[int32]int64{"t": {0: 0, 1: 0}, "u": {0: 0}}},
		{[]string{"--all-topics", "--shift-by", "3"}, map[string]map[int32]int64{"t": {0: 7, 1: 9}, "u": {0: 5}}},
		{[]string{"--topic", "t", "--to-latest"}, map[string]map[int32]int64{"t": {0: 10, 1: 10}}},
		{[]string{"--topic", "t:1", "--to-offset", "99"}, map[string]map[int32]int64{"t": {1: 10}}},
		{[]string{"--topic", "t:0,1", "--shift-by", "-5"}, map[string]map[int32]int64{"t": {0: 0, 1: 1}}},
		{[]string{"--topic", "u", "--to-current"}, map[string]map[int32]int64{"u": {0: 2, 1: 10}}},
		// Record i has timestamp 1000*(i+1): 3.5 s falls before record 3.
		{[]string{"--topic", "t:0", "--to-datetime", "1970-01-01T00:00:03.500Z"}, map[string]map[int32]int64{"t": {0: 3}}},
		{[]string{"--topic", "t:0", "--to-datetime", "2100-01-01T00:00:00Z"}, map[string]map[int32]int64{"t": {0: 10}}},
		{[]string{"--topic", "u:0", "--by-duration", "PT5S"}, map[string]map[int32]int64{"u": {0: 4}}},
	}
	for i, tt := range tests {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			group := fmt.Sprintf("reset-%d", i)
			commitEmpty(t, env, group, start)
			newCmd := func() *cobra.Command {
				return NewResetOffsetsCommand(env.F, func(ctx context.Context, o *ResetOptions) error {
					if o.Spec.Kind == ByDuration {
						// 10 s on the records' clock: PT5S ago is 5 s, record 4.
						o.Spec.Time = time.UnixMilli(5000)
					}
					return runReset(ctx, o)
				})
			}
			out, errOut, code := run(t, env, newCmd(), append([]string{group, "-o", "json"}, tt.args...)...)
			if code != 0 {
				t.Fatalf("dry run: exit %d: %s", code, errOut)
			}
			var plan ResetPlan
			if err := json.Unmarshal([]byte(out), &plan); err != nil {
				t.Fatal(err)
			}
			got := map[string]map[int32]int64{}
			for _, p := range plan.Partitions {
				if got[p.Topic] == nil {
					got[p.Topic] = map[int32]int64{}
				}
				got[p.Topic][p.Partition] = p.New
				cur, ok := start[p.Topic][p.Partition]
				if !ok {
					cur = -1
				}
				if p.Current != cur || p.LogStart != 0 || p.LogEnd != 10 {
					t.Errorf("%s-%d: %+v, want current %d in [0, 10)", p.Topic, p.Partition, p, cur)
				}
			}
			if plan.Executed || fmt.Sprint(got) != fmt.Sprint(tt.want) {
				t.Errorf("plan %+v, want %v not executed", plan, tt.want)
			}
			if !strings.Contains(errOut, "Dry run") {
				t.Errorf("dry run not announced: %q", errOut)
			}
			if c := committed(t, env, group); fmt.Sprint(c) != fmt.Sprint(start) {
				t.Fatalf("the dry run changed the offsets: %v", c)
			}

			if _, errOut, code = run(t, env, newCmd(), append([]string{group, "--execute"}, tt.args...)...); code != 0 {
				t.Fatalf("execute: exit %d: %s", code, errOut)
			}
			after := committed(t, env, group)
			for topic, ps := range start {
				for p, o := range ps {
					if _, moved := tt.want[topic][p]; !moved && after[topic][p] != o {
						t.Errorf("%s-%d moved to %d though not selected", topic, p, after[topic][p])
					}
				}
			}
			for topic, ps := range tt.want {
				for p, o := range ps {
					if after[topic][p] != o {
						t.Errorf("%s-%d committed %d after --execute, want %d", topic, p, after[topic][p], o)
					}
				}
			}
		})
	}
}

func TestResetOffsetsRefusedWithActiveMembers(t *testing.T) {
	env := newEnv(t)
	a := member(t, env, "live", "c1")
	waitStable(t, env, "live", 1)
	commitAs(t, a, map[string]map[int32]int64{"t": {0: 2, 1: 2}})

	_, errOut, code := run(t, env, NewResetOffsetsCommand(env.F, nil), "live", "--topic", "t", "--to-earliest", "--execute")
	if code != cmdutil.ExitError || !strings.Contains(errOut, "active member") || !strings.Contains(errOut, "stop its consumers") {
		t.Errorf("execute with a member: exit %d, %q", code, errOut)
	}
	if c := committed(t, env, "live"); c["t"][0] != 2 || c["t"][1] != 2 {
		t.Errorf("offsets changed although refused: %v", c)
	}
	out, errOut, code := run(t, env, NewResetOffsetsCommand(env.F, nil), "live", "--topic", "t", "--to-earliest")
	if code != 0 || !strings.Contains(out, "live") || !strings.Contains(errOut, "would be refused") {
		t.Errorf("dry run with a member: exit %d, %q, %q", code, out, errOut)
	}

	a.Close()
	cmdtest.WaitFor(t, "group live empty", func() bool {
		g, err := describeJSON(t, env, "live")
		return err == nil && g.State == "Empty"
	})
	if _, errOut, code = run(t, env, NewResetOffsetsCommand(env.F, nil), "live", "--topic", "t", "--to-earliest", "--execute"); code != 0 {
		t.Fatalf("execute after the member left: exit %d %s", code, errOut)
	}
	if c := committed(t, env, "live"); c["t"][0] != 0 || c["t"][1] != 0 {
		t.Errorf("offsets after reset: %v", c)
	}
}

func TestResetOffsetsErrors(t *testing.T) {
	env := newEnv(t)
	commitEmpty(t, env, "g", map[string]map[int32]int64{"t": {0: 1}})
	for _, tt := range []struct {
		args []string
		code int
		msg  string
	}{
		{[]string{"g", "--topic", "t"}, cmdutil.ExitUsage, "exactly one of"},
		{[]string{"g", "--topic", "t", "--to-earliest", "--to-latest"}, cmdutil.ExitUsage, "exactly one of"},
		{[]string{"g", "--to-earliest"}, cmdutil.ExitUsage, "--all-topics or --topic"},
		{[]string{"g", "--all-topics", "--topic", "t", "--to-earliest"}, cmdutil.ExitUsage, "--all-topics or --topic"},
		{[]string{"g", "--topic", "t", "--to-earliest", "--dry-run", "--execute"}, cmdutil.ExitUsage, "exclude"},
		{[]string{"g", "--topic", "t", "--to-offset", "-1"}, cmdutil.ExitUsage, "start at 0"},
		{[]string{"g", "--topic", "t", "--to-datetime", "yesterday"}, cmdutil.ExitUsage, "YYYY-MM-DD"},
		{[]string{"g", "--topic", "t", "--by-duration", "P"}, cmdutil.ExitUsage, "ISO 8601"},
		{[]string{"g", "--topic", "t:x", "--to-earliest"}, cmdutil.ExitUsage, "not a number"},
		{[]string{"g", "--topic", "t:7", "--to-earliest"}, cmdutil.ExitUsage, "no partition 7"},
		{[]string{"g", "--topic", "nope", "--to-earliest"}, cmdutil.ExitError, `"nope" does not exist`},
		{[]string{"g", "--topic", "t", "--shift-by", "1"}, cmdutil.ExitError, "t-1: no committed offset to shift"},
		{[]string{"fresh", "--all-topics", "--to-earliest"}, cmdutil.ExitError, "no committed offsets"},
	} {
		_, errOut, code := run(t, env, NewResetOffsetsCommand(env.F, nil), tt.args...)
		if code != tt.code || !strings.Contains(errOut, tt.msg) {
			t.Errorf("%v: exit %d %q, want %d with %q", tt.args, code, errOut, tt.code, tt.msg)
		}
	}
}

func TestDelete(t *testing.T) {
	env := newEnv(t)
	a := member(t, env, "g", "c1")
	waitStable(t, env, "g", 1)
	commitAs(t, a, map[string]map[int32]int64{"t": {0: 1}})

	out, errOut, code := run(t, env, NewDeleteCommand(env.F, nil), "g", "-o", "json")
	if code != cmdutil.ExitError || !strings.Contains(errOut, "still has members") {
		t.Errorf("delete with a member: exit %d %q", code, errOut)
	}
	var ds []Deleted
	if err := json.Unmarshal([]byte(out), &ds); err != nil || len(ds) != 1 || ds[0].Deleted || ds[0].Error == "" {
		t.Errorf("delete with a member printed %s (%v)", out, err)
	}

	a.Close()
	cmdtest.WaitFor(t, "group g empty", func() bool {
		g, err := describeJSON(t, env, "g")
		return err == nil && g.State == "Empty"
	})
	out, errOut, code = run(t, env, NewDeleteCommand(env.F, nil), "g")
	if code != 0 || !strings.Contains(out, "Deleted group g.") {
		t.Fatalf("delete: exit %d %q %q", code, out, errOut)
	}
	if _, err := describeJSON(t, env, "g"); err == nil || !strings.Contains(err.Error(), "does not exist") {
		t.Errorf("describe after delete: %v", err)
	}
	if _, errOut, code = run(t, env, NewDeleteCommand(env.F, nil), "g"); code != cmdutil.ExitError || !strings.Contains(errOut, "does not exist") {
		t.Errorf("delete again: exit %d %q", code, errOut)
	}
}

func TestDeleteOffsets(t *testing.T) {
	env := newEnv(t)
	commitEmpty(t, env, "g", map[string]map[int32]int64{"t": {0: 1, 1: 2}, "u": {0: 3, 1: 4}})

	out, errOut, code := run(t, env, NewDeleteOffsetsCommand(env.F, nil), "g", "--topic", "u", "--topic", "t:1", "-o", "json")
	if code != 0 {
		t.Fatalf("exit %d %s", code, errOut)
	}
	var ds []DeletedOffset
	if err := json.Unmarshal([]byte(out), &ds); err != nil {
		t.Fatal(err)
	}
	want := []DeletedOffset{{Topic: "t", Partition: 1, Deleted: true}, {Topic: "u", Partition: 0, Deleted: true}, {Topic: "u", Partition: 1, Deleted: true}}
	if !slices.Equal(ds, want) {
		t.Errorf("got %+v, want %+v", ds, want)
	}
	if c := committed(t, env, "g"); fmt.Sprint(c) != fmt.Sprint(map[string]map[int32]int64{"t": {0: 1}}) {
		t.Errorf("left %v, want only t-0", c)
	}

	a := member(t, env, "busy", "c1")
	waitStable(t, env, "busy", 1)
	commitAs(t, a, map[string]map[int32]int64{"t": {0: 1}})
	_, errOut, code = run(t, env, NewDeleteOffsetsCommand(env.F, nil), "busy", "--topic", "t:0")
	if code != cmdutil.ExitError || !strings.Contains(errOut, "stop them first") {
		t.Errorf("subscribed topic: exit %d %q", code, errOut)
	}
	if _, _, code = run(t, env, NewDeleteOffsetsCommand(env.F, nil), "g"); code != cmdutil.ExitUsage {
		t.Errorf("no --topic: exit %d", code)
	}
}

func TestParseTopicSpec(t *testing.T) {
	for in, want := range map[string]TopicSpec{
		"t":       {Topic: "t"},
		"t:2,0,2": {Topic: "t", Partitions: []int32{0, 2}},
		"a.b-c:7": {Topic: "a.b-c", Partitions: []int32{7}},
		" t : 1 ": {Topic: "t", Partitions: []int32{1}},
	} {
		got, err := ParseTopicSpec(in)
		if err != nil || got.Topic != want.Topic || !slices.Equal(got.Partitions, want.Partitions) {
			t.Errorf("%q: %+v, %v", in, got, err)
		}
	}
	for _, bad := range []string{"", ":1", "t:", "t:-1", "t:1,,2", "t:a"} {
		if _, err := ParseTopicSpec(bad); err == nil {
			t.Errorf("accepted %q", bad)
		}
	}
	specs, err := parseTopicSpecs([]string{"t:1", "u", "t:0", "u:3"})
	if err != nil || len(specs) != 2 || !slices.Equal(specs[0].Partitions, []int32{0, 1}) || specs[1].Partitions != nil {
		t.Errorf("merged %+v, %v", specs, err)
	}
}

func TestResetTarget(t *testing.T) {
	// A log [10, 20) with committed offset 15; the time lookup found 12.
	for _, tt := range []struct {
		spec ResetSpec
		want int64
	}{
		{ResetSpec{Kind: ToEarliest}, 10},
		{ResetSpec{Kind: ToLatest}, 20},
		{ResetSpec{Kind: ToOffset, Offset: 3}, 10},
		{ResetSpec{Kind: ToOffset, Offset: 17}, 17},
		{ResetSpec{Kind: ToOffset, Offset: 30}, 20},
		{ResetSpec{Kind: ShiftBy, Offset: -2}, 13},
		{ResetSpec{Kind: ShiftBy, Offset: 100}, 20},
		{ResetSpec{Kind: ToCurrent}, 15},
		{ResetSpec{Kind: ToDatetime}, 12},
		{ResetSpec{Kind: ByDuration}, 12},
	} {
		if got, err := tt.spec.Target(15, 10, 20, 12); err != nil || got != tt.want {
			t.Errorf("%+v: %d, %v, want %d", tt.spec, got, err, tt.want)
		}
	}
	if got, _ := (ResetSpec{Kind: ToDatetime}).Target(15, 10, 20, -1); got != 20 {
		t.Errorf("no record after the time: %d, want the end", got)
	}
	if got, _ := (ResetSpec{Kind: ToCurrent}).Target(-1, 10, 20, -1); got != 20 {
		t.Errorf("--to-current without a commit: %d, want the end", got)
	}
	if _, err := (ResetSpec{Kind: ShiftBy, Offset: 1}).Target(-1, 10, 20, -1); err == nil {
		t.Error("shifted a partition without a committed offset")
	}
}

func TestParseDatetimeAndDuration(t *testing.T) {
	for in, want := range map[string]int64{
		"2026-01-31T09:30:00.000Z":      1769851800000,
		"2026-01-31T09:30:00Z":          1769851800000,
		"2026-01-31T10:30:00.250+01:00": 1769851800250,
		"2026-01-31T09:30Z":             1769851800000,
	} {
		got, err := ParseDatetime(in)
		if err != nil || got.UnixMilli() != want {
			t.Errorf("%q: %v (%d), %v", in, got, got.UnixMilli(), err)
		}
	}
	local, err := ParseDatetime("2026-01-31T09:30:00.000")
	if err != nil || local.Location() != time.Local || local.Hour() != 9 {
		t.Errorf("no zone: %v, %v", local, err)
	}
	for in, want := range map[string]time.Duration{
		"PT30M": 30 * time.Minute, "P1DT2H": 26 * time.Hour, "PT1.5S": 1500 * time.Millisecond, "P2D": 48 * time.Hour,
		"pt10s": 10 * time.Second, "90m": 90 * time.Minute,
	} {
		if got, err := ParseDuration(in); err != nil || got != want {
			t.Errorf("%q: %v, %v, want %v", in, got, err, want)
		}
	}
	for _, bad := range []string{"", "P", "PT", "P1H", "-5m", "0s", "PT0S", "soon"} {
		if _, err := ParseDuration(bad); err == nil {
			t.Errorf("accepted duration %q", bad)
		}
	}
}

func TestResetFlagsParse(t *testing.T) {
	ios, _, _, _ := cmdutil.Test()
	f := cmdutil.NewFactory(ios, cmdutil.BuildInfo{})
	var got *ResetOptions
	cmd := NewResetOffsetsCommand(f, func(_ context.Context, o *ResetOptions) error { got = o; return nil })
	cmd.SetArgs([]string{"g", "-t", "a:0,1", "--topic", "b", "--shift-by", "-3", "--execute"})
	cmd.SetOut(&bytes.Buffer{})
	if err := cmd.Execute(); err != nil {
		t.Fatal(err)
	}
	if got.Group != "g" || !slices.Equal(got.Topics, []string{"a:0,1", "b"}) || got.Spec.Kind != ShiftBy || got.Spec.Offset != -3 || !got.Execute {
		t.Errorf("parsed %+v", got)
	}
}

// TestDescribeLagAgainstLastStableOffset: with --isolation read_committed the
// lag stops at the last stable offset, which an open transaction holds back.
func TestDescribeLagAgainstLastStableOffset(t *testing.T) {
	env := newEnv(t)
	adm, err := env.F.Admin()
	if err != nil {
		t.Fatal(err)
	}
	defer adm.Close()
	os := kadm.Offsets{}
	os.AddOffset("t", 0, 3, -1)
	if _, err := adm.CommitOffsets(cmdtest.Ctx(t), "g", os); err != nil {
		t.Fatal(err)
	}
	tx, err := env.F.Client(kgo.TransactionalID("lag-test"), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Close()
	if err := tx.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	for i := range 5 {
		if err := tx.ProduceSync(cmdtest.Ctx(t), &kgo.Record{Topic: "t", Partition: 0, Value: []byte(fmt.Sprint(i))}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	for _, tc := range []struct {
		isolation string
		end, lag  int64
	}{{ReadUncommitted, 15, 12}, {ReadCommitted, 10, 7}} {
		out, errOut, code := run(t, env, NewDescribeCommand(env.F, nil), "g", "-o", "json", "--isolation", tc.isolation)
		if code != 0 {
			t.Fatalf("exit %d: %s", code, errOut)
		}
		var gs []Group
		if err := json.Unmarshal([]byte(out), &gs); err != nil || len(gs) != 1 || len(gs[0].Offsets) != 1 {
			t.Fatalf("%v in %s", err, out)
		}
		g, o := gs[0], gs[0].Offsets[0]
		if g.Isolation != tc.isolation || o.LogEnd != tc.end || o.Lag != tc.lag || g.TotalLag != tc.lag {
			t.Errorf("%s: end %d lag %d total %d isolation %s, want end %d lag %d", tc.isolation, o.LogEnd, o.Lag, g.TotalLag, g.Isolation, tc.end, tc.lag)
		}
	}
	if _, _, code := run(t, env, NewDescribeCommand(env.F, nil), "g", "--isolation", "dirty"); code == 0 {
		t.Error("--isolation dirty accepted")
	}
}
