package broker

// Bounds on what one request may cost: names listed many times are answered
// once (a response is then at most a constant times the request, or the
// cluster's size, never their product), and partition counts are checked
// against max.partitions and max.broker.partitions (KIP-578's names) before an
// assignment is built.

import (
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"
)

// dedupe keeps the first element of each key, in order.
func dedupe[T any](xs []T, key func(T) string) []T {
	seen := make(map[string]struct{}, min(len(xs), 1<<16))
	out := xs[:0:0]
	for _, x := range xs {
		k := key(x)
		if _, ok := seen[k]; ok {
			continue
		}
		seen[k] = struct{}{}
		out = append(out, x)
	}
	return out
}

// duplicates counts each key of xs.
func duplicates[T any](xs []T, key func(T) string) map[string]int {
	n := make(map[string]int, min(len(xs), 1<<16))
	for _, x := range xs {
		n[key(x)]++
	}
	return n
}

// partitionCounts is the number of partitions in the cluster and of replicas
// per broker, from the metadata cache.
func (b *Broker) partitionCounts() (total int64, perBroker map[int32]int64) {
	perBroker = map[int32]int64{}
	for _, t := range b.meta.topicNames() {
		_, parts, _, ok := b.meta.topic(t)
		if !ok {
			continue
		}
		for _, p := range parts {
			total++
			for _, r := range p.Replicas {
				perBroker[r]++
			}
		}
	}
	return total, perBroker
}

// checkPartitionLimits refuses adding partitions with rf replicas each (spread
// evenly over live, or exactly as in assignment when given) beyond
// max.partitions or max.broker.partitions. It is arithmetic on counts, so a
// request for 2^31-1 partitions costs nothing.
func (b *Broker) checkPartitionLimits(partitions, rf int64, live []int32, assignment map[int32][]int32) error {
	maxTotal, maxBroker := b.cfg.Settings().MaxPartitions, b.cfg.Settings().MaxBrokerPartitions
	total, per := b.partitionCounts()
	if partitions > maxTotal-total {
		return fmt.Errorf("%w: %d more partitions would make %d, above max.partitions (%d)",
			kerr.PolicyViolation, partitions, total+partitions, maxTotal)
	}
	if assignment != nil {
		add := map[int32]int64{}
		for _, rs := range assignment {
			for _, r := range rs {
				add[r]++
			}
		}
		for id, n := range add {
			if per[id]+n > maxBroker {
				return fmt.Errorf("%w: broker %d would hold %d partition replicas, above max.broker.partitions (%d)",
					kerr.PolicyViolation, id, per[id]+n, maxBroker)
			}
		}
		return nil
	}
	if len(live) == 0 {
		return nil
	}
	var most int64
	for _, id := range live {
		most = max(most, per[id])
	}
	n := int64(len(live))
	each := (partitions*rf + n - 1) / n
	if each > maxBroker-most {
		return fmt.Errorf("%w: %d partitions with %d replicas over %d brokers would put %d partition replicas on a broker, above max.broker.partitions (%d)",
			kerr.PolicyViolation, partitions, rf, n, most+each, maxBroker)
	}
	return nil
}
