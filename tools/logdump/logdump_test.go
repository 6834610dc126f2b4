package logdump_test

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/ktoolhq/ktool/internal/batch"
	"github.com/ktoolhq/ktool/plugins"
	"github.com/ktoolhq/ktool/plugins/codec"
	"github.com/ktoolhq/ktool/tools/cmdutil"
	"github.com/ktoolhq/ktool/tools/logdump"
)

var update = flag.Bool("update", false, "rewrite the golden files")

// Started as `__plugin serve KIND NAME`, the test binary serves a built-in
// codec, as the ktool binary does for `--records`.
func TestMain(m *testing.M) {
	if len(os.Args) == 5 && os.Args[1] == plugins.ServeCommand && os.Args[2] == "serve" {
		if err := plugins.ServeBuiltin(os.Args[3], os.Args[4], "test"); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

type rec struct {
	key, value []byte
	tsDelta    int64
	headers    []kmsg.Header
}

// testBatch writes a magic v2 record batch: records in Kafka's format,
// the records section compressed with c (nil: none), the CRC32C last.
func testBatch(t *testing.T, base int64, attrs int16, firstTS, maxTS, pid int64, epoch int16, seq int32, c codec.Codec, recs ...rec) []byte {
	t.Helper()
	var section []byte
	for i, r := range recs {
		kr := kmsg.Record{TimestampDelta64: r.tsDelta, OffsetDelta: int32(i), Key: r.key, Value: r.value, Headers: r.headers}
		kr.Length = int32(len(kr.AppendTo(nil)) - 1)
		section = kr.AppendTo(section)
	}
	if c != nil {
		out, err := c.Compress(context.Background(), [][]byte{section})
		if err != nil {
			t.Fatal(err)
		}
		section = out[0]
		attrs |= int16(c.ID())
	}
	return batch.Encode(batch.Header{
		BaseOffset: base, PartitionLeaderEpoch: 7, Attributes: attrs,
		LastOffsetDelta: int32(len(recs) - 1), FirstTimestamp: firstTS, MaxTimestamp: maxTS,
		ProducerID: pid, ProducerEpoch: epoch, BaseSequence: seq, NumRecords: int32(len(recs)),
	}, section)
}

// writeSegment writes a segment at base offset 100 with three data batches
// (uncompressed, gzip, zstd) and a transaction commit marker, and the
// indexes Kafka would write for it.
func writeSegment(t *testing.T) (dir string, positions []int64) {
	t.Helper()
	dir = t.TempDir()
	const ts = 1_700_000_000_000
	a := testBatch(t, 100, 0, ts, ts+20, 4242, 3, 0, nil,
		rec{key: []byte("order-1"), value: []byte(`{"total":12.5}`), headers: []kmsg.Header{{Key: "trace", Value: []byte("abc")}}},
		rec{key: nil, value: []byte{0x00, 0xff, 0x10}, tsDelta: 20},
		rec{key: []byte("order-2"), value: nil, tsDelta: 5},
	)
	b := testBatch(t, 103, 0x10, ts+30, ts+31, 4242, 3, 3, codec.NewGzip(),
		rec{key: []byte("k"), value: []byte("line one\nline two")},
		rec{key: []byte("k"), value: []byte(""), tsDelta: 1},
	)
	c := testBatch(t, 105, 0, ts+25, ts+25, -1, -1, -1, codec.NewZstd(),
		rec{key: []byte("late"), value: []byte("arrives with an older timestamp")},
	)
	commit := testBatch(t, 106, 0x30, ts+40, ts+40, 4242, 3, -1, nil,
		rec{key: []byte{0, 0, 0, 1}, value: []byte{0, 0, 0, 0, 0, 0}})
	log := append(append(append(append([]byte(nil), a...), b...), c...), commit...)
	positions = []int64{0, int64(len(a)), int64(len(a) + len(b)), int64(len(a) + len(b) + len(c))}
	index := make([]byte, 0, 16)
	for _, e := range [][2]uint32{{2, 0}, {4, uint32(positions[1])}} {
		index = binary.BigEndian.AppendUint32(index, e[0])
		index = binary.BigEndian.AppendUint32(index, e[1])
	}
	var timeIndex []byte
	for _, e := range []struct {
		ts  int64
		rel uint32
	}{{ts + 20, 2}, {ts + 31, 4}, {ts + 40, 6}} {
		timeIndex = binary.BigEndian.AppendUint64(timeIndex, uint64(e.ts))
		timeIndex = binary.BigEndian.AppendUint32(timeIndex, e.rel)
	}
	for name, data := range map[string][]byte{"log": log, "index": index, "timeindex": timeIndex} {
		if err := os.WriteFile(filepath.Join(dir, "00000000000000000100."+name), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir, positions
}

func run(t *testing.T, args ...string) (string, error) {
	t.Helper()
	ios, _, out, errOut := cmdutil.Test()
	cmd := logdump.NewCommand(cmdutil.NewFactory(ios, cmdutil.BuildInfo{}))
	cmd.SilenceUsage = true
	cmd.SetArgs(append([]string{"dump"}, args...))
	cmd.SetOut(out)
	cmd.SetErr(errOut)
	err := cmd.ExecuteContext(context.Background())
	return out.String(), err
}

func golden(t *testing.T, name, got string) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run with -update to create it)", err)
	}
	if got != string(want) {
		t.Errorf("output differs from %s:\n--- got\n%s\n--- want\n%s", path, got, want)
	}
}

func TestDumpGolden(t *testing.T) {
	dir, _ := writeSegment(t)
	seg := filepath.Join(dir, "00000000000000000100")
	out, err := run(t, "--records", "--verify-index", "--plugin-dir", t.TempDir(), seg+".log", seg+".index", seg+".timeindex")
	if err != nil {
		t.Fatal(err)
	}
	golden(t, "segment.golden", strings.ReplaceAll(out, dir, "DIR"))

	out, err = run(t, seg+".log")
	if err != nil {
		t.Fatal(err)
	}
	golden(t, "segment-headers.golden", strings.ReplaceAll(out, dir, "DIR"))
}

func TestDumpJSON(t *testing.T) {
	dir, positions := writeSegment(t)
	seg := filepath.Join(dir, "00000000000000000100")
	out, err := run(t, "--records", "--plugin-dir", t.TempDir(), "-o", "json", seg+".log", seg+".timeindex")
	if err != nil {
		t.Fatal(err)
	}
	var dumps []logdump.FileDump
	if err := json.Unmarshal([]byte(out), &dumps); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if len(dumps) != 2 || len(dumps[0].Batches) != 4 || len(dumps[1].TimeIndex) != 3 {
		t.Fatalf("dumps: %+v", dumps)
	}
	b := dumps[0].Batches[1]
	if b.Codec != "gzip" || !b.Transactional || b.Position != positions[1] || !b.CRCValid || b.LastOffset != 104 || b.BaseSequence != 3 {
		t.Errorf("gzip batch: %+v", b)
	}
	r := dumps[0].Batches[0].Records[1]
	if !r.Key.Null || r.Value.Hex != "00ff10" || r.Offset != 101 || r.Timestamp != 1_700_000_000_020 {
		t.Errorf("binary record: %+v", r)
	}
	if v := dumps[0].Batches[2].Records[0].Value.Text; v != "arrives with an older timestamp" {
		t.Errorf("zstd record value %q", v)
	}
	if m := dumps[0].Batches[3]; !m.Control || m.Records[0].Control != "COMMIT" {
		t.Errorf("commit marker: %+v", m)
	}
}

func TestVerifyIndexFindsMismatches(t *testing.T) {
	dir, positions := writeSegment(t)
	seg := filepath.Join(dir, "00000000000000000100")
	// Point the second offset index entry into the middle of a batch and
	// give the second time index entry a timestamp no batch has.
	idx, _ := os.ReadFile(seg + ".index")
	binary.BigEndian.PutUint32(idx[12:], uint32(positions[1]+5))
	tidx, _ := os.ReadFile(seg + ".timeindex")
	binary.BigEndian.PutUint64(tidx[12:], 1_700_000_000_099)
	if err := os.WriteFile(seg+".index", idx, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(seg+".timeindex", tidx, 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := run(t, "--verify-index", seg+".log")
	var ee *cmdutil.ExitErr
	if !errors.As(err, &ee) || ee.Code != cmdutil.ExitProblems {
		t.Fatalf("err = %v, want exit %d", err, cmdutil.ExitProblems)
	}
	for _, want := range []string{
		fmt.Sprintf("offset index: index entry 1 (offset 104) points at position %d, which is not the start of a batch", positions[1]+5),
		"time index: time index entry 1 says timestamp 1700000000099 for offset 104, but that batch's max timestamp is 1700000000031",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "Index check: ok") {
		t.Errorf("reported ok:\n%s", out)
	}
}

func TestTornAndCorruptSegment(t *testing.T) {
	dir, positions := writeSegment(t)
	seg := filepath.Join(dir, "00000000000000000100.log")
	data, _ := os.ReadFile(seg)
	data[positions[1]+40] ^= 0x01 // inside the gzip batch's header, under the CRC
	data = data[:len(data)-3]     // and tear the last batch
	if err := os.WriteFile(seg, data, 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := run(t, seg)
	var ee *cmdutil.ExitErr
	if !errors.As(err, &ee) || ee.Code != cmdutil.ExitProblems {
		t.Fatalf("err = %v, want exit %d", err, cmdutil.ExitProblems)
	}
	for _, want := range []string{"crcValid: false", "Problem: batch at offset 103 (position " + fmt.Sprint(positions[1]) + "): CRC mismatch", "Problem: torn tail: batch at position " + fmt.Sprint(positions[3])} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
}

func TestBadPaths(t *testing.T) {
	var ee *cmdutil.ExitErr
	for _, p := range []string{"segment.txt", "abc.log", "noext"} {
		if _, err := run(t, p); !errors.As(err, &ee) || ee.Code != cmdutil.ExitUsage {
			t.Errorf("%s: err = %v, want a usage error", p, err)
		}
	}
	if _, err := run(t, filepath.Join(t.TempDir(), "00000000000000000000.log")); err == nil || !strings.Contains(err.Error(), "no such file") {
		t.Errorf("missing file: err = %v", err)
	}
}

// A partition directory holds more than segments; dumping it (or every file
// in it, as a shell glob gives them) dumps the segments and skips the rest.
func TestDumpPartitionDirectory(t *testing.T) {
	dir, _ := writeSegment(t)
	for name, data := range map[string]string{
		"leader-epoch-checkpoint":          "0\n1\n0 100\n",
		"partition.metadata":               "version: 0\ntopic_id: AAAAAAAAAAAAAAAAAAAAAA\n",
		"00000000000000000100.snapshot":    "",
		"00000000000000000000.log.deleted": "",
	} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	out, err := run(t, "--verify-index", dir)
	if err != nil {
		t.Fatalf("dump of the directory: %v\n%s", err, out)
	}
	want, err := run(t, "--verify-index", filepath.Join(dir, "00000000000000000100.log"))
	if err != nil || out != want {
		t.Errorf("dump of the directory differs from the dump of its segment (err %v):\n%s\n---\n%s", err, out, want)
	}
	entries, _ := os.ReadDir(dir)
	var all []string
	for _, e := range entries {
		all = append(all, filepath.Join(dir, e.Name()))
	}
	ios, _, stdout, errOut := cmdutil.Test()
	cmd := logdump.NewCommand(cmdutil.NewFactory(ios, cmdutil.BuildInfo{}))
	cmd.SetArgs(append([]string{"dump", "--verify-index"}, all...))
	if err := cmd.ExecuteContext(context.Background()); err != nil {
		t.Fatalf("dump of every file: %v\n%s", err, errOut)
	}
	if !strings.Contains(stdout.String(), "Index check: ok") || !strings.Contains(errOut.String(), "Skipped "+filepath.Join(dir, "leader-epoch-checkpoint")) {
		t.Errorf("dump of every file:\n%s\nstderr:\n%s", stdout, errOut)
	}
	if _, err := run(t, t.TempDir()); err == nil || !strings.Contains(err.Error(), "holds no .log segment") {
		t.Errorf("empty directory: err = %v", err)
	}
}

// The group coordinator's records in __consumer_offsets, written with the
// schemas Kafka defines (kmsg's types), read back by --offsets-decoder.
func TestOffsetsDecoder(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "__consumer_offsets-3")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	commitKey := kmsg.OffsetCommitKey{Version: 1, Group: "billing", Topic: "orders", Partition: 2}
	commitVal := kmsg.OffsetCommitValue{Version: 3, Offset: 42, LeaderEpoch: 5, Metadata: "m", CommitTimestamp: 1_700_000_000_000}
	sub := kmsg.ConsumerMemberMetadata{Version: 1, Topics: []string{"orders"}}
	asg := kmsg.ConsumerMemberAssignment{Version: 1, Topics: []kmsg.ConsumerMemberAssignmentTopic{{Topic: "orders", Partitions: []int32{2, 0}}}}
	proto, leader := "range", "m-1"
	groupKey := kmsg.GroupMetadataKey{Version: 2, Group: "billing"}
	groupVal := kmsg.GroupMetadataValue{Version: 3, ProtocolType: "consumer", Generation: 4, Protocol: &proto, Leader: &leader,
		CurrentStateTimestamp: 1_700_000_000_001, Members: []kmsg.GroupMetadataValueMember{{
			MemberID: "m-1", ClientID: "c", ClientHost: "/127.0.0.1", RebalanceTimeoutMillis: 60000, SessionTimeoutMillis: 45000,
			Subscription: sub.AppendTo(nil), Assignment: asg.AppendTo(nil)}}}
	ts := int64(1_700_000_000_000)
	data := append(testBatch(t, 0, 0, ts, ts, -1, -1, -1, nil,
		rec{key: commitKey.AppendTo(nil), value: commitVal.AppendTo(nil)},
		rec{key: groupKey.AppendTo(nil), value: groupVal.AppendTo(nil)},
		rec{key: commitKey.AppendTo(nil), value: nil},
	), testBatch(t, 3, 0, ts, ts, -1, -1, -1, nil, rec{key: []byte{0, 9, 1}, value: []byte("x")})...)
	if err := os.WriteFile(filepath.Join(dir, "00000000000000000000.log"), data, 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := run(t, "--offsets-decoder", dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		`| offset: 0 CreateTime: 1700000000000 offset_commit key: {"version":1,"group":"billing","topic":"orders","partition":2} payload: {"version":3,"offset":42,"leader_epoch":5,"metadata":"m","commit_timestamp":1700000000000}`,
		`group_metadata key: {"version":2,"group":"billing"} payload: {"version":3,"protocol_type":"consumer","generation":4,"protocol":"range","leader":"m-1"`,
		`"subscription":["orders"],"assignment":["orders:0,2"]`,
		`| offset: 2 CreateTime: 1700000000000 offset_commit key: {"version":1,"group":"billing","topic":"orders","partition":2} payload: null`,
		`| offset: 3 CreateTime: 1700000000000 unknown key: null payload: null error: "key version 9 is neither an offset (0, 1) nor group metadata (2)"`,
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %s:\n%s", want, out)
		}
	}
	js, err := run(t, "--offsets-decoder", "-o", "json", dir)
	if err != nil {
		t.Fatal(err)
	}
	var dumps []logdump.FileDump
	if err := json.Unmarshal([]byte(js), &dumps); err != nil {
		t.Fatal(err)
	}
	if d := dumps[0].Batches[0].Records[0].Decoded; d == nil || d.Kind != "offset_commit" {
		t.Errorf("JSON record 0 decoded as %+v", d)
	}
}

// The transaction coordinator's records in __transaction_state, written with
// Kafka's schemas (kmsg's types), read back by --transaction-decoder and its
// kafka-dump-log.sh name --transaction-log-decoder.
func TestTransactionDecoder(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "__transaction_state-1")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	key := kmsg.TxnMetadataKey{Version: 0, TransactionalID: "etl-1"}
	empty := kmsg.TxnMetadataValue{Version: 0, ProducerID: 4000, ProducerEpoch: 2, TimeoutMillis: 60000,
		State: kmsg.TransactionStateEmpty, LastUpdateTimestamp: 1_700_000_000_000, StartTimestamp: -1}
	ongoing := kmsg.TxnMetadataValue{Version: 0, ProducerID: 4000, ProducerEpoch: 2, TimeoutMillis: 60000,
		State: kmsg.TransactionStateOngoing, Topics: []kmsg.TxnMetadataValueTopic{{Topic: "orders", Partitions: []int32{0, 3}}},
		LastUpdateTimestamp: 1_700_000_000_005, StartTimestamp: 1_700_000_000_004}
	ts := int64(1_700_000_000_000)
	data := append(testBatch(t, 0, 0, ts, ts, -1, -1, -1, nil,
		rec{key: key.AppendTo(nil), value: empty.AppendTo(nil)},
		rec{key: key.AppendTo(nil), value: ongoing.AppendTo(nil)},
		rec{key: key.AppendTo(nil), value: nil},
	), testBatch(t, 3, 0, ts, ts, -1, -1, -1, nil, rec{key: []byte{0, 1, 0}, value: []byte("x")})...)
	if err := os.WriteFile(filepath.Join(dir, "00000000000000000000.log"), data, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, flag := range []string{"--transaction-decoder", "--transaction-log-decoder"} {
		out, err := run(t, flag, dir)
		if err != nil {
			t.Fatal(err)
		}
		for _, want := range []string{
			`| offset: 0 CreateTime: 1700000000000 transaction_metadata key: {"version":0,"transactional_id":"etl-1"} payload: {"version":0,"producer_id":4000,"producer_epoch":2,"timeout_ms":60000,"state":"Empty","partitions":[],"last_update_timestamp":1700000000000,"start_timestamp":-1}`,
			`"state":"Ongoing","partitions":["orders-0","orders-3"],"last_update_timestamp":1700000000005,"start_timestamp":1700000000004}`,
			`| offset: 2 CreateTime: 1700000000000 transaction_metadata key: {"version":0,"transactional_id":"etl-1"} payload: null`,
			`| offset: 3 CreateTime: 1700000000000 unknown key: null payload: null error: "key version 1 is not a transaction log key"`,
		} {
			if !strings.Contains(out, want) {
				t.Errorf("%s output lacks %s:\n%s", flag, want, out)
			}
		}
	}
	if _, err := run(t, "--transaction-decoder", "--offsets-decoder", dir); err == nil {
		t.Error("both decoders accepted")
	}
}

// TestDumpTxnIndex reads an aborted transaction index in Kafka's format.
func TestDumpTxnIndex(t *testing.T) {
	dir := t.TempDir()
	var b []byte
	for _, e := range [][4]int64{{7, 3, 9, 10}, {8, 11, 12, 11}} {
		b = binary.BigEndian.AppendUint16(b, 0)
		for _, v := range e {
			b = binary.BigEndian.AppendUint64(b, uint64(v))
		}
	}
	path := filepath.Join(dir, "00000000000000000000.txnindex")
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := run(t, path)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"version: 0 producerId: 7 firstOffset: 3 lastOffset: 9 lastStableOffset: 10\n",
		"version: 0 producerId: 8 firstOffset: 11 lastOffset: 12 lastStableOffset: 11\n",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("dump lacks %q:\n%s", want, out)
		}
	}
	out, err = run(t, path, "-o", "json")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out, `"aborted_transactions"`) || !strings.Contains(out, `"last_stable_offset": 11`) {
		t.Errorf("json dump:\n%s", out)
	}
	if err := os.WriteFile(path, b[:40], 0o644); err != nil {
		t.Fatal(err)
	}
	if out, err := run(t, path); err == nil || !strings.Contains(out, "6 stray bytes") {
		t.Errorf("torn index: %v\n%s", err, out)
	}
}

// TestDumpDeleteHorizon: batches the log cleaner stamped with a delete
// horizon (KIP-534: attribute bit 6, the first timestamp field holding it)
// show it, and their records keep their own timestamps.
func TestDumpDeleteHorizon(t *testing.T) {
	dir := t.TempDir()
	const ts, horizon = 1_700_000_000_000, 1_700_086_400_000
	tomb := testBatch(t, 0, batch.AttrDeleteHorizon, horizon, ts, -1, -1, -1, nil,
		rec{key: []byte("gone"), value: nil, tsDelta: ts - horizon})
	marker := testBatch(t, 1, 0x30|batch.AttrDeleteHorizon, horizon, ts, 4242, 0, -1, nil,
		rec{key: []byte{0, 0, 0, 0}, value: []byte{0, 0, 0, 0, 0, 5}, tsDelta: ts - horizon})
	plainBatch := testBatch(t, 2, 0, ts, ts, -1, -1, -1, nil, rec{key: []byte("k"), value: []byte("v")})
	seg := filepath.Join(dir, "00000000000000000000.log")
	if err := os.WriteFile(seg, append(append(append([]byte(nil), tomb...), marker...), plainBatch...), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := run(t, "--records", "--plugin-dir", t.TempDir(), seg)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(out, "\n")
	want := fmt.Sprintf("deleteHorizonMs: %d ", int64(horizon))
	var batches []string
	for _, l := range lines {
		if strings.HasPrefix(l, "baseOffset:") {
			batches = append(batches, l)
		}
	}
	if len(batches) != 3 || !strings.Contains(batches[0], want) || !strings.Contains(batches[1], want) || strings.Contains(batches[2], "deleteHorizonMs") {
		t.Fatalf("want %q on the first two batches only:\n%s", want, out)
	}
	if !strings.Contains(out, fmt.Sprintf("| offset: 1 CreateTime: %d endTxnMarker: ABORT coordinatorEpoch: 5", int64(ts))) {
		t.Errorf("the stamped marker's record lost its timestamp:\n%s", out)
	}
	out, err = run(t, "--records", "--plugin-dir", t.TempDir(), "-o", "json", seg)
	if err != nil {
		t.Fatal(err)
	}
	var dumps []logdump.FileDump
	if err := json.Unmarshal([]byte(out), &dumps); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	bs := dumps[0].Batches
	if bs[0].DeleteHorizonMs == nil || *bs[0].DeleteHorizonMs != horizon || bs[2].DeleteHorizonMs != nil || bs[0].Records[0].Timestamp != ts {
		t.Errorf("json batches: %+v", bs)
	}
}
