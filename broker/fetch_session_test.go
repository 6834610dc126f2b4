package broker

import (
	"errors"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/ktoolhq/ktool/broker/replica"
)

func fetchInfo(hw int64) replica.ReadInfo {
	return replica.ReadInfo{HighWatermark: hw, LastStableOffset: hw}
}

// fetchReq builds a v12 fetch with session id and epoch over partitions of
// topic t at the given fetch offsets, forgetting forget.
func fetchReq(id, epoch int32, offsets map[int32]int64, forget ...int32) *kmsg.FetchRequest {
	req := kmsg.NewPtrFetchRequest()
	req.SetVersion(12)
	req.ReplicaID = -1
	req.SessionID, req.SessionEpoch = id, epoch
	if len(offsets) > 0 {
		t := kmsg.NewFetchRequestTopic()
		t.Topic = "t"
		for p := range int32(len(offsets) + 100) {
			if off, ok := offsets[p]; ok {
				rp := kmsg.NewFetchRequestTopicPartition()
				rp.Partition, rp.FetchOffset, rp.PartitionMaxBytes = p, off, 1<<20
				t.Partitions = append(t.Partitions, rp)
			}
		}
		req.Topics = append(req.Topics, t)
	}
	if len(forget) > 0 {
		f := kmsg.NewFetchRequestForgottenTopic()
		f.Topic, f.Partitions = "t", forget
		req.ForgottenTopics = append(req.ForgottenTopics, f)
	}
	return req
}

// read lists partition:offset of what a fetch context reads.
func read(fc *fetchContext) map[int32]int64 {
	out := map[int32]int64{}
	for _, t := range fc.req.Topics {
		for _, p := range t.Partitions {
			out[p.Partition] = p.FetchOffset
		}
	}
	return out
}

func parts(hw map[int32]int64) []fetchPart {
	var out []fetchPart
	for p := range int32(100) {
		if v, ok := hw[p]; ok {
			out = append(out, fetchPart{topic: "t", partition: p, info: fetchInfo(v)})
		}
	}
	return out
}

func TestFetchSessionFullAndIncremental(t *testing.T) {
	c := newFetchSessionCache(10, time.Minute)
	// Sessionless full fetch: no session.
	fc, err := c.begin(fetchReq(0, -1, map[int32]int64{0: 5}), "u/-1", false)
	if err != nil || fc.id() != 0 {
		t.Fatalf("sessionless: id %d err %v", fc.id(), err)
	}
	// Full fetch opening a session: every partition answered.
	fc, err = c.begin(fetchReq(0, 0, map[int32]int64{0: 5, 1: 7, 2: 9}), "u/-1", false)
	if err != nil || fc.id() == 0 {
		t.Fatalf("open: id %d err %v", fc.id(), err)
	}
	id := fc.id()
	if got := fc.answer(parts(map[int32]int64{0: 10, 1: 10, 2: 10})); len(got) != 3 {
		t.Fatalf("full answer lists %d partitions, want 3", len(got))
	}
	// Incremental: partition 1 moved on, 2 forgotten, 3 added; the read covers
	// the whole session at its offsets.
	fc, err = c.begin(fetchReq(id, 1, map[int32]int64{1: 8, 3: 0}, 2), "u/-1", false)
	if err != nil {
		t.Fatal(err)
	}
	if got := read(fc); len(got) != 3 || got[0] != 5 || got[1] != 8 || got[3] != 0 {
		t.Fatalf("incremental reads %v", got)
	}
	// Only partitions with news are answered: 0 unchanged, 1 has records, 3 is new.
	ps := parts(map[int32]int64{0: 10, 1: 10, 3: 0})
	ps[1].region.Len = 100
	got := fc.answer(ps)
	if len(got) != 2 || got[0].partition != 1 || got[1].partition != 3 {
		t.Fatalf("incremental answer %v", got)
	}
	// Next epoch: a high watermark move and an error are news, the rest not.
	fc, err = c.begin(fetchReq(id, 2, nil), "u/-1", false)
	if err != nil {
		t.Fatal(err)
	}
	ps = parts(map[int32]int64{0: 11, 1: 10, 3: 0})
	ps[2].err = kerr.NotLeaderForPartition
	if got := fc.answer(ps); len(got) != 2 || got[0].partition != 0 || got[1].partition != 3 {
		t.Fatalf("incremental answer %v", got)
	}
	// A last stable offset that moves (a transaction ended) is news too.
	fc, err = c.begin(fetchReq(id, 3, nil), "u/-1", false)
	if err != nil {
		t.Fatal(err)
	}
	ps = parts(map[int32]int64{0: 11, 1: 10, 3: 0})
	ps[1].info.LastStableOffset = 4
	if got := fc.answer(ps); len(got) != 1 || got[0].partition != 1 {
		t.Fatalf("incremental answer after an LSO move %v", got)
	}

	// Epoch errors: a replayed epoch, and a session id nobody opened.
	if _, err := c.begin(fetchReq(id, 3, nil), "u/-1", false); !errors.Is(err, kerr.InvalidFetchSessionEpoch) {
		t.Fatalf("replayed epoch: %v", err)
	}
	if _, err := c.begin(fetchReq(id+1, 1, nil), "u/-1", false); !errors.Is(err, kerr.FetchSessionIDNotFound) {
		t.Fatalf("unknown session: %v", err)
	}
	// Another principal (or replica) cannot use it.
	if _, err := c.begin(fetchReq(id, 4, nil), "mallory/-1", false); !errors.Is(err, kerr.FetchSessionIDNotFound) {
		t.Fatalf("other principal: %v", err)
	}
	// Closing with epoch -1: gone.
	if fc, err := c.begin(fetchReq(id, -1, map[int32]int64{0: 5}), "u/-1", false); err != nil || fc.id() != 0 {
		t.Fatalf("close: id %d err %v", fc.id(), err)
	}
	if _, err := c.begin(fetchReq(id, 4, nil), "u/-1", false); !errors.Is(err, kerr.FetchSessionIDNotFound) {
		t.Fatalf("closed session: %v", err)
	}
	if len(c.sessions) != 0 || c.parts != 0 {
		t.Fatalf("cache holds %d sessions, %d partitions", len(c.sessions), c.parts)
	}
}

func TestFetchSessionEviction(t *testing.T) {
	now := time.Unix(1000, 0)
	c := newFetchSessionCache(2, time.Minute)
	c.now = func() time.Time { return now }
	open := func(owner string, follower bool, n int) int32 {
		t.Helper()
		offs := map[int32]int64{}
		for p := range int32(n) {
			offs[p] = 0
		}
		req := fetchReq(0, 0, offs)
		if follower {
			req.ReplicaID = 2
		}
		fc, err := c.begin(req, owner, follower)
		if err != nil {
			t.Fatal(err)
		}
		return fc.id()
	}
	a := open("a", false, 3)
	b := open("b", false, 5)
	if a == 0 || b == 0 {
		t.Fatal("no session")
	}
	// Full, both young: a bigger consumer session may not evict young ones.
	if id := open("c", false, 50); id != 0 {
		t.Fatal("a young session was evicted by a consumer's")
	}
	// A follower's session evicts the smallest consumer session, however young.
	f := open("f", true, 1)
	if f == 0 || c.sessions[a] != nil || c.sessions[b] == nil {
		t.Fatalf("follower session %d; a kept %v, b kept %v", f, c.sessions[a] != nil, c.sessions[b] != nil)
	}
	// Past the eviction time, touched sessions stay; the idle one goes first.
	now = now.Add(30 * time.Second)
	if _, err := c.begin(fetchReq(f, 1, nil), "f", true); err != nil {
		t.Fatal(err)
	}
	now = now.Add(45 * time.Second)
	if id := open("d", false, 1); id == 0 || c.sessions[b] != nil || c.sessions[f] == nil {
		t.Fatalf("stale consumer session not evicted first: d %d, b kept %v", id, c.sessions[b] != nil)
	}
}

// The cache bounds the partitions over all sessions: a client cannot grow
// its session (or open more) past it; it loses the session and fetches
// without one.
func TestFetchSessionBounded(t *testing.T) {
	c := newFetchSessionCache(1000, time.Minute)
	c.maxParts = 10
	fc, err := c.begin(fetchReq(0, 0, map[int32]int64{0: 0, 1: 0, 2: 0, 3: 0, 4: 0, 5: 0}), "u/-1", false)
	if err != nil || fc.id() == 0 {
		t.Fatal(err)
	}
	id := fc.id()
	if fc, _ := c.begin(fetchReq(0, 0, map[int32]int64{0: 0, 1: 0, 2: 0, 3: 0, 4: 0, 5: 0}), "v/-1", false); fc.id() != 0 {
		t.Fatal("a second session over the bound was opened")
	}
	grow := map[int32]int64{}
	for p := range int32(20) {
		grow[p] = 0
	}
	if _, err := c.begin(fetchReq(id, 1, grow), "u/-1", false); !errors.Is(err, kerr.FetchSessionIDNotFound) {
		t.Fatalf("growing past the bound: %v", err)
	}
	if len(c.sessions) != 0 || c.parts != 0 {
		t.Fatalf("cache holds %d sessions, %d partitions", len(c.sessions), c.parts)
	}
	// Slots: 0 turns sessions off.
	off := newFetchSessionCache(0, time.Minute)
	if fc, _ := off.begin(fetchReq(0, 0, map[int32]int64{0: 0}), "u/-1", false); fc.id() != 0 {
		t.Fatal("a session with no slots")
	}
}
