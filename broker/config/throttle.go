package config

import (
	"fmt"
	"strconv"
	"strings"
)

// Throttle is the replication throttle in effect on a broker: dynamic
// settings (per broker, then the cluster default), so it is re-read after
// every change, unlike Settings. A rate of math.MaxInt64 means unthrottled.
type Throttle struct {
	LeaderRate   Bytes `config:"leader.replication.throttled.rate"`
	FollowerRate Bytes `config:"follower.replication.throttled.rate"`
	// AlterLogDirsRate bounds the copies of replicas moving between this
	// broker's log dirs (AlterReplicaLogDirs).
	AlterLogDirsRate Bytes `config:"replica.alter.log.dirs.io.max.bytes.per.second"`
}

// Throttle returns the replication throttle rates now in effect.
func (b *Broker) Throttle() Throttle {
	b.mu.RLock()
	cached, gen := b.throttle, b.gen
	b.mu.RUnlock()
	if cached != nil {
		return *cached
	}
	var t Throttle
	// The values were checked when they were stored; fallback keeps a broker
	// that reads a bad one from a hand-edited znode on the default.
	_ = decode(&t, BrokerDefs, b.Get, true)
	b.mu.Lock()
	if b.gen == gen {
		b.throttle = &t
	}
	b.mu.Unlock()
	return t
}

// ThrottledReplicas is a parsed *.replication.throttled.replicas value.
type ThrottledReplicas struct {
	All      bool
	Replicas map[int32][]int32 // partition -> brokers
}

// Has reports whether the replica of partition on broker is listed.
func (t ThrottledReplicas) Has(partition, broker int32) bool {
	if t.All {
		return true
	}
	for _, b := range t.Replicas[partition] {
		if b == broker {
			return true
		}
	}
	return false
}

// ParseThrottledReplicas reads "", "*" or "0:101,0:102,1:101".
func ParseThrottledReplicas(v string) (ThrottledReplicas, error) {
	var t ThrottledReplicas
	items := SplitList(v)
	if len(items) == 1 && items[0] == "*" {
		t.All = true
		return t, nil
	}
	for _, it := range items {
		p, b, ok := strings.Cut(it, ":")
		pn, perr := strconv.ParseInt(strings.TrimSpace(p), 10, 32)
		bn, berr := strconv.ParseInt(strings.TrimSpace(b), 10, 32)
		if !ok || perr != nil || berr != nil || pn < 0 || bn < 0 {
			return ThrottledReplicas{}, fmt.Errorf("throttled replica %q is not partition:broker (or the list is not *)", it)
		}
		if t.Replicas == nil {
			t.Replicas = map[int32][]int32{}
		}
		t.Replicas[int32(pn)] = append(t.Replicas[int32(pn)], int32(bn))
	}
	return t, nil
}
