package broker

import (
	"context"
	"sync"
	"time"

	"github.com/ktoolhq/ktool/broker/coord"
	"github.com/ktoolhq/ktool/internal/zkdata"
)

// isrNotifier tells the controller of the ISR changes this broker wrote as
// leader, as Kafka's brokers do: the partitions changed are gathered and
// written as few /isr_change_notification znodes (each at most
// isrNotifyBytes), not one znode per change; a write that fails keeps its
// partitions for the next attempt instead of dropping them (the controller
// would never learn of those changes). A broker returning to 10,000 partitions
// writes a handful of znodes instead of 10,000.
type isrNotifier struct {
	b       *Broker
	mu      sync.Mutex
	pending map[zkdata.TopicPartition]bool
	wake    chan struct{}
}

// isrNotifyWindow gathers the changes of a burst into one notification.
const isrNotifyWindow = 50 * time.Millisecond

// isrNotifyBytes bounds one notification znode (well within jute.maxbuffer).
const isrNotifyBytes = 64 << 10

func newIsrNotifier(b *Broker) *isrNotifier {
	return &isrNotifier{b: b, pending: map[zkdata.TopicPartition]bool{}, wake: make(chan struct{}, 1)}
}

// changed queues a partition whose ISR this broker wrote.
func (n *isrNotifier) changed(tp zkdata.TopicPartition) {
	n.mu.Lock()
	n.pending[tp] = true
	n.mu.Unlock()
	select {
	case n.wake <- struct{}{}:
	default:
	}
}

// run writes the queued notifications until ctx ends.
func (n *isrNotifier) run(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-n.wake:
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(isrNotifyWindow):
		}
		for !n.flush(ctx) {
			select {
			case <-ctx.Done():
				return
			case <-time.After(time.Second):
			}
		}
	}
}

// flush writes every queued partition; false when a write failed (its
// partitions stay queued).
func (n *isrNotifier) flush(ctx context.Context) bool {
	n.mu.Lock()
	var tps []zkdata.TopicPartition
	for tp := range n.pending {
		tps = append(tps, tp)
	}
	n.pending = map[zkdata.TopicPartition]bool{}
	n.mu.Unlock()
	for len(tps) > 0 {
		size, i := 0, 0
		for i < len(tps) && (i == 0 || size+len(tps[i].Topic)+40 <= isrNotifyBytes) {
			size += len(tps[i].Topic) + 40
			i++
		}
		wctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		_, err := n.b.Store().Create(wctx, zkdata.IsrChangePath(), zkdata.EncodeIsrChange(tps[:i]), coord.PersistentSequential)
		cancel()
		if err != nil {
			n.b.logger.Warn("ISR change notification not written; retrying", "partitions", len(tps), "err", err)
			n.mu.Lock()
			for _, tp := range tps {
				n.pending[tp] = true
			}
			n.mu.Unlock()
			return false
		}
		tps = tps[i:]
	}
	return true
}
