package group

import (
	"bytes"
	"context"
	"encoding/binary"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/ktoolhq/ktool/internal/batch"
	"github.com/ktoolhq/ktool/plugins/codec"
)

// Expected bytes are assembled field by field from the schemas Kafka documents
// for __consumer_offsets (GroupMetadataManager, Kafka 2.8).

func i16(b []byte, v int16) []byte { return binary.BigEndian.AppendUint16(b, uint16(v)) }
func i32(b []byte, v int32) []byte { return binary.BigEndian.AppendUint32(b, uint32(v)) }
func i64(b []byte, v int64) []byte { return binary.BigEndian.AppendUint64(b, uint64(v)) }
func str(b []byte, s string) []byte {
	return append(i16(b, int16(len(s))), s...)
}
func nullStr(b []byte, s *string) []byte {
	if s == nil {
		return i16(b, -1)
	}
	return str(b, *s)
}
func byts(b []byte, v []byte) []byte { return append(i32(b, int32(len(v))), v...) }

func TestOffsetKeyBytes(t *testing.T) {
	// key version 1: group string, topic string, partition int32
	want := str(str(i16(nil, 1), "g1"), "orders")
	want = i32(want, 7)
	if got := offsetKey("g1", topicPartition{"orders", 7}); !bytes.Equal(got, want) {
		t.Fatalf("offset key\n got %x\nwant %x", got, want)
	}
}

func TestOffsetValueBytes(t *testing.T) {
	// value version 3: offset int64, leader_epoch int32, metadata string, commit_timestamp int64
	want := i64(i16(nil, 3), 42)
	want = i32(want, 5)
	want = str(want, "meta")
	want = i64(want, 1700000000000)
	got := offsetValue(offsetEntry{offset: 42, leaderEpoch: 5, metadata: "meta", commitAt: 1700000000000, expireAt: -1})
	if !bytes.Equal(got, want) {
		t.Fatalf("offset value v3\n got %x\nwant %x", got, want)
	}
	// value version 1 (explicit expiry): offset, metadata, commit_timestamp, expire_timestamp
	want = i64(i16(nil, 1), 42)
	want = str(want, "")
	want = i64(want, 1000)
	want = i64(want, 2000)
	got = offsetValue(offsetEntry{offset: 42, leaderEpoch: 5, commitAt: 1000, expireAt: 2000})
	if !bytes.Equal(got, want) {
		t.Fatalf("offset value v1\n got %x\nwant %x", got, want)
	}
}

func TestGroupKeyAndValueBytes(t *testing.T) {
	if got, want := groupKey("g1"), str(i16(nil, 2), "g1"); !bytes.Equal(got, want) {
		t.Fatalf("group key\n got %x\nwant %x", got, want)
	}
	inst := "i-1"
	g := newGroup("g1", time.UnixMilli(1234))
	g.add(&member{id: "m1", instanceID: &inst, clientID: "c", clientHost: "/10.0.0.1",
		rebalanceTimeout: 60 * time.Second, sessionTimeout: 10 * time.Second, protocolType: "consumer",
		protocols: []protocol{{"range", []byte{1, 2}}}}, nil)
	g.protocol, g.generation = "range", 3
	got := g.metadataValue(map[string][]byte{"m1": {9}})

	// value version 3: protocol_type string, generation int32, protocol nullable
	// string, leader nullable string, current_state_timestamp int64, members array
	// of (member_id, group_instance_id nullable, client_id, client_host,
	// rebalance_timeout int32, session_timeout int32, subscription bytes, assignment bytes)
	proto, leader := "range", "m1"
	want := str(i16(nil, 3), "consumer")
	want = i32(want, 3)
	want = nullStr(want, &proto)
	want = nullStr(want, &leader)
	want = i64(want, 1234)
	want = i32(want, 1)
	want = str(want, "m1")
	want = nullStr(want, &inst)
	want = str(want, "c")
	want = str(want, "/10.0.0.1")
	want = i32(want, 60000)
	want = i32(want, 10000)
	want = byts(want, []byte{1, 2})
	want = byts(want, []byte{9})
	if !bytes.Equal(got, want) {
		t.Fatalf("group value\n got %x\nwant %x", got, want)
	}

	empty := newGroup("g2", time.UnixMilli(5))
	empty.protocolType, empty.generation = "consumer", 4
	want = str(i16(nil, 3), "consumer")
	want = i32(want, 4)
	want = nullStr(want, nil)
	want = nullStr(want, nil)
	want = i64(want, 5)
	want = i32(want, 0)
	if got := empty.metadataValue(nil); !bytes.Equal(got, want) {
		t.Fatalf("empty group value\n got %x\nwant %x", got, want)
	}
}

func TestBatchRoundTrip(t *testing.T) {
	recs := []record{
		{offsetKey("g", topicPartition{"t", 0}), offsetValue(offsetEntry{offset: 1, leaderEpoch: -1, commitAt: 9, expireAt: -1})},
		{groupKey("g"), nil},
	}
	b := buildBatch(recs, time.UnixMilli(777))
	var rb kmsg.RecordBatch
	if err := rb.ReadFrom(b); err != nil {
		t.Fatal(err)
	}
	if rb.Magic != 2 || rb.NumRecords != 2 || rb.LastOffsetDelta != 1 || rb.ProducerID != -1 ||
		rb.Attributes != 0 || rb.FirstTimestamp != 777 || int(rb.Length) != len(b)-12 {
		t.Fatalf("batch header %+v", rb)
	}
	var got []record
	var offs []int64
	err := readBatch(context.Background(), nil, b, func(o int64, k, v []byte) error {
		got = append(got, record{k, v})
		offs = append(offs, o)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || !bytes.Equal(got[0].key, recs[0].key) || !bytes.Equal(got[0].value, recs[0].value) ||
		!bytes.Equal(got[1].key, recs[1].key) || got[1].value != nil || offs[1] != 1 {
		t.Fatalf("records back: %v at %v", got, offs)
	}
	b[len(b)-1] ^= 1
	if err := readBatch(context.Background(), nil, b, func(int64, []byte, []byte) error { return nil }); err == nil {
		t.Fatal("corrupt batch read without error")
	}
}

func TestParseRecordBadInput(t *testing.T) {
	for _, tc := range []struct {
		name       string
		key, value []byte
	}{
		{"short key", []byte{0}, nil},
		{"truncated offset key", []byte{0, 1, 0, 5, 'a'}, nil},
		{"truncated offset value", offsetKey("g", topicPartition{"t", 0}), []byte{0, 3, 1}},
		{"truncated group value", groupKey("g"), []byte{0, 3, 0}},
	} {
		if _, err := parseRecord(tc.key, tc.value); err == nil {
			t.Errorf("%s: no error", tc.name)
		}
	}
	if _, err := parseRecord([]byte{0, 9, 1, 2}, []byte{1}); err == nil {
		t.Error("unknown key version: no error")
	}
}

func TestPartitionFor(t *testing.T) {
	for _, tc := range []struct {
		group string
		n     int32
		want  int32
	}{
		{"hello", 50, 99162322 % 50},                  // "hello".hashCode() == 99162322
		{"polygenelubricants", 50, 0},                 // hashCode is Integer.MIN_VALUE: Utils.abs gives 0
		{"\U0001F600", 50, (0xD83D*31 + 0xDE00) % 50}, // hashed as two UTF-16 units
		{"", 50, 0},
		{"Aa", 7, 2112 % 7}, // "Aa" and "BB" collide in Java
		{"BB", 7, 2112 % 7},
	} {
		if got := partitionFor(tc.group, tc.n); got != tc.want {
			t.Errorf("partitionFor(%q, %d) = %d, want %d", tc.group, tc.n, got, tc.want)
		}
	}
	// a hash that overflows to a negative int
	h := int32(0)
	for _, r := range "zzzzzzzz" {
		h = 31*h + r
	}
	if h >= 0 {
		t.Fatal("test string does not hash negative")
	}
	if got := partitionFor("zzzzzzzz", 50); got != (-h)%50 {
		t.Fatalf("negative hash: got %d want %d", got, (-h)%50)
	}
}

// TestReadCompressedBatch: a gzip batch in __consumer_offsets (Kafka writes
// them with offsets.topic.compression.codec) is read through the codecs the
// coordinator is given, and refused without them.
func TestReadCompressedBatch(t *testing.T) {
	recs := []record{{groupKey("g1"), []byte("v1")}, {groupKey("g2"), nil}}
	plain := buildBatch(recs, time.UnixMilli(5))
	h, err := batch.ParseHeader(plain)
	if err != nil {
		t.Fatal(err)
	}
	gz := codec.NewGzip()
	sec, err := gz.Compress(context.Background(), [][]byte{plain[batch.HeaderSize:]})
	if err != nil {
		t.Fatal(err)
	}
	h.Attributes |= int16(codec.IDGzip)
	b := batch.Encode(h, sec[0])
	var got []record
	err = readBatch(context.Background(), codec.NewSet(gz), b, func(_ int64, k, v []byte) error {
		got = append(got, record{k, v})
		return nil
	})
	if err != nil || len(got) != 2 || string(got[0].value) != "v1" || got[1].value != nil {
		t.Fatalf("read %v, %v", got, err)
	}
	if err := readBatch(context.Background(), nil, b, func(int64, []byte, []byte) error { return nil }); err == nil {
		t.Fatal("a gzip batch read without codecs")
	}
}
