package compat

import (
	"context"
	"fmt"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// jsRead is one record printed by `compat.js read`.
type jsRead struct {
	Partition int32  `json:"partition"`
	Offset    string `json:"offset"`
	Value     string `json:"value"`
}

// lines runs one compat.js command to its end and returns every line it
// printed, in order.
func (k kafkajs) lines(ctx context.Context, t *testing.T, args ...string) []jsLine {
	t.Helper()
	stdout, stderr, err := runErr(ctx, nil, k.node, append([]string{k.script}, args...)...)
	if err != nil {
		t.Fatalf("node compat.js %s: %v\nstdout:\n%s\nstderr:\n%s", strings.Join(args, " "), err, stdout, tail(string(stderr), 30))
	}
	return parseJSLines(t, stdout)
}

// read reads topic from the start with kafkajs (readUncommitted when
// isolation is "uncommitted") until max records or 30 s.
func (k kafkajs) read(ctx context.Context, t *testing.T, addrs, topic, isolation string, max int) []jsRead {
	t.Helper()
	var values []jsRead
	k.run(ctx, t, "read", addrs, topic, isolation, strconv.Itoa(max))["read"].result(t, &values)
	return values
}

func tagged(n int, tags ...string) []string {
	var out []string
	for _, tag := range tags {
		for i := range n {
			out = append(out, fmt.Sprintf("%s-%d", tag, i))
		}
	}
	return out
}

func readValues(rs []jsRead) []string {
	out := make([]string, len(rs))
	for i, r := range rs {
		out[i] = r.Value
	}
	return out
}

// TestKafkajsTransactions runs kafkajs's transactional producer on three
// brokers: it commits, aborts and commits again; a second producer with the
// same transactionalId fences it in the middle of a transaction (whose
// records are aborted); and read_committed and read_uncommitted kafkajs
// consumers see exactly what each should, in order.
func TestKafkajsTransactions(t *testing.T) {
	js := newKafkajs(t)
	c := startCluster(t, 3)
	addrs := c.Addrs()
	createTopic(t, addrs, "jstxn", 1, 3, nil)
	ctx := testCtx(t, 3*time.Minute)
	const n = 5

	var committed, aborted []string
	var fenced *jsLine
	for _, l := range js.lines(ctx, t, "txn", addrs, "jstxn", "jstxn-id", strconv.Itoa(n)) {
		switch l.Step {
		case "committed":
			committed = append(committed, l.Tag)
		case "aborted":
			aborted = append(aborted, l.Tag)
		case "fenced":
			fenced = &l
		case "error":
			t.Errorf("kafkajs txn: %+v", l.Error)
		}
	}
	if !slices.Equal(committed, []string{"c1", "c2", "c3"}) || !slices.Equal(aborted, []string{"a1"}) {
		t.Fatalf("committed %v, aborted %v; want c1 c2 c3 and a1", committed, aborted)
	}
	// Kafka answers a client of InitProducerId v0-v2 (kafkajs sends v1)
	// INVALID_PRODUCER_EPOCH rather than PRODUCER_FENCED (KIP-588).
	if fenced == nil || fenced.Error == nil || fenced.Error.Type != "INVALID_PRODUCER_EPOCH" {
		t.Errorf("the first producer was not fenced by the second one of its transactionalId: %+v", fenced)
	}

	if got, want := readValues(js.read(ctx, t, addrs, "jstxn", "committed", 3*n)), tagged(n, "c1", "c2", "c3"); !slices.Equal(got, want) {
		t.Errorf("read_committed read %v, want %v", got, want)
	}
	if got, want := readValues(js.read(ctx, t, addrs, "jstxn", "uncommitted", 5*n)), tagged(n, "c1", "a1", "c2", "f1", "c3"); !slices.Equal(got, want) {
		t.Errorf("read_uncommitted read %v, want %v", got, want)
	}
}

// TestKafkajsConsumeTransformProduce: a kafkajs consumer of a group reads
// three partitions written by franz-go, and for each record a kafkajs
// transaction writes a transformed record and commits the group's offset
// with it (sendOffsets, TxnOffsetCommit). The first record is first
// transformed in a transaction that is aborted, offsets included, and a
// last aborted transaction commits offsets past the end. Afterwards the
// group's committed offsets are the input's end offsets, read_committed sees
// each transformed record once and neither aborted one, and read_uncommitted
// sees the aborted ones too.
func TestKafkajsConsumeTransformProduce(t *testing.T) {
	js := newKafkajs(t)
	c := startCluster(t, 3)
	addrs := c.Addrs()
	createTopic(t, addrs, "jsctp-in", 3, 3, nil)
	createTopic(t, addrs, "jsctp-out", 1, 3, nil)
	ctx := testCtx(t, 3*time.Minute)
	const n = 30
	cl := kgoClient(t, addrs, kgo.DefaultProduceTopic("jsctp-in"))
	var want []string
	for i := range n {
		v := "in-" + strconv.Itoa(i)
		if err := cl.ProduceSync(ctx, &kgo.Record{Key: []byte(v), Value: []byte(v)}).FirstErr(); err != nil {
			t.Fatal(err)
		}
		want = append(want, "out-"+v)
	}
	slices.Sort(want)

	lines := js.lines(ctx, t, "ctp", addrs, "jsctp-in", "jsctp-out", "jsctp-group", "jsctp-id", strconv.Itoa(n))
	done := lines[len(lines)-1]
	if done.Step != "done" || done.Count != n || done.Aborted != 2 {
		t.Fatalf("ctp ended with %+v", done)
	}
	if got, ends := committed(t, addrs, "jsctp-group", "jsctp-in"), endOffsets(t, addrs, "jsctp-in"); !reflect.DeepEqual(got, ends) {
		t.Errorf("group committed %v, want the input's end offsets %v", got, ends)
	}

	got := readValues(js.read(ctx, t, addrs, "jsctp-out", "committed", n))
	slices.Sort(got)
	if !slices.Equal(got, want) {
		t.Errorf("read_committed read %v, want %v", got, want)
	}
	all := readValues(js.read(ctx, t, addrs, "jsctp-out", "uncommitted", n+2))
	if len(all) != n+2 || !strings.HasPrefix(all[0], "x-in-") || "out-"+strings.TrimPrefix(all[0], "x-") != all[1] || all[n+1] != "x-final" {
		t.Errorf("read_uncommitted read %v, want the aborted x- record first, then the same record as out-, and x-final last", all)
	}
}
