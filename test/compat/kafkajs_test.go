package compat

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os/exec"
	"path/filepath"
	"reflect"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// jsLine is one line printed by kafkajs/compat.js.
type jsLine struct {
	Step   string          `json:"step"`
	Result json.RawMessage `json:"result"`
	Error  *struct {
		Name    string `json:"name"`
		Message string `json:"message"`
		Type    string `json:"type"`
		Errors  []struct {
			Type    string `json:"type"`
			Message string `json:"message"`
		} `json:"errors"`
	} `json:"error"`

	// produce
	Partition  int32  `json:"partition"`
	ErrorCode  int    `json:"errorCode"`
	BaseOffset string `json:"baseOffset"`

	// consume
	Offset     string             `json:"offset"`
	Key        *string            `json:"key"`
	Value      *string            `json:"value"`
	Timestamp  string             `json:"timestamp"`
	Headers    map[string]*string `json:"headers"`
	Assignment map[string][]int32 `json:"assignment"`
	Count      int                `json:"count"`

	// txn, ctp
	Tag     string `json:"tag"`
	Aborted int    `json:"aborted"`
}

// kafkajs runs one compat.js command to its end and returns its lines by step
// name (a step printed twice keeps the last).
type kafkajs struct {
	node, script string
}

func newKafkajs(t *testing.T) kafkajs {
	t.Helper()
	node, dir := needKafkajs(t)
	return kafkajs{node: node, script: filepath.Join(dir, "compat.js")}
}

func (k kafkajs) run(ctx context.Context, t *testing.T, args ...string) map[string]jsLine {
	t.Helper()
	stdout, stderr, err := runErr(ctx, nil, k.node, append([]string{k.script}, args...)...)
	lines := parseJSLines(t, stdout)
	if err != nil {
		t.Fatalf("node compat.js %s: %v\nstdout:\n%s\nstderr:\n%s", strings.Join(args, " "), err, stdout, tail(string(stderr), 30))
	}
	out := map[string]jsLine{}
	for _, l := range lines {
		out[l.Step] = l
	}
	return out
}

func parseJSLines(t testing.TB, out []byte) []jsLine {
	t.Helper()
	var lines []jsLine
	for _, s := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		if s == "" {
			continue
		}
		var l jsLine
		if err := json.Unmarshal([]byte(s), &l); err != nil {
			t.Fatalf("compat.js line %q: %v", s, err)
		}
		lines = append(lines, l)
	}
	return lines
}

// result decodes a step's result into v, failing the test if the step failed.
func (l jsLine) result(t testing.TB, v any) {
	t.Helper()
	if l.Step == "" {
		t.Fatal("step missing from compat.js output")
	}
	if l.Error != nil {
		t.Fatalf("kafkajs %s failed: %+v", l.Step, *l.Error)
	}
	if err := json.Unmarshal(l.Result, v); err != nil {
		t.Fatalf("kafkajs %s result %s: %v", l.Step, l.Result, err)
	}
}

// TestKafkajsAdmin creates a topic and reads it back with kafkajs's admin client
// (CreateTopics, Metadata, DescribeConfigs, DescribeCluster).
func TestKafkajsAdmin(t *testing.T) {
	js := newKafkajs(t)
	b := startStandalone(t)
	ctx := testCtx(t, time.Minute)
	steps := js.run(ctx, t, "admin", b.Addr(), "jsadmin", "3", "1")

	var created bool
	if steps["createTopics"].result(t, &created); !created {
		t.Errorf("createTopics of a new topic resolved false")
	}
	var again bool
	if steps["createExisting"].result(t, &again); again {
		t.Errorf("createTopics of an existing topic resolved true, want false (TOPIC_ALREADY_EXISTS)")
	}
	if l := steps["createExistingTooManyReplicas"]; l.Error != nil || string(l.Result) != "false" {
		t.Errorf("createTopics of an existing topic with replicationFactor 99: %s %+v, want false as Kafka answers TOPIC_ALREADY_EXISTS before validating (FINDINGS.md F2)", l.Result, l.Error)
	}

	var topics []string
	steps["listTopics"].result(t, &topics)
	if !slices.Contains(topics, "jsadmin") {
		t.Errorf("listTopics %v lacks jsadmin", topics)
	}

	var md struct {
		Topics []struct {
			Name       string `json:"name"`
			Partitions []struct {
				ErrorCode int     `json:"partitionErrorCode"`
				ID        int32   `json:"partitionId"`
				Leader    int32   `json:"leader"`
				Replicas  []int32 `json:"replicas"`
				ISR       []int32 `json:"isr"`
			} `json:"partitions"`
		} `json:"topics"`
	}
	steps["fetchTopicMetadata"].result(t, &md)
	if len(md.Topics) != 1 || md.Topics[0].Name != "jsadmin" || len(md.Topics[0].Partitions) != 3 {
		t.Fatalf("fetchTopicMetadata: %+v, want jsadmin with 3 partitions", md)
	}
	ps := md.Topics[0].Partitions
	sort.Slice(ps, func(i, j int) bool { return ps[i].ID < ps[j].ID })
	for i, p := range ps {
		if p.ID != int32(i) || p.ErrorCode != 0 || p.Leader != 0 || !slices.Equal(p.Replicas, []int32{0}) || !slices.Equal(p.ISR, []int32{0}) {
			t.Errorf("partition %d: %+v", i, p)
		}
	}

	var cfg struct {
		Resources []struct {
			ErrorCode     int    `json:"errorCode"`
			ResourceName  string `json:"resourceName"`
			ConfigEntries []struct {
				Name      string `json:"configName"`
				Value     string `json:"configValue"`
				IsDefault bool   `json:"isDefault"`
				Source    int    `json:"configSource"`
			} `json:"configEntries"`
		} `json:"resources"`
	}
	steps["describeConfigs"].result(t, &cfg)
	if len(cfg.Resources) != 1 || cfg.Resources[0].ErrorCode != 0 || cfg.Resources[0].ResourceName != "jsadmin" {
		t.Fatalf("describeConfigs: %+v", cfg)
	}
	got := map[string]string{}
	for _, e := range cfg.Resources[0].ConfigEntries {
		got[e.Name] = fmt.Sprintf("%s default=%v source=%d", e.Value, e.IsDefault, e.Source)
	}
	want := map[string]string{
		"retention.ms":   "3600000 default=false source=1", // DYNAMIC_TOPIC_CONFIG
		"cleanup.policy": "delete default=true source=5",   // DEFAULT_CONFIG
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("describeConfigs entries %v, want %v", got, want)
	}

	var cluster struct {
		Brokers []struct {
			NodeID int32  `json:"nodeId"`
			Host   string `json:"host"`
			Port   int    `json:"port"`
		} `json:"brokers"`
		Controller int32  `json:"controller"`
		ClusterID  string `json:"clusterId"`
	}
	steps["describeCluster"].result(t, &cluster)
	if len(cluster.Brokers) != 1 || cluster.Brokers[0].NodeID != 0 || cluster.Brokers[0].Host != "127.0.0.1" ||
		cluster.Brokers[0].Port != b.Port() || cluster.Controller != 0 || cluster.ClusterID == "" {
		t.Errorf("describeCluster: %+v", cluster)
	}
}

// jsConsumer is one `compat.js consume` process followed while it runs; closing
// its stdin makes it commit, leave the group and exit.
type jsConsumer struct {
	cmd   *exec.Cmd
	stdin io.WriteCloser

	mu       sync.Mutex
	lines    []jsLine
	stderr   syncBuffer
	assigned []int32
	done     chan struct{}
}

func (k kafkajs) startConsumer(ctx context.Context, t *testing.T, args ...string) *jsConsumer {
	t.Helper()
	c := &jsConsumer{done: make(chan struct{})}
	c.cmd = exec.CommandContext(ctx, k.node, append([]string{k.script, "consume"}, args...)...)
	c.cmd.Stderr = &c.stderr
	var err error
	if c.stdin, err = c.cmd.StdinPipe(); err != nil {
		t.Fatal(err)
	}
	stdout, err := c.cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := c.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			var l jsLine
			if json.Unmarshal(sc.Bytes(), &l) != nil {
				continue
			}
			c.mu.Lock()
			c.lines = append(c.lines, l)
			if l.Step == "joined" {
				c.assigned = nil
				for _, ps := range l.Assignment {
					c.assigned = append(c.assigned, ps...)
				}
				slices.Sort(c.assigned)
			}
			c.mu.Unlock()
		}
		_, _ = io.Copy(io.Discard, stdout)
		_ = c.cmd.Wait()
		close(c.done)
	}()
	t.Cleanup(func() {
		c.stop(t)
		if t.Failed() {
			t.Logf("kafkajs consumer %s (stderr, last lines):\n%s", strings.Join(args, " "), tail(c.stderr.String(), 20))
		}
	})
	return c
}

// stop closes stdin and waits for the consumer to leave and exit.
func (c *jsConsumer) stop(t testing.TB) {
	t.Helper()
	c.stdin.Close()
	select {
	case <-c.done:
	case <-time.After(30 * time.Second):
		_ = c.cmd.Process.Kill()
		<-c.done
		t.Errorf("kafkajs consumer did not exit within 30s of its stdin closing\n%s", tail(c.stderr.String(), 20))
	}
}

func (c *jsConsumer) messages() []jsLine {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []jsLine
	for _, l := range c.lines {
		if l.Step == "message" {
			out = append(out, l)
		}
	}
	return out
}

func (c *jsConsumer) partitions() []int32 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Clone(c.assigned)
}

func (c *jsConsumer) finished() (jsLine, bool) {
	select {
	case <-c.done:
	default:
		return jsLine{}, false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, l := range c.lines {
		if l.Step == "done" || l.Step == "error" {
			return l, true
		}
	}
	return jsLine{}, true
}

// TestKafkajsProduceConsumeResume produces gzip batches with kafkajs, checks them
// byte for byte with franz-go, then consumes in a group with explicit commits, and
// a second consumer of the group resumes exactly after the first one's commits.
func TestKafkajsProduceConsumeResume(t *testing.T) {
	js := newKafkajs(t)
	b := startStandalone(t)
	createTopic(t, b.Addr(), "jsrt", 3, 1, nil)
	ctx := testCtx(t, 2*time.Minute)
	const n = 40
	firstTs := time.Date(2024, 5, 1, 0, 0, 0, 0, time.UTC).UnixMilli()

	var sent []jsLine
	for _, l := range parseJSLines(t, run(ctx, t, nil, js.node, js.script, "produce", b.Addr(), "jsrt", strconv.Itoa(n), "gzip", strconv.FormatInt(firstTs, 10))) {
		if l.Step != "sent" || l.ErrorCode != 0 {
			t.Fatalf("produce: %+v", l)
		}
		sent = append(sent, l)
	}
	if len(sent) == 0 {
		t.Fatal("kafkajs reported no sent batches")
	}

	value := func(i int) string { return fmt.Sprintf("v%d-%s", i, strings.Repeat("x", i%50)) }
	recs := fetchAll(t, b.Addr(), "jsrt")
	if len(recs) != n {
		t.Fatalf("%d records stored, want %d", len(recs), n)
	}
	seen := map[int]bool{}
	for _, r := range recs {
		i, err := strconv.Atoi(strings.TrimPrefix(string(r.Key), "k"))
		if err != nil || seen[i] || string(r.Value) != value(i) || r.Timestamp.UnixMilli() != firstTs+int64(i) {
			t.Fatalf("record %s[%d]@%d: key %q value %q ts %d", r.Topic, r.Partition, r.Offset, r.Key, r.Value, r.Timestamp.UnixMilli())
		}
		seen[i] = true
		if len(r.Headers) != 2 || r.Headers[0].Key != "i" || string(r.Headers[0].Value) != strconv.Itoa(i) ||
			r.Headers[1].Key != "src" || string(r.Headers[1].Value) != "kafkajs" {
			t.Errorf("record k%d headers %v", i, r.Headers)
		}
		if r.Attrs.CompressionType() != 1 {
			t.Errorf("record k%d stored with codec %d, want gzip (1)", i, r.Attrs.CompressionType())
		}
	}

	// First member: reads 25 records, committing each, then leaves.
	first := js.startConsumer(ctx, t, b.Addr(), "jsrt", "jsgroup", "25")
	var firstDone jsLine
	eventually(t, time.Minute, func() error {
		l, ok := first.finished()
		if !ok {
			return fmt.Errorf("first consumer still running after %d records", len(first.messages()))
		}
		firstDone = l
		return nil
	})
	if firstDone.Step != "done" || firstDone.Count != 25 {
		t.Fatalf("first consumer ended with %+v\n%s", firstDone, tail(first.stderr.String(), 20))
	}
	// Second member: must get exactly the other 15.
	second := js.startConsumer(ctx, t, b.Addr(), "jsrt", "jsgroup", "1000")
	eventually(t, time.Minute, func() error {
		if got := len(second.messages()); got < n-25 {
			return fmt.Errorf("second consumer read %d of %d", got, n-25)
		}
		return nil
	})
	second.stop(t)

	got := map[string]bool{}
	for _, m := range append(first.messages(), second.messages()...) {
		if m.Key == nil || m.Value == nil {
			t.Fatalf("message without key or value: %+v", m)
		}
		if got[*m.Key] {
			t.Errorf("%s read twice (second consumer did not resume after the commits)", *m.Key)
		}
		got[*m.Key] = true
		i, _ := strconv.Atoi(strings.TrimPrefix(*m.Key, "k"))
		if *m.Value != value(i) || m.Timestamp != strconv.FormatInt(firstTs+int64(i), 10) ||
			m.Headers["i"] == nil || *m.Headers["i"] != strconv.Itoa(i) || m.Headers["src"] == nil || *m.Headers["src"] != "kafkajs" {
			t.Errorf("consumed %+v", m)
		}
	}
	if len(got) != n {
		t.Errorf("consumers read %d distinct records, want %d", len(got), n)
	}
	if c, e := committed(t, b.Addr(), "jsgroup", "jsrt"), endOffsets(t, b.Addr(), "jsrt"); !reflect.DeepEqual(c, e) {
		t.Errorf("committed %v, want the end offsets %v", c, e)
	}

	// The group and offsets as kafkajs's admin client sees them.
	steps := js.run(ctx, t, "groups", b.Addr(), "jsgroup", "jsrt", strconv.FormatInt(firstTs+20, 10))
	ends := endOffsets(t, b.Addr(), "jsrt")
	var fo []struct {
		Topic      string `json:"topic"`
		Partitions []struct {
			Partition int32  `json:"partition"`
			Offset    string `json:"offset"`
		} `json:"partitions"`
	}
	steps["fetchOffsets"].result(t, &fo)
	if len(fo) != 1 || len(fo[0].Partitions) != 3 {
		t.Fatalf("fetchOffsets: %+v", fo)
	}
	for _, p := range fo[0].Partitions {
		if p.Offset != strconv.FormatInt(ends[p.Partition], 10) {
			t.Errorf("fetchOffsets partition %d: %s, want %d", p.Partition, p.Offset, ends[p.Partition])
		}
	}
	var lg struct {
		Groups []struct {
			GroupID      string `json:"groupId"`
			ProtocolType string `json:"protocolType"`
		} `json:"groups"`
	}
	steps["listGroups"].result(t, &lg)
	if !slices.ContainsFunc(lg.Groups, func(g struct {
		GroupID      string `json:"groupId"`
		ProtocolType string `json:"protocolType"`
	}) bool {
		return g.GroupID == "jsgroup" && g.ProtocolType == "consumer"
	}) {
		t.Errorf("listGroups %+v lacks jsgroup (consumer)", lg.Groups)
	}
	var dg struct {
		Groups []struct {
			ErrorCode int    `json:"errorCode"`
			GroupID   string `json:"groupId"`
			State     string `json:"state"`
			Members   []any  `json:"members"`
		} `json:"groups"`
	}
	steps["describeGroups"].result(t, &dg)
	if len(dg.Groups) != 1 || dg.Groups[0].ErrorCode != 0 || dg.Groups[0].State != "Empty" || len(dg.Groups[0].Members) != 0 {
		t.Errorf("describeGroups after both members left: %+v, want Empty with no members", dg.Groups)
	}
	var to []struct {
		Partition int32  `json:"partition"`
		High      string `json:"high"`
		Low       string `json:"low"`
	}
	steps["fetchTopicOffsets"].result(t, &to)
	for _, p := range to {
		if p.High != strconv.FormatInt(ends[p.Partition], 10) || p.Low != "0" {
			t.Errorf("fetchTopicOffsets partition %d: low %s high %s, want 0 and %d", p.Partition, p.Low, p.High, ends[p.Partition])
		}
	}
	// By timestamp: the first offset of each partition whose record is at or
	// after firstTs+20, from the records franz-go read.
	wantTs := map[int32]int64{}
	for p, e := range ends {
		wantTs[p] = e
	}
	for _, r := range recs {
		if r.Timestamp.UnixMilli() >= firstTs+20 && r.Offset < wantTs[r.Partition] {
			wantTs[r.Partition] = r.Offset
		}
	}
	var bt []struct {
		Partition int32  `json:"partition"`
		Offset    string `json:"offset"`
	}
	steps["fetchTopicOffsetsByTimestamp"].result(t, &bt)
	if len(bt) != 3 {
		t.Fatalf("fetchTopicOffsetsByTimestamp: %+v", bt)
	}
	for _, p := range bt {
		if p.Offset != strconv.FormatInt(wantTs[p.Partition], 10) {
			t.Errorf("fetchTopicOffsetsByTimestamp partition %d: %s, want %d", p.Partition, p.Offset, wantTs[p.Partition])
		}
	}
}

// TestKafkajsGroupSplit runs two kafkajs consumers of one group on a three-broker
// ZooKeeper cluster: after the rebalance each owns a disjoint part of the
// partitions and every record reaches the owner of its partition once.
func TestKafkajsGroupSplit(t *testing.T) {
	js := newKafkajs(t)
	c := startCluster(t, 3)
	addrs := c.Addrs()
	createTopic(t, addrs, "jssplit", 4, 3, nil)
	ctx := testCtx(t, 3*time.Minute)

	a := js.startConsumer(ctx, t, addrs, "jssplit", "jssplit-group", "1000")
	bc := js.startConsumer(ctx, t, addrs, "jssplit", "jssplit-group", "1000")
	eventually(t, time.Minute, func() error {
		pa, pb := a.partitions(), bc.partitions()
		all := append(slices.Clone(pa), pb...)
		slices.Sort(all)
		if len(pa) == 0 || len(pb) == 0 || !slices.Equal(all, []int32{0, 1, 2, 3}) {
			return fmt.Errorf("assignments a=%v b=%v", pa, pb)
		}
		return nil
	})
	ownA, ownB := a.partitions(), bc.partitions()

	const n = 80
	for _, l := range parseJSLines(t, run(ctx, t, nil, js.node, js.script, "produce", addrs, "jssplit", strconv.Itoa(n), "none", "1700000000000")) {
		if l.Step != "sent" || l.ErrorCode != 0 {
			t.Fatalf("produce: %+v", l)
		}
	}
	eventually(t, time.Minute, func() error {
		if got := len(a.messages()) + len(bc.messages()); got < n {
			return fmt.Errorf("members read %d of %d", got, n)
		}
		return nil
	})

	// DescribeGroups with both members live: kafkajs decodes each member's
	// subscription and assignment from the bytes the broker stored.
	var dg struct {
		Groups []struct {
			ErrorCode    int    `json:"errorCode"`
			State        string `json:"state"`
			ProtocolType string `json:"protocolType"`
			Protocol     string `json:"protocol"`
			Members      []struct {
				ClientID string `json:"clientId"`
				Metadata struct {
					Topics []string `json:"topics"`
				} `json:"metadata"`
				Assignment map[string][]int32 `json:"assignment"`
			} `json:"members"`
		} `json:"groups"`
	}
	js.run(ctx, t, "groups", addrs, "jssplit-group", "jssplit", "0")["describeGroups"].result(t, &dg)
	if len(dg.Groups) != 1 || dg.Groups[0].ErrorCode != 0 || dg.Groups[0].State != "Stable" || dg.Groups[0].ProtocolType != "consumer" ||
		dg.Groups[0].Protocol != "RoundRobinAssigner" || len(dg.Groups[0].Members) != 2 {
		t.Fatalf("describeGroups: %+v", dg)
	}
	var described [][]int32
	for _, m := range dg.Groups[0].Members {
		if m.ClientID != "compat-consumer" || !slices.Equal(m.Metadata.Topics, []string{"jssplit"}) {
			t.Errorf("member %+v", m)
		}
		ps := slices.Clone(m.Assignment["jssplit"])
		slices.Sort(ps)
		described = append(described, ps)
	}
	if !slices.ContainsFunc(described, func(ps []int32) bool { return slices.Equal(ps, ownA) }) ||
		!slices.ContainsFunc(described, func(ps []int32) bool { return slices.Equal(ps, ownB) }) {
		t.Errorf("describeGroups assignments %v, members hold %v and %v", described, ownA, ownB)
	}

	a.stop(t)
	bc.stop(t)

	keys := map[string]int{}
	for _, m := range a.messages() {
		keys[deref(m.Key)]++
		if !slices.Contains(ownA, m.Partition) {
			t.Errorf("member a read partition %d, owns %v", m.Partition, ownA)
		}
	}
	for _, m := range bc.messages() {
		keys[deref(m.Key)]++
		if !slices.Contains(ownB, m.Partition) {
			t.Errorf("member b read partition %d, owns %v", m.Partition, ownB)
		}
	}
	if len(keys) != n {
		t.Errorf("members read %d distinct records, want %d", len(keys), n)
	}
	for k, times := range keys {
		if times != 1 {
			t.Errorf("%s read %d times", k, times)
		}
	}
	if c, e := committed(t, addrs, "jssplit-group", "jssplit"), endOffsets(t, addrs, "jssplit"); !reflect.DeepEqual(c, e) {
		t.Errorf("committed %v, want the end offsets %v", c, e)
	}
}

// TestKafkajsCoordinatorFailover kills the broker coordinating a kafkajs group:
// the consumer must find the new coordinator (kafkajs restarts its consumer when
// the dead broker leaves the metadata) and go on reading and committing, so every
// record is read at least once and the final commits reach the end offsets.
func TestKafkajsCoordinatorFailover(t *testing.T) {
	js := newKafkajs(t)
	c := startCluster(t, 3)
	addrs := c.Addrs()
	createTopic(t, addrs, "jscf", 3, 3, nil)
	ctx := testCtx(t, 3*time.Minute)
	produce := func(from, to int) {
		t.Helper()
		cl := kgoClient(t, addrs, kgo.DefaultProduceTopic("jscf"))
		for i := from; i < to; i++ {
			// Until the dead broker's partitions have new leaders, franz-go may
			// give up on a record; it is idempotent, so sending again is safe.
			eventually(t, time.Minute, func() error {
				return cl.ProduceSync(ctx, &kgo.Record{Key: []byte("k" + strconv.Itoa(i)), Value: []byte("v" + strconv.Itoa(i))}).FirstErr()
			})
		}
	}
	distinct := func(cons *jsConsumer) map[string]bool {
		out := map[string]bool{}
		for _, m := range cons.messages() {
			out[deref(m.Key)] = true
		}
		return out
	}

	cons := js.startConsumer(ctx, t, addrs, "jscf", "jscf-group", "1000")
	produce(0, 30)
	eventually(t, time.Minute, func() error {
		if n := len(distinct(cons)); n < 30 {
			return fmt.Errorf("read %d of 30", n)
		}
		return nil
	})
	groups, err := adminClient(t, addrs).DescribeGroups(ctx, "jscf-group")
	if err != nil {
		t.Fatal(err)
	}
	coordinator := groups["jscf-group"].Coordinator.NodeID
	c.broker(coordinator).Kill()

	produce(30, 60)
	eventually(t, 90*time.Second, func() error {
		if n := len(distinct(cons)); n < 60 {
			return fmt.Errorf("read %d of 60 after the coordinator (broker %d) died", n, coordinator)
		}
		return nil
	})
	cons.stop(t)
	if l, _ := cons.finished(); l.Step != "done" {
		t.Fatalf("consumer ended with %+v\n%s", l, tail(cons.stderr.String(), 20))
	}
	if got, ends := committed(t, addrs, "jscf-group", "jscf"), endOffsets(t, addrs, "jscf"); !reflect.DeepEqual(got, ends) {
		t.Errorf("committed %v, want the end offsets %v", got, ends)
	}
}
