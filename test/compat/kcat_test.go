package compat

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// kcatMessage is one record as `kcat -C -J` prints it.
type kcatMessage struct {
	Topic     string   `json:"topic"`
	Partition int32    `json:"partition"`
	Offset    int64    `json:"offset"`
	TsType    string   `json:"tstype"`
	Ts        int64    `json:"ts"`
	Headers   []string `json:"headers"`
	Key       *string  `json:"key"`
	Payload   *string  `json:"payload"`
}

func parseKcatJSON(t testing.TB, out []byte) []kcatMessage {
	t.Helper()
	var msgs []kcatMessage
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		if line == "" {
			continue
		}
		var m kcatMessage
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Fatalf("kcat -J line %q: %v", line, err)
		}
		msgs = append(msgs, m)
	}
	return msgs
}

func TestKcatMetadata(t *testing.T) {
	kcat := needKcat(t)
	b := startStandalone(t)
	createTopic(t, b.Addr(), "meta", 3, 1, nil)
	ctx := testCtx(t, time.Minute)

	out := run(ctx, t, nil, kcat, "-b", b.Addr(), "-L", "-J", "-t", "meta")
	var md struct {
		Controller int32 `json:"controllerid"`
		Brokers    []struct {
			ID   int32  `json:"id"`
			Name string `json:"name"`
		} `json:"brokers"`
		Topics []struct {
			Topic      string `json:"topic"`
			Err        string `json:"error"`
			Partitions []struct {
				Partition int32                `json:"partition"`
				Leader    int32                `json:"leader"`
				Replicas  []struct{ ID int32 } `json:"replicas"`
				ISRs      []struct{ ID int32 } `json:"isrs"`
			} `json:"partitions"`
		} `json:"topics"`
	}
	if err := json.Unmarshal(out, &md); err != nil {
		t.Fatalf("kcat -L -J: %v\n%s", err, out)
	}
	if md.Controller != 0 || len(md.Brokers) != 1 || md.Brokers[0].ID != 0 || md.Brokers[0].Name != b.Addr() {
		t.Fatalf("brokers %+v controller %d, want broker 0 at %s as controller", md.Brokers, md.Controller, b.Addr())
	}
	if len(md.Topics) != 1 || md.Topics[0].Topic != "meta" || md.Topics[0].Err != "" || len(md.Topics[0].Partitions) != 3 {
		t.Fatalf("topics %+v, want meta with 3 partitions", md.Topics)
	}
	for i, p := range md.Topics[0].Partitions {
		if p.Partition != int32(i) || p.Leader != 0 || len(p.Replicas) != 1 || p.Replicas[0].ID != 0 || len(p.ISRs) != 1 || p.ISRs[0].ID != 0 {
			t.Errorf("partition %d: %+v, want leader 0, replicas [0], isr [0]", i, p)
		}
	}

	// An unknown topic is reported per topic, the way librdkafka expects. With
	// auto-creation on (Kafka's default) kcat -L on a missing topic creates it.
	out = run(ctx, t, nil, kcat, "-b", b.Addr(), "-L", "-J", "-t", "auto-created")
	if err := json.Unmarshal(out, &md); err != nil {
		t.Fatalf("kcat -L -J: %v\n%s", err, out)
	}
	if len(md.Topics) != 1 || md.Topics[0].Topic != "auto-created" {
		t.Fatalf("topics %+v, want auto-created", md.Topics)
	}
}

// TestKcatRoundTrip produces keys, values and headers with kcat and checks them
// with kcat's JSON and -f output and with franz-go.
func TestKcatRoundTrip(t *testing.T) {
	kcat := needKcat(t)
	b := startStandalone(t)
	createTopic(t, b.Addr(), "rt", 1, 1, nil)
	ctx := testCtx(t, time.Minute)

	type rec struct{ key, value string }
	recs := []rec{
		{"k0", "v0"},
		{"", "empty key"},
		{"k2", ""},
		{"k3", "ünïcødé ✓ 日本"},
		{"k4", "tab\there and spaces  "},
		{"k5", "a:b:c"}, // only the first delimiter splits
		{"k6", strings.Repeat("0123456789", 20000)},
	}
	var in strings.Builder
	for _, r := range recs {
		fmt.Fprintf(&in, "%s:%s\n", r.key, r.value)
	}
	run(ctx, t, []byte(in.String()), kcat, "-b", b.Addr(), "-P", "-t", "rt", "-K:",
		"-H", "h1=a", "-H", "h2=", "-H", "h1=dup")

	wantHeaders := []string{"h1", "a", "h2", "", "h1", "dup"}
	msgs := parseKcatJSON(t, run(ctx, t, nil, kcat, "-b", b.Addr(), "-C", "-t", "rt", "-o", "beginning", "-e", "-q", "-J"))
	if len(msgs) != len(recs) {
		t.Fatalf("kcat read %d records, want %d", len(msgs), len(recs))
	}
	for i, m := range msgs {
		if m.Offset != int64(i) || m.Partition != 0 || m.Key == nil || *m.Key != recs[i].key ||
			m.Payload == nil || *m.Payload != recs[i].value || !slices.Equal(m.Headers, wantHeaders) || m.TsType != "create" {
			t.Errorf("record %d: %+v, want key %q value %q (%d bytes) headers %q", i, m, recs[i].key, recs[i].value, len(recs[i].value), wantHeaders)
		}
	}

	// The same bytes seen by franz-go: an empty key is empty, not null.
	for i, r := range fetchAll(t, b.Addr(), "rt") {
		if r.Key == nil || string(r.Key) != recs[i].key || string(r.Value) != recs[i].value || len(r.Headers) != 3 ||
			r.Headers[0].Key != "h1" || string(r.Headers[0].Value) != "a" || r.Headers[1].Key != "h2" || len(r.Headers[1].Value) != 0 {
			t.Errorf("franz-go record %d: key %q value %d bytes headers %v", i, r.Key, len(r.Value), r.Headers)
		}
	}

	// -f formats: topic, partition, offset, key, key length, value length, headers.
	out := run(ctx, t, nil, kcat, "-b", b.Addr(), "-C", "-t", "rt", "-o", "0", "-c", "3", "-e", "-q",
		"-f", `%t|%p|%o|%k|%K|%S|%h\n`)
	want := "rt|0|0|k0|2|2|h1=a,h2=,h1=dup\n" +
		"rt|0|1||0|9|h1=a,h2=,h1=dup\n" +
		"rt|0|2|k2|2|0|h1=a,h2=,h1=dup\n"
	if string(out) != want {
		t.Errorf("kcat -f output:\n%s\nwant:\n%s", out, want)
	}
}

// TestKcatCompression produces with each codec librdkafka has and checks the
// records round-trip and that the batches are stored in that codec (the broker
// keeps what the producer sent when compression.type=producer).
func TestKcatCompression(t *testing.T) {
	kcat := needKcat(t)
	b := startStandalone(t)
	codecs := []struct {
		name string
		attr uint8 // batch attributes bits 0-2
	}{{"none", 0}, {"gzip", 1}, {"snappy", 2}, {"lz4", 3}, {"zstd", 4}}
	var in strings.Builder
	for i := range 2000 {
		fmt.Fprintf(&in, "record %d %s\n", i, strings.Repeat("abc", i%40))
	}
	for _, c := range codecs {
		t.Run(c.name, func(t *testing.T) {
			topic := "z-" + c.name
			createTopic(t, b.Addr(), topic, 1, 1, nil)
			ctx := testCtx(t, time.Minute)
			_, stderr, err := runErr(ctx, []byte(in.String()), kcat, "-b", b.Addr(), "-P", "-t", topic, "-z", c.name,
				"-X", "linger.ms=50", "-d", "msg")
			if err != nil {
				t.Fatalf("kcat -P -z %s: %v\n%s", c.name, err, tail(string(stderr), 20))
			}
			out := run(ctx, t, nil, kcat, "-b", b.Addr(), "-C", "-t", topic, "-o", "beginning", "-e", "-q", "-f", `%s\n`)
			if string(out) != in.String() {
				t.Fatalf("records read back differ from those produced (%d bytes, want %d)", len(out), in.Len())
			}
			recs := fetchAll(t, b.Addr(), topic)
			for _, r := range recs {
				if got := r.Attrs.CompressionType(); got != c.attr {
					t.Errorf("offset %d stored with codec %d, want %d (%s); librdkafka said: %s\nsee FINDINGS.md F1",
						r.Offset, got, c.attr, c.name, grepLine(string(stderr), "compression"))
					break
				}
			}
		})
	}
}

// grepLine returns the first line of s containing sub (case-insensitive).
func grepLine(s, sub string) string {
	for _, l := range strings.Split(s, "\n") {
		if strings.Contains(strings.ToLower(l), sub) {
			return l
		}
	}
	return "(nothing about " + sub + ")"
}

// TestKcatIdempotentAcksAll produces with librdkafka's idempotent producer and
// acks=all: the broker must grant a producer id (InitProducerId) and accept the
// sequenced batches.
func TestKcatIdempotentAcksAll(t *testing.T) {
	kcat := needKcat(t)
	b := startStandalone(t)
	createTopic(t, b.Addr(), "idem", 3, 1, nil)
	ctx := testCtx(t, time.Minute)
	var in strings.Builder
	for i := range 3000 {
		fmt.Fprintf(&in, "key%d:value %d\n", i%17, i)
	}
	run(ctx, t, []byte(in.String()), kcat, "-b", b.Addr(), "-P", "-t", "idem", "-K:",
		"-X", "enable.idempotence=true", "-X", "acks=all", "-X", "linger.ms=5", "-X", "batch.num.messages=100")

	recs := fetchAll(t, b.Addr(), "idem")
	if len(recs) != 3000 {
		t.Fatalf("%d records, want 3000", len(recs))
	}
	seen := map[string]bool{}
	partOf := map[string]int32{}
	for _, r := range recs {
		if r.ProducerID < 0 {
			t.Fatalf("offset %d of partition %d has no producer id: not idempotent", r.Offset, r.Partition)
		}
		if seen[string(r.Value)] {
			t.Fatalf("duplicate %q", r.Value)
		}
		seen[string(r.Value)] = true
		// librdkafka's default partitioner (consistent_random) keeps a key on one partition.
		if p, ok := partOf[string(r.Key)]; ok && p != r.Partition {
			t.Fatalf("key %s on partitions %d and %d", r.Key, p, r.Partition)
		}
		partOf[string(r.Key)] = r.Partition
	}
}

// TestKcatOffsetsAndTimestamps consumes by absolute and relative offset and by
// timestamp, and asks for offsets by time (ListOffsets), on records franz-go
// wrote with known timestamps.
func TestKcatOffsetsAndTimestamps(t *testing.T) {
	kcat := needKcat(t)
	b := startStandalone(t)
	createTopic(t, b.Addr(), "ts", 1, 1, nil)
	ctx := testCtx(t, time.Minute)
	base := time.Date(2024, 3, 1, 12, 0, 0, 0, time.UTC)
	cl := kgoClient(t, b.Addr(), kgo.DefaultProduceTopic("ts"))
	for i := range 10 {
		r := &kgo.Record{Key: []byte("k" + strconv.Itoa(i)), Value: []byte("v" + strconv.Itoa(i)), Timestamp: base.Add(time.Duration(i) * time.Second)}
		if err := cl.ProduceSync(ctx, r).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	if err := cl.ProduceSync(ctx, &kgo.Record{Key: []byte("tomb"), Timestamp: base.Add(10 * time.Second)}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	ms := func(i int) string { return strconv.FormatInt(base.Add(time.Duration(i)*time.Second).UnixMilli(), 10) }
	bootstrap := []string{"-b", b.Addr(), "-t", "ts"}
	consume := func(args ...string) string {
		t.Helper()
		args = append(append([]string{"-C"}, bootstrap...), append(args, "-e", "-q", "-Z", "-f", `%o:%k=%s@%T\n`)...)
		return string(run(ctx, t, nil, kcat, args...))
	}
	line := func(i int) string { return fmt.Sprintf("%d:k%d=v%d@%s\n", i, i, i, ms(i)) }
	lines := func(from, to int) string {
		var s strings.Builder
		for i := from; i < to; i++ {
			s.WriteString(line(i))
		}
		return s.String()
	}
	tomb := "10:tomb=NULL@" + ms(10) + "\n"

	checks := []struct {
		name string
		got  string
		want string
	}{
		{"-o beginning", consume("-o", "beginning"), lines(0, 10) + tomb},
		{"-o 3 -c 2", consume("-o", "3", "-c", "2"), lines(3, 5)},
		{"-o -3", consume("-o", "-3"), lines(8, 10) + tomb},
		{"-o s@ts (between records)", consume("-o", "s@"+strconv.FormatInt(base.Add(4500*time.Millisecond).UnixMilli(), 10)), lines(5, 10) + tomb},
		{"-o s@ts -o e@ts", consume("-o", "s@"+ms(2), "-o", "e@"+ms(5)), lines(2, 5)},
	}
	for _, c := range checks {
		if c.got != c.want {
			t.Errorf("kcat -C %s:\n%s\nwant:\n%s", c.name, c.got, c.want)
		}
	}

	query := func(spec string) string {
		t.Helper()
		return strings.TrimSpace(string(run(ctx, t, nil, kcat, "-b", b.Addr(), "-Q", "-t", spec)))
	}
	for _, q := range []struct{ spec, want string }{
		{"ts:0:" + ms(3), "ts [0] offset 3"},
		{"ts:0:" + strconv.FormatInt(base.Add(3500*time.Millisecond).UnixMilli(), 10), "ts [0] offset 4"},
		{"ts:0:-1", "ts [0] offset 11"},
		{"ts:0:-2", "ts [0] offset 0"},
		{"ts:0:" + ms(60), "ts [0] offset -1"},
	} {
		if got := query(q.spec); got != q.want {
			t.Errorf("kcat -Q -t %s: %q, want %q", q.spec, got, q.want)
		}
	}
}

// kcatMember is one `kcat -G` process whose stdout (JSON records) and stderr
// (rebalance notices) are followed while it runs.
type kcatMember struct {
	cmd *exec.Cmd

	mu       sync.Mutex
	assigned map[int32]bool
	msgs     []kcatMessage
	stderr   strings.Builder
	done     chan struct{}
}

var assignedRE = regexp.MustCompile(`rebalanced \(memberid [^)]*\): (assigned|revoked): (.*)$`)
var partitionRE = regexp.MustCompile(`\[(\d+)\]`)

func startKcatMember(ctx context.Context, t *testing.T, kcat string, args ...string) *kcatMember {
	t.Helper()
	m := &kcatMember{assigned: map[int32]bool{}, done: make(chan struct{})}
	m.cmd = exec.CommandContext(ctx, kcat, args...)
	stdout, err := m.cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	stderr, err := m.cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := m.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	wg.Add(2)
	go func() {
		defer wg.Done()
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			line := sc.Text()
			m.mu.Lock()
			m.stderr.WriteString(line + "\n")
			if g := assignedRE.FindStringSubmatch(line); g != nil {
				if g[1] == "revoked" {
					clear(m.assigned)
				} else {
					for _, p := range partitionRE.FindAllStringSubmatch(g[2], -1) {
						n, _ := strconv.Atoi(p[1])
						m.assigned[int32(n)] = true
					}
				}
			}
			m.mu.Unlock()
		}
	}()
	go func() {
		defer wg.Done()
		sc := bufio.NewScanner(stdout)
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		for sc.Scan() {
			var msg kcatMessage
			if err := json.Unmarshal(sc.Bytes(), &msg); err != nil {
				continue
			}
			m.mu.Lock()
			m.msgs = append(m.msgs, msg)
			m.mu.Unlock()
		}
		_, _ = io.Copy(io.Discard, stdout)
	}()
	go func() {
		wg.Wait()
		_ = m.cmd.Wait()
		close(m.done)
	}()
	t.Cleanup(func() {
		m.stop()
		if t.Failed() {
			t.Logf("kcat %s (last lines):\n%s", strings.Join(args, " "), tail(m.log(), 20))
		}
	})
	return m
}

// stop asks kcat to leave the group (SIGTERM: it commits and closes) and waits.
func (m *kcatMember) stop() {
	select {
	case <-m.done:
		return
	default:
	}
	_ = m.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-m.done:
	case <-time.After(20 * time.Second):
		_ = m.cmd.Process.Kill()
		<-m.done
	}
}

func (m *kcatMember) partitions() []int32 {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []int32
	for p := range m.assigned {
		out = append(out, p)
	}
	slices.Sort(out)
	return out
}

func (m *kcatMember) messages() []kcatMessage {
	m.mu.Lock()
	defer m.mu.Unlock()
	return slices.Clone(m.msgs)
}

func (m *kcatMember) log() string {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.stderr.String()
}

// committed returns the group's committed offsets for topic, by partition. Like
// endOffsets it retries while a dead broker is still named in the metadata.
func committed(t testing.TB, addrs, group, topic string) map[int32]int64 {
	t.Helper()
	ctx := testCtx(t, time.Minute)
	out := map[int32]int64{}
	adm := adminClient(t, addrs)
	eventually(t, time.Minute, func() error {
		resp, err := adm.FetchOffsets(ctx, group)
		if err != nil {
			return err
		}
		clear(out)
		resp.Each(func(o kadm.OffsetResponse) {
			if o.Topic == topic && o.Err == nil {
				out[o.Partition] = o.At
			}
		})
		return nil
	})
	return out
}

func endOffsets(t testing.TB, addrs, topic string) map[int32]int64 {
	t.Helper()
	ctx := testCtx(t, time.Minute)
	out := map[int32]int64{}
	adm := adminClient(t, addrs)
	eventually(t, time.Minute, func() error {
		ends, err := adm.ListEndOffsets(ctx, topic)
		if err == nil {
			err = ends.Error()
		}
		if err != nil {
			return err
		}
		ends.Each(func(o kadm.ListedOffset) { out[o.Partition] = o.Offset })
		return nil
	})
	return out
}

// TestKcatConsumerGroup runs librdkafka's balanced consumer on a three-broker
// ZooKeeper cluster: it reads everything, commits, resumes after its commits, and
// two members split the partitions.
func TestKcatConsumerGroup(t *testing.T) {
	kcat := needKcat(t)
	c := startCluster(t, 3)
	addrs := c.Addrs()
	createTopic(t, addrs, "grp", 3, 3, nil)
	ctx := testCtx(t, 3*time.Minute)
	produceTo := func(topic string, from, to int) {
		t.Helper()
		var in strings.Builder
		for i := from; i < to; i++ {
			fmt.Fprintf(&in, "key-%d:value-%d\n", i, i)
		}
		run(ctx, t, []byte(in.String()), kcat, "-b", addrs, "-P", "-t", topic, "-K:", "-X", "acks=all")
	}
	values := func(msgs []kcatMessage) []string {
		var out []string
		for _, m := range msgs {
			if m.Payload == nil {
				t.Fatalf("record %s[%d]@%d has a null value", m.Topic, m.Partition, m.Offset)
			}
			out = append(out, *m.Payload)
		}
		sort.Strings(out)
		return out
	}
	want := func(from, to int) []string {
		var out []string
		for i := from; i < to; i++ {
			out = append(out, "value-"+strconv.Itoa(i))
		}
		sort.Strings(out)
		return out
	}
	group := func(name string) []kcatMessage {
		t.Helper()
		return parseKcatJSON(t, run(ctx, t, nil, kcat, "-b", addrs, "-G", name, "-X", "auto.offset.reset=earliest", "-e", "-q", "-J", "grp"))
	}

	produceTo("grp", 0, 300)
	if got := values(group("g1")); !reflect.DeepEqual(got, want(0, 300)) {
		t.Fatalf("first run of group g1 read %d records, want the 300 produced", len(got))
	}
	if got, ends := committed(t, addrs, "g1", "grp"), endOffsets(t, addrs, "grp"); !reflect.DeepEqual(got, ends) {
		t.Fatalf("g1 committed %v, want the end offsets %v", got, ends)
	}
	produceTo("grp", 300, 330)
	if got := values(group("g1")); !reflect.DeepEqual(got, want(300, 330)) {
		t.Fatalf("second run of group g1 read %v, want only the 30 new records", got)
	}

	// Two members at once, on an empty topic so nothing is read before the
	// rebalance settles: each ends with a disjoint part, and new records reach the
	// owner of their partition exactly once.
	createTopic(t, addrs, "split", 3, 3, nil)
	topicOnEveryBroker(t, c, "split", 3)
	args := []string{"-b", addrs, "-G", "g2", "-X", "auto.offset.reset=earliest", "-J", "-u", "split"}
	a := startKcatMember(ctx, t, kcat, args...)
	bm := startKcatMember(ctx, t, kcat, args...)
	eventually(t, time.Minute, func() error {
		pa, pb := a.partitions(), bm.partitions()
		all := append(slices.Clone(pa), pb...)
		slices.Sort(all)
		if len(pa) == 0 || len(pb) == 0 || !slices.Equal(all, []int32{0, 1, 2}) {
			return fmt.Errorf("assignments a=%v b=%v", pa, pb)
		}
		return nil
	})
	ownerA := a.partitions()
	produceTo("split", 1000, 1060)
	var got []kcatMessage
	eventually(t, time.Minute, func() error {
		got = append(a.messages(), bm.messages()...)
		if len(got) < 60 {
			return fmt.Errorf("members read %d of 60 records", len(got))
		}
		return nil
	})
	if v := values(got); !reflect.DeepEqual(v, want(1000, 1060)) {
		t.Fatalf("members read %v, want each of the 60 new records once", v)
	}
	for _, m := range a.messages() {
		if !slices.Contains(ownerA, m.Partition) {
			t.Errorf("member a read partition %d, assigned %v", m.Partition, ownerA)
		}
	}
	if len(a.messages()) == 0 || len(bm.messages()) == 0 {
		t.Errorf("a read %d and b %d records; both own partitions", len(a.messages()), len(bm.messages()))
	}
}

// TestKcatIdempotentFailover keeps librdkafka's idempotent producer (acks=all)
// sending while the partition leader is SIGKILLed: it must follow the new leader
// and every record must be stored exactly once, in order.
func TestKcatIdempotentFailover(t *testing.T) {
	kcat := needKcat(t)
	c := startCluster(t, 3)
	addrs := c.Addrs()
	createTopic(t, addrs, "fo", 1, 3, nil)
	ctx := testCtx(t, 3*time.Minute)
	leader := topicMetadata(t, addrs, "fo", 1).Topics["fo"].Partitions[0].Leader

	cmd := exec.CommandContext(ctx, kcat, "-b", addrs, "-P", "-t", "fo", "-p", "0",
		"-X", "enable.idempotence=true", "-X", "acks=all", "-X", "linger.ms=0")
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr syncBuffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	write := func(from, to int) {
		t.Helper()
		for i := from; i < to; i++ {
			if _, err := fmt.Fprintf(stdin, "record-%04d\n", i); err != nil {
				t.Fatal(err)
			}
		}
	}
	// kcat reads its input in blocks, so the tail of what was written may wait
	// for more input: most of the first part being stored is enough.
	write(0, 200)
	eventually(t, time.Minute, func() error {
		if n := endOffsets(t, addrs, "fo")[0]; n < 100 {
			return fmt.Errorf("high watermark %d, want at least 100", n)
		}
		return nil
	})
	c.broker(leader).Kill()
	write(200, 400)
	stdin.Close()
	if err := cmd.Wait(); err != nil || strings.Contains(stderr.String(), "Delivery failed") {
		t.Fatalf("kcat producer across the leader kill: %v\n%s", err, tail(stderr.String(), 30))
	}

	recs := fetchAll(t, addrs, "fo")
	if len(recs) != 400 {
		t.Fatalf("%d records stored, want 400 (exactly once)\nkcat:\n%s", len(recs), tail(stderr.String(), 30))
	}
	for i, r := range recs {
		if want := fmt.Sprintf("record-%04d", i); string(r.Value) != want || r.Offset != int64(i) {
			t.Fatalf("offset %d holds %q, want %q", r.Offset, r.Value, want)
		}
	}
}

// TestKcatControllerFailoverAcksAll kills the controller and produces at once
// with librdkafka's defaults (not idempotent, acks=all, retries on timeout) to
// partitions where the dead controller was a follower. As in Kafka, the new
// controller must take the dead broker out of those ISRs at failover: otherwise
// acks=all waits for replica.lag.time.max.ms (30 s, Kafka's default), librdkafka
// gives up on the request after request.timeout.ms and sends the batch again, and
// the records are stored twice.
func TestKcatControllerFailoverAcksAll(t *testing.T) {
	kcat := needKcat(t)
	c := startCluster(t, 3, "replica.lag.time.max.ms=30000")
	addrs := c.Addrs()
	createTopic(t, addrs, "cfo", 3, 3, nil)
	ctx := testCtx(t, 3*time.Minute)
	md := topicMetadata(t, addrs, "cfo", 3)
	controller := md.Controller
	followerOf := 0
	for _, p := range md.Topics["cfo"].Partitions {
		if p.Leader != controller && slices.Contains(p.ISR, controller) {
			followerOf++
		}
	}
	if followerOf == 0 {
		t.Fatalf("controller %d follows no partition of cfo: %+v", controller, md.Topics["cfo"].Partitions)
	}
	c.broker(controller).Kill()

	var in strings.Builder
	for i := range 60 {
		fmt.Fprintf(&in, "k%d:v%d\n", i, i)
	}
	run(ctx, t, []byte(in.String()), kcat, "-b", addrs, "-P", "-t", "cfo", "-K:",
		"-X", "enable.idempotence=false", "-X", "acks=all", "-X", "request.timeout.ms=15000")
	recs := fetchAll(t, addrs, "cfo")
	seen := map[string]int{}
	for _, r := range recs {
		seen[string(r.Value)]++
	}
	for i := range 60 {
		if v := "v" + strconv.Itoa(i); seen[v] != 1 {
			t.Errorf("%s stored %d times, want once", v, seen[v])
		}
	}
	if len(recs) != 60 {
		t.Errorf("%d records stored, want 60", len(recs))
	}
}

// TestKcatGroupAfterTopicRecreated deletes a topic a group has committed on and
// creates it again: as in Kafka, deleting the topic deletes the group's offsets
// for it, so librdkafka's consumer starts the new topic by auto.offset.reset
// instead of at the old topic's offsets (which would skip the new records).
func TestKcatGroupAfterTopicRecreated(t *testing.T) {
	kcat := needKcat(t)
	b := startStandalone(t)
	createTopic(t, b.Addr(), "recreated", 1, 1, nil)
	ctx := testCtx(t, 2*time.Minute)
	produce := func(prefix string) {
		t.Helper()
		var in strings.Builder
		for i := range 10 {
			fmt.Fprintf(&in, "%s-%d\n", prefix, i)
		}
		run(ctx, t, []byte(in.String()), kcat, "-b", b.Addr(), "-P", "-t", "recreated")
	}
	consume := func() []string {
		t.Helper()
		out := run(ctx, t, nil, kcat, "-b", b.Addr(), "-G", "recreated-group", "-X", "auto.offset.reset=earliest", "-e", "-q", "-f", `%s\n`, "recreated")
		return strings.Fields(string(out))
	}

	produce("old")
	if got := consume(); len(got) != 10 {
		t.Fatalf("first run read %d records, want 10", len(got))
	}
	adm := adminClient(t, b.Addr())
	if _, err := adm.DeleteTopics(ctx, "recreated"); err != nil {
		t.Fatal(err)
	}
	eventually(t, 30*time.Second, func() error {
		resp, err := adm.CreateTopic(ctx, 1, 1, nil, "recreated")
		if err == nil {
			err = resp.Err
		}
		return err
	})
	if got := committed(t, b.Addr(), "recreated-group", "recreated"); len(got) != 0 {
		t.Errorf("after the topic was deleted and created again the group still has offsets %v for it; Kafka deletes them with the topic (FINDINGS.md F4)", got)
	}
	produce("new")
	got := consume()
	want := strings.Fields("new-0 new-1 new-2 new-3 new-4 new-5 new-6 new-7 new-8 new-9")
	if !slices.Equal(got, want) {
		t.Errorf("the group read %v from the new topic, want %v: it resumed at the deleted topic's offsets (FINDINGS.md F4)", got, want)
	}
}

// TestKcatBinary round-trips arbitrary bytes (every byte value, newlines and NULs
// included): kcat sends each file named on its command line as one record, and
// reads back what franz-go wrote.
func TestKcatBinary(t *testing.T) {
	kcat := needKcat(t)
	b := startStandalone(t)
	createTopic(t, b.Addr(), "bin", 1, 1, nil)
	ctx := testCtx(t, time.Minute)
	allBytes := make([]byte, 0, 1024)
	for i := range 1024 {
		allBytes = append(allBytes, byte(i))
	}
	random := make([]byte, 300_000)
	rng := rand.New(rand.NewPCG(1, 2))
	for i := range random {
		random[i] = byte(rng.Uint32())
	}
	dir := t.TempDir()
	var files []string
	for i, data := range [][]byte{allBytes, random} {
		f := filepath.Join(dir, fmt.Sprintf("record-%d", i))
		if err := os.WriteFile(f, data, 0o644); err != nil {
			t.Fatal(err)
		}
		files = append(files, f)
	}
	run(ctx, t, nil, kcat, append([]string{"-b", b.Addr(), "-P", "-t", "bin"}, files...)...)
	cl := kgoClient(t, b.Addr(), kgo.DefaultProduceTopic("bin"))
	if err := cl.ProduceSync(ctx, &kgo.Record{Key: allBytes[:256], Value: random[:1000]}).FirstErr(); err != nil {
		t.Fatal(err)
	}

	read := func(offset int, format string) []byte {
		t.Helper()
		return run(ctx, t, nil, kcat, "-b", b.Addr(), "-C", "-t", "bin", "-o", strconv.Itoa(offset), "-c", "1", "-e", "-q", "-f", format)
	}
	if got := read(0, "%s"); !bytes.Equal(got, allBytes) {
		t.Errorf("record 0: %d bytes differ from the %d written", len(got), len(allBytes))
	}
	if got := read(1, "%s"); !bytes.Equal(got, random) {
		t.Errorf("record 1: %d bytes differ from the %d written", len(got), len(random))
	}
	if got := read(2, "%k"); !bytes.Equal(got, allBytes[:256]) {
		t.Errorf("record 2 key read by kcat differs from franz-go's")
	}
	if got := read(2, "%s"); !bytes.Equal(got, random[:1000]) {
		t.Errorf("record 2 value read by kcat differs from franz-go's")
	}
	recs := fetchAll(t, b.Addr(), "bin")
	if len(recs) != 3 || !bytes.Equal(recs[0].Value, allBytes) || !bytes.Equal(recs[1].Value, random) || recs[0].Key != nil {
		t.Errorf("franz-go read %d records back, or kcat's differ", len(recs))
	}
}

// TestKcatRollingKill SIGKILLs and restarts each broker of a ZooKeeper cluster in
// turn while librdkafka's idempotent producer writes and its balanced consumer
// reads: every record must be in the log exactly once and reach the consumer.
func TestKcatRollingKill(t *testing.T) {
	kcat := needKcat(t)
	c := startCluster(t, 3)
	addrs := c.Addrs()
	createTopic(t, addrs, "rolling", 6, 3, nil)
	ctx := testCtx(t, 4*time.Minute)

	consumer := startKcatMember(ctx, t, kcat, "-b", addrs, "-G", "rolling-group", "-X", "auto.offset.reset=earliest", "-J", "-u", "rolling")
	producer := exec.CommandContext(ctx, kcat, "-b", addrs, "-P", "-t", "rolling", "-K:",
		"-X", "enable.idempotence=true", "-X", "acks=all", "-X", "linger.ms=5")
	stdin, err := producer.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr syncBuffer
	producer.Stderr = &stderr
	if err := producer.Start(); err != nil {
		t.Fatal(err)
	}
	const chunk = 1500
	next := 0
	write := func() {
		t.Helper()
		for range chunk {
			if _, err := fmt.Fprintf(stdin, "k%d:record-%05d\n", next%97, next); err != nil {
				werr := producer.Wait()
				t.Fatalf("kcat producer gone after %d records (%v, %v; \"Invalid replication factor\" below is FINDINGS.md F5):\n%s",
					next, err, werr, tail(stderr.String(), 30))
			}
			next++
		}
	}
	// Metadata at most 100 ms old (kgo answers Metadata requests from its
	// cache for 5 s by default: seen here as a leader elected 5 s ago).
	adm := kadm.NewClient(kgoClient(t, addrs, kgo.MetadataMinAge(100*time.Millisecond)))
	// A rolling restart goes on once the cluster is whole again: every
	// replica back in its ISR and leading what it prefers (an operator runs
	// a preferred election; Kafka's automatic one waits 300 s), and the
	// consumer up to date. Killing the next broker sooner (the test did)
	// can leave librdkafka connected to the victim alone: its sparse
	// connections skip the brokers that lead nothing, and kcat exits once
	// every broker it knows is down (seen: "3/3 brokers are down:
	// terminating", and "1/1" with the consumer killed as it started).
	whole := func(after string) {
		t.Helper()
		start := time.Now()
		defer func() { t.Logf("%s: whole again after %v", after, time.Since(start).Round(time.Millisecond)) }()
		eventually(t, 2*time.Minute, func() error {
			md, err := adm.Metadata(ctx, "rolling")
			if err != nil {
				return err
			}
			var elect kadm.TopicsSet
			var notPreferred error
			for _, p := range md.Topics["rolling"].Partitions.Sorted() {
				if len(p.ISR) != len(p.Replicas) {
					return fmt.Errorf("%s: partition %d has ISR %v of replicas %v", after, p.Partition, p.ISR, p.Replicas)
				}
				if p.Leader != p.Replicas[0] {
					elect.Add("rolling", p.Partition)
					notPreferred = fmt.Errorf("%s: partition %d led by %d, not by its preferred replica %d", after, p.Partition, p.Leader, p.Replicas[0])
				}
			}
			if notPreferred != nil {
				_, _ = adm.ElectLeaders(ctx, kadm.ElectPreferredReplica, elect)
				return notPreferred
			}
			// Up to the high watermarks, not to every line written: kcat -P
			// holds back the last lines it read until more input comes
			// (its reader waits for 128 bytes).
			ends, err := adm.ListEndOffsets(ctx, "rolling")
			if err == nil {
				err = ends.Error()
			}
			if err != nil {
				return err
			}
			read := map[int32]int64{}
			for _, m := range consumer.messages() {
				read[m.Partition] = max(read[m.Partition], m.Offset+1)
			}
			var behind error
			ends.Each(func(o kadm.ListedOffset) {
				if read[o.Partition] < o.Offset && behind == nil {
					behind = fmt.Errorf("%s: consumer read partition %d up to offset %d of %d", after, o.Partition, read[o.Partition], o.Offset)
				}
			})
			return behind
		})
	}
	write()
	whole("before the first kill")
	for _, b := range c.brokers {
		b.Kill()
		write()
		if err := b.Restart(); err != nil {
			t.Fatalf("restarting broker %d: %v", b.ID(), err)
		}
		write()
		whole(fmt.Sprintf("after restarting broker %d", b.ID()))
	}
	stdin.Close()
	if err := producer.Wait(); err != nil || strings.Contains(stderr.String(), "Delivery failed") {
		t.Fatalf("kcat producer through the rolling kill (\"Invalid replication factor\" below is FINDINGS.md F5): %v\n%s", err, tail(stderr.String(), 30))
	}

	seen := map[string]int{}
	for _, r := range fetchAll(t, addrs, "rolling") {
		seen[string(r.Value)]++
	}
	for i := range next {
		if v := fmt.Sprintf("record-%05d", i); seen[v] != 1 {
			t.Errorf("%s stored %d times, want once", v, seen[v])
		}
	}
	eventually(t, time.Minute, func() error {
		read := map[string]bool{}
		for _, m := range consumer.messages() {
			read[deref(m.Payload)] = true
		}
		if len(read) < next {
			return fmt.Errorf("consumer read %d of %d records", len(read), next)
		}
		return nil
	})
	t.Logf("%d records, consumer read %d (redeliveries after failovers included)", next, len(consumer.messages()))
}

// TestKcatRestartedBrokerMetadata restarts a SIGKILLed broker while another one
// is down and asks it for an existing topic (kcat -L) until it is ready. A
// restarted broker first waits for its old ZooKeeper session to expire; Kafka
// serves no requests before it has registered, so no client can be told an
// existing topic is missing or cannot be created. librdkafka takes
// INVALID_REPLICATION_FACTOR as a permanent topic error and fails every queued
// message of the topic.
func TestKcatRestartedBrokerMetadata(t *testing.T) {
	kcat := needKcat(t)
	c := startCluster(t, 3)
	createTopic(t, c.Addrs(), "existing", 1, 3, nil)
	topicMetadata(t, c.Addrs(), "existing", 1)
	ctx := testCtx(t, 2*time.Minute)
	b0, b1 := c.broker(0), c.broker(1)
	b1.Kill()
	b0.Kill()
	ready := make(chan error, 1)
	go func() { ready <- b0.Restart() }()

	answers := map[string]int{}
	for done := false; !done; {
		select {
		case err := <-ready:
			if err != nil {
				t.Fatalf("restarting broker 0: %v", err)
			}
			done = true
		case <-time.After(100 * time.Millisecond):
		}
		out, _, err := runErr(ctx, nil, kcat, "-b", b0.Addr(), "-L", "-J", "-t", "existing", "-m", "1")
		if err != nil || done {
			continue // not listening yet, or registered: only answers before that count
		}
		var md struct {
			Topics []struct {
				Topic      string            `json:"topic"`
				Err        string            `json:"error"`
				Partitions []json.RawMessage `json:"partitions"`
			} `json:"topics"`
		}
		if json.Unmarshal(out, &md) == nil && len(md.Topics) == 1 && md.Topics[0].Err != "" {
			answers[fmt.Sprintf("%q with %d partitions", md.Topics[0].Err, len(md.Topics[0].Partitions))]++
		}
	}
	if len(answers) > 0 {
		t.Errorf("before registering, the restarted broker answered Metadata for the existing topic with errors (answer: times) %v (FINDINGS.md F5)", answers)
	}
}
