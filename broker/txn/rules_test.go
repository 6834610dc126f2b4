package txn

import (
	"errors"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
)

func fresh() Metadata { return newMetadata("t", 100, 60000, 1) }

func TestPlanInitEpochs(t *testing.T) {
	m := fresh()
	// A new transactional id starts at epoch 0; each InitProducerId bumps it.
	for want := int16(0); want < 3; want++ {
		p, err := planInit(m, InitRequest{TimeoutMs: 1000, ProducerID: -1, ProducerEpoch: -1}, 2)
		if err != nil || p.abort || p.rotate || p.next.Epoch != want || p.next.ProducerID != 100 || p.next.State != Empty {
			t.Fatalf("init %d: %+v %v", want, p, err)
		}
		m = p.next
	}
	// KIP-360: the producer bumps its own epoch; a retry of that bump gets the same answer.
	p, err := planInit(m, InitRequest{TimeoutMs: 1000, ProducerID: 100, ProducerEpoch: 2}, 3)
	if err != nil || p.next.Epoch != 3 || p.next.LastEpoch != 2 {
		t.Fatalf("bump: %+v %v", p, err)
	}
	m = p.next
	p, err = planInit(m, InitRequest{TimeoutMs: 1000, ProducerID: 100, ProducerEpoch: 2}, 4)
	if err != nil || p.next.Epoch != 3 {
		t.Fatalf("retried bump: %+v %v", p, err)
	}
	// An older epoch that is not the last one is fenced; so is another producer id.
	if _, err := planInit(m, InitRequest{TimeoutMs: 1000, ProducerID: 100, ProducerEpoch: 1}, 5); !errors.Is(err, kerr.ProducerFenced) {
		t.Fatalf("stale epoch: %v", err)
	}
	if _, err := planInit(m, InitRequest{TimeoutMs: 1000, ProducerID: 7, ProducerEpoch: 3}, 5); !errors.Is(err, kerr.ProducerFenced) {
		t.Fatalf("other producer id: %v", err)
	}
}

func TestPlanInitOngoingAbortsAndFences(t *testing.T) {
	m := fresh()
	m.Epoch = 4
	m, _, _ = planAdd(m, 100, 4, []TP{{"a", 0}}, 10)
	p, err := planInit(m, InitRequest{TimeoutMs: 1000, ProducerID: -1, ProducerEpoch: -1}, 11)
	if err != nil || !p.abort || p.next.State != PrepareAbort || p.next.Epoch != 5 || len(p.next.Partitions) != 1 {
		t.Fatalf("init over an ongoing transaction: %+v %v", p, err)
	}
	// While it is being aborted, InitProducerId and EndTxn are told to retry.
	if _, err := planInit(p.next, InitRequest{TimeoutMs: 1000, ProducerID: -1, ProducerEpoch: -1}, 12); !errors.Is(err, kerr.ConcurrentTransactions) {
		t.Fatalf("init during prepare: %v", err)
	}
	// The fenced producer's own EndTxn is refused.
	if _, _, err := planEnd(p.next, 100, 4, true, true, 12); !errors.Is(err, kerr.ProducerFenced) {
		t.Fatalf("fenced commit: %v", err)
	}
}

func TestPlanInitEpochExhaustion(t *testing.T) {
	m := fresh()
	m.Epoch = maxEpoch - 1
	p, err := planInit(m, InitRequest{TimeoutMs: 1000, ProducerID: -1, ProducerEpoch: -1}, 2)
	if err != nil || !p.rotate || p.next.Epoch != 0 || p.next.LastProducerID != 100 {
		t.Fatalf("exhausted epoch: %+v %v", p, err)
	}
	// KIP-360 bump at an exhausted epoch: new id, and the old (id, epoch) may retry.
	p, err = planInit(m, InitRequest{TimeoutMs: 1000, ProducerID: 100, ProducerEpoch: maxEpoch - 1}, 2)
	if err != nil || !p.rotate || p.next.LastEpoch != maxEpoch-1 {
		t.Fatalf("exhausted bump: %+v %v", p, err)
	}
	n := p.next
	n.ProducerID = 200
	p, err = planInit(n, InitRequest{TimeoutMs: 1000, ProducerID: 100, ProducerEpoch: maxEpoch - 1}, 3)
	if err != nil || p.rotate || p.next.ProducerID != 200 || p.next.Epoch != 0 {
		t.Fatalf("retry after rotation: %+v %v", p, err)
	}
}

func TestPlanAddAndVerify(t *testing.T) {
	m := fresh()
	m.Epoch = 0
	if _, _, err := planAdd(m, 101, 0, []TP{{"a", 0}}, 5); !errors.Is(err, kerr.InvalidProducerIDMapping) {
		t.Fatalf("wrong id: %v", err)
	}
	if _, _, err := planAdd(m, 100, 1, []TP{{"a", 0}}, 5); !errors.Is(err, kerr.ProducerFenced) {
		t.Fatalf("wrong epoch: %v", err)
	}
	n, write, err := planAdd(m, 100, 0, []TP{{"b", 1}, {"a", 0}, {"b", 1}}, 5)
	if err != nil || !write || n.State != Ongoing || n.StartMs != 5 || len(n.Partitions) != 2 || n.Partitions[0] != (TP{"a", 0}) {
		t.Fatalf("add: %+v %v %v", n, write, err)
	}
	if _, write, err := planAdd(n, 100, 0, []TP{{"a", 0}}, 6); err != nil || write {
		t.Fatalf("adding again should write nothing: %v %v", write, err)
	}
	n2, write, err := planAdd(n, 100, 0, []TP{{"c", 0}}, 7)
	if err != nil || !write || n2.StartMs != 5 || len(n2.Partitions) != 3 || len(n.Partitions) != 2 {
		t.Fatalf("add more: %+v %v %v (old %+v)", n2, write, err, n)
	}
	missing, err := verify(n2, 100, 0, []TP{{"a", 0}, {"z", 0}})
	if err != nil || len(missing) != 1 || missing[0] != (TP{"z", 0}) {
		t.Fatalf("verify: %v %v", missing, err)
	}
	if _, err := verify(n2, 100, 1, []TP{{"a", 0}}); !errors.Is(err, kerr.ProducerFenced) {
		t.Fatalf("verify stale epoch: %v", err)
	}
	// No transaction ongoing: every partition is missing (a late batch cannot start one).
	if missing, err := verify(m, 100, 0, []TP{{"a", 0}}); err != nil || len(missing) != 1 {
		t.Fatalf("verify with none ongoing: %v %v", missing, err)
	}
}

func TestPlanEnd(t *testing.T) {
	m := fresh()
	m.Epoch = 0
	if _, _, err := planEnd(m, 100, 0, true, true, 1); !errors.Is(err, kerr.InvalidTxnState) {
		t.Fatalf("end of nothing: %v", err)
	}
	o, _, _ := planAdd(m, 100, 0, []TP{{"a", 0}}, 1)
	if _, _, err := planEnd(o, 9, 0, true, true, 2); !errors.Is(err, kerr.InvalidProducerIDMapping) {
		t.Fatalf("wrong id: %v", err)
	}
	if _, _, err := planEnd(o, 100, 1, true, true, 2); !errors.Is(err, kerr.ProducerFenced) {
		t.Fatalf("client with a newer epoch: %v", err)
	}
	p, done, err := planEnd(o, 100, 0, true, true, 2)
	if err != nil || done || p.State != PrepareCommit || len(p.Partitions) != 1 {
		t.Fatalf("commit: %+v %v %v", p, done, err)
	}
	if _, _, err := planEnd(p, 100, 0, true, true, 3); !errors.Is(err, kerr.ConcurrentTransactions) {
		t.Fatalf("commit during prepare: %v", err)
	}
	if _, _, err := planEnd(p, 100, 0, false, true, 3); !errors.Is(err, kerr.InvalidTxnState) {
		t.Fatalf("abort during prepare commit: %v", err)
	}
	c := complete(p, 4)
	if c.State != CompleteCommit || c.Partitions != nil || c.StartMs != 1 {
		t.Fatalf("complete: %+v", c)
	}
	if _, done, err := planEnd(c, 100, 0, true, true, 5); err != nil || !done {
		t.Fatalf("retried commit: %v %v", done, err)
	}
	if _, _, err := planEnd(c, 100, 0, false, true, 5); !errors.Is(err, kerr.InvalidTxnState) {
		t.Fatalf("abort after commit: %v", err)
	}
}

func TestTimeoutAndExpiry(t *testing.T) {
	m := fresh()
	m.Epoch, m.TimeoutMs = 3, 100
	o, _, _ := planAdd(m, 100, 3, []TP{{"a", 0}}, 1000)
	if timedOut(o, 1100) || !timedOut(o, 1101) {
		t.Fatal("timeout boundary")
	}
	a := planTimeoutAbort(o, 1101)
	if a.State != PrepareAbort || a.Epoch != 4 {
		t.Fatalf("timeout abort: %+v", a)
	}
	if _, _, err := planEnd(a, 100, 3, true, true, 1102); !errors.Is(err, kerr.ProducerFenced) {
		t.Fatalf("commit by the timed-out producer: %v", err)
	}
	o.Epoch = maxEpoch
	if a := planTimeoutAbort(o, 1101); a.Epoch != maxEpoch {
		t.Fatalf("exhausted epoch bumped: %+v", a)
	}
	c := complete(a, 2000)
	if expired(o, 1e12, 10) || expired(c, 2009, 10) || !expired(c, 2010, 10) {
		t.Fatal("expiry: only idle ids past transactional.id.expiration.ms")
	}
}

func TestRecordsRoundTrip(t *testing.T) {
	m := fresh()
	m.Epoch = 7
	o, _, _ := planAdd(m, 100, 7, []TP{{"b", 2}, {"a", 1}, {"b", 0}}, 42)
	for _, in := range []Metadata{m, o, complete(o, 50)} {
		id, err := DecodeKey(EncodeKey(in.ID))
		if err != nil || id != "t" {
			t.Fatalf("key: %q %v", id, err)
		}
		out, err := DecodeValue(id, EncodeValue(in))
		if err != nil {
			t.Fatal(err)
		}
		in.LastProducerID, in.LastEpoch = -1, noEpoch
		if out.ProducerID != in.ProducerID || out.Epoch != in.Epoch || out.State != in.State || out.TimeoutMs != in.TimeoutMs ||
			out.StartMs != in.StartMs || out.UpdateMs != in.UpdateMs || len(out.Partitions) != len(in.Partitions) {
			t.Fatalf("value: %+v, want %+v", out, in)
		}
		for i := range in.Partitions {
			if out.Partitions[i] != in.Partitions[i] {
				t.Fatalf("partitions: %v, want %v", out.Partitions, in.Partitions)
			}
		}
	}
	// Kafka's layout: Empty has null partitions (-1), others an array.
	if v := EncodeValue(m); len(v) != 2+8+2+4+1+4+8+8 || v[17] != 0xff {
		t.Fatalf("Empty value layout: % x", v)
	}
	if _, err := DecodeValue("t", []byte{0, 0, 1}); err == nil {
		t.Fatal("short value accepted")
	}
	if _, err := DecodeKey([]byte{0, 1, 0, 0}); !errors.Is(err, errUnknownVersion) {
		t.Fatalf("key version 1: %v", err)
	}
}

func TestPartitionForIsJavaHashCode(t *testing.T) {
	// "hello".hashCode() is 99162322; Integer.MIN_VALUE maps to 0 ("polygenelubricants").
	if got := partitionFor("hello", 50); got != 99162322%50 {
		t.Fatalf("hello: %d", got)
	}
	if got := partitionFor("polygenelubricants", 50); got != 0 {
		t.Fatalf("MIN_VALUE hash: %d", got)
	}
}
