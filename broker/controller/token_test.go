package controller

import (
	"bytes"
	"context"
	"slices"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/ktoolhq/ktool/broker/coord"
	"github.com/ktoolhq/ktool/internal/zkdata"
)

// TestFailoverSendsLeadersBeforeIsrCleanup: a new controller finding broker
// 1 dead tells the brokers the leaders it elected before it takes broker 1
// out of the ISRs of the partitions that kept their leader (at 10,000
// partitions and RF=3 those writes are twice the elections), and every
// request it sends carries its epoch's token from the store.
func TestFailoverSendsLeadersBeforeIsrCleanup(t *testing.T) {
	states := map[int32]zkdata.LeaderIsr{
		0: {Leader: 1, LeaderEpoch: 3, ISR: []int32{1, 2, 3}}, // led by the dead broker
		1: {Leader: 2, LeaderEpoch: 5, ISR: []int32{2, 3, 1}}, // keeps its leader
	}
	cl := newClusterWith(t, ids(2, 3), threeBrokers(), Config{BrokerID: 2}, func(s coord.Store) coord.Store {
		for p, li := range states {
			if _, err := s.CreateAll(context.Background(), zkdata.PartitionStatePath("a", p), zkdata.EncodeLeaderIsr(li), coord.Persistent); err != nil {
				t.Fatal(err)
			}
		}
		return s
	})
	cl.waitState("a", 0, 2, ids(2, 3))
	cl.waitState("a", 1, 2, ids(2, 3))
	cl.waitFor("the ISR clean-up told", func() bool { return cl.told(2, "a", 1, 2, 6) && cl.told(3, "a", 1, 2, 6) })
	data, _, err := cl.admin.Get(cl.ctx, zkdata.ControllerTokenPath)
	if err != nil {
		t.Fatal(err)
	}
	tok, err := zkdata.DecodeControllerToken(data)
	if err != nil {
		t.Fatal(err)
	}
	if tok.Epoch != cl.c.Epoch() {
		t.Fatalf("token of epoch %d, the controller's is %d", tok.Epoch, cl.c.Epoch())
	}
	for _, id := range ids(2, 3) {
		cl.rec.mu.Lock()
		sent := append([]kmsg.Request(nil), cl.rec.sent[id]...)
		cl.rec.mu.Unlock()
		var first *kmsg.LeaderAndISRRequest
		for _, req := range sent {
			var tags *kmsg.Tags
			switch r := req.(type) {
			case *kmsg.LeaderAndISRRequest:
				tags = &r.UnknownTags
				if first == nil {
					first = r
				}
			case *kmsg.UpdateMetadataRequest:
				tags = &r.UnknownTags
			case *kmsg.StopReplicaRequest:
				tags = &r.UnknownTags
			}
			var got []byte
			tags.Each(func(k uint32, v []byte) {
				if k == TokenTag {
					got = v
				}
			})
			if !bytes.Equal(got, tok.Token) {
				t.Errorf("broker %d: %s without the store's token", id, kmsg.NameForKey(req.Key()))
			}
		}
		if first == nil {
			t.Fatalf("broker %d was sent no LeaderAndIsr", id)
		}
		for _, ts := range first.TopicStates {
			for _, p := range ts.PartitionStates {
				want := states[p.Partition]
				if p.Partition == 0 {
					want = zkdata.LeaderIsr{Leader: 2, LeaderEpoch: 4, ISR: []int32{2, 3}}
				}
				if p.Leader != want.Leader || p.LeaderEpoch != want.LeaderEpoch || !slices.Equal(p.ISR, want.ISR) {
					t.Errorf("broker %d's first LeaderAndIsr has a-%d leader %d epoch %d ISR %v, want leader %d epoch %d ISR %v",
						id, p.Partition, p.Leader, p.LeaderEpoch, p.ISR, want.Leader, want.LeaderEpoch, want.ISR)
				}
			}
		}
	}
}
