package broker

// Replication throttles (KIP-73), as reassignments set them: the dynamic
// broker settings leader.replication.throttled.rate and
// follower.replication.throttled.rate (bytes/s), and the topic configs
// leader.replication.throttled.replicas and follower.replication.throttled.replicas
// (partition:broker lists, or *) naming the replicas they apply to. A leader
// stops sending data for its listed replicas to out-of-sync followers while
// its quota is used up; a follower stops fetching its listed replicas while
// its quota is used up. Replicas in the ISR are never throttled, as in Kafka.

import (
	"math"
	"slices"
	"time"

	"github.com/ktoolhq/ktool/broker/config"
	cq "github.com/ktoolhq/ktool/broker/quota"
	"github.com/ktoolhq/ktool/broker/replica"
)

// replThrottles are a broker's two replication quotas, each shared by its
// fetches and holding one second of its rate; a fetch's bytes may put it in
// debt, which the following fetches wait out.
type replThrottles struct {
	leader, follower cq.SharedBucket
}

func unthrottled(rate config.Bytes) bool { return rate <= 0 || rate == math.MaxInt64 }

// throttledReplicas reads a topic's leader or follower throttle list.
func (b *Broker) throttledReplicas(topic string, leaderSide bool) config.ThrottledReplicas {
	ts := b.cfg.Topic(b.topicOverrides(topic))
	v := ts.FollowerThrottled
	if leaderSide {
		v = ts.LeaderThrottled
	}
	t, _ := config.ParseThrottledReplicas(v) // checked when stored
	return t
}

// leaderThrottle decides, for one follower fetch of partition p, whether its
// data counts against the leader quota (throttled) and whether it must be
// left out now (over).
type leaderThrottle struct {
	b      *Broker
	rate   config.Bytes
	lists  map[string]config.ThrottledReplicas
	now    time.Time
	active bool
}

func (b *Broker) newLeaderThrottle() *leaderThrottle {
	rate := b.cfg.Throttle().LeaderRate
	return &leaderThrottle{b: b, rate: rate, lists: map[string]config.ThrottledReplicas{}, now: time.Now(), active: !unthrottled(rate)}
}

func (t *leaderThrottle) check(topic string, partition, follower int32, p *replica.Partition) (throttled, over bool) {
	if !t.active {
		return false, false
	}
	list, ok := t.lists[topic]
	if !ok {
		list = t.b.throttledReplicas(topic, true)
		t.lists[topic] = list
	}
	if !list.Has(partition, t.b.id) || slices.Contains(p.State().ISR, follower) {
		return false, false
	}
	return true, t.b.throttles.leader.Take(0, float64(t.rate), t.now) > 0
}

func (t *leaderThrottle) sent(n int64) { t.b.throttles.leader.Take(float64(n), float64(t.rate), t.now) }

// followerThrottle is the replica fetchers' FollowerThrottle.
type followerThrottle struct{ b *Broker }

func (f followerThrottle) applies(tp replica.TP, inSync bool) (config.Bytes, bool) {
	if inSync {
		// Asked twice per fetched partition: an in-sync replica must not pay
		// for decoding the broker's dynamic configs (a tenth of an idle
		// 10,000-partition broker's CPU when it did).
		return 0, false
	}
	rate := f.b.cfg.Throttle().FollowerRate
	if unthrottled(rate) || !f.b.throttledReplicas(tp.Topic, false).Has(tp.Partition, f.b.id) {
		return 0, false
	}
	return rate, true
}

func (f followerThrottle) Hold(tp replica.TP, inSync bool) bool {
	rate, ok := f.applies(tp, inSync)
	return ok && f.b.throttles.follower.Take(0, float64(rate), time.Now()) > 0
}

func (f followerThrottle) Fetched(tp replica.TP, inSync bool, n int) {
	if rate, ok := f.applies(tp, inSync); ok {
		f.b.throttles.follower.Take(float64(n), float64(rate), time.Now())
	}
}
