package chaos

import (
	"context"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/ktoolhq/ktool/internal/chaoscheck"
)

// servingMonitor measures, from the brokers' side, how long each partition
// goes without a serving leader: every 100 ms it asks the brokers not under a
// fault for the partition's leader (the state with the highest leader epoch
// among their answers) and sends that leader a ListOffsets at that epoch; an
// answer without error within a second counts as the partition being served
// then. Unlike the producer's acknowledgements, this does not wait on the
// client's own timeouts (a request stuck on a frozen broker).
type servingMonitor struct {
	c     *cluster
	topic string
	gaps  *chaoscheck.GapTracker

	mu    sync.Mutex
	avoid int32 // the broker under a fault, -1 for none
}

func newServingMonitor(c *cluster, topic string) *servingMonitor {
	return &servingMonitor{c: c, topic: topic, gaps: chaoscheck.NewGapTracker(), avoid: -1}
}

// faulting marks id as under a fault (-1: none): its metadata is not asked.
func (m *servingMonitor) faulting(id int32) {
	m.mu.Lock()
	m.avoid = id
	m.mu.Unlock()
}

func (m *servingMonitor) run(ctx context.Context) {
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for {
		m.probe(ctx)
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
}

type leaderState struct {
	leader, epoch int32
}

func (m *servingMonitor) probe(ctx context.Context) {
	m.mu.Lock()
	avoid := m.avoid
	m.mu.Unlock()
	var mu sync.Mutex
	states := map[int32]leaderState{}
	var wg sync.WaitGroup
	for _, id := range m.c.ids() {
		if id == avoid {
			continue
		}
		wg.Go(func() {
			rctx, cancel := context.WithTimeout(ctx, time.Second)
			defer cancel()
			resp, err := m.c.brokerMetadata(rctx, id, m.topic)
			if err != nil || len(resp.Topics) != 1 {
				return
			}
			mu.Lock()
			defer mu.Unlock()
			for _, p := range resp.Topics[0].Partitions {
				if p.ErrorCode != 0 || p.Leader < 0 {
					continue
				}
				if st, ok := states[p.Partition]; !ok || p.LeaderEpoch > st.epoch {
					states[p.Partition] = leaderState{p.Leader, p.LeaderEpoch}
				}
			}
		})
	}
	wg.Wait()
	byLeader := map[int32]map[int32]int32{} // leader -> partition -> epoch
	for p, st := range states {
		if byLeader[st.leader] == nil {
			byLeader[st.leader] = map[int32]int32{}
		}
		byLeader[st.leader][p] = st.epoch
	}
	for leader, parts := range byLeader {
		wg.Go(func() {
			req := kmsg.NewPtrListOffsetsRequest()
			req.ReplicaID = -1
			rt := kmsg.NewListOffsetsRequestTopic()
			rt.Topic = m.topic
			for p, e := range parts {
				rp := kmsg.NewListOffsetsRequestTopicPartition()
				rp.Partition, rp.CurrentLeaderEpoch, rp.Timestamp = p, e, -1
				rt.Partitions = append(rt.Partitions, rp)
			}
			req.Topics = append(req.Topics, rt)
			rctx, cancel := context.WithTimeout(ctx, time.Second)
			defer cancel()
			resp, err := req.RequestWith(rctx, m.c.brokerClient(leader))
			if err != nil {
				return
			}
			now := time.Now()
			for _, t := range resp.Topics {
				for _, p := range t.Partitions {
					if p.ErrorCode == 0 {
						m.gaps.Ack(p.Partition, now)
					}
				}
			}
		})
	}
	wg.Wait()
}
