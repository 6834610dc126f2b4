package replica

import (
	"github.com/twmb/franz-go/pkg/kmsg"
)

// FollowerThrottle limits what this broker fetches as a follower for the
// replicas a reassignment throttles (follower.replication.throttled.rate and
// .replicas). As in Kafka, a replica in the ISR is never held back.
type FollowerThrottle interface {
	// Hold reports whether tp is throttled and its quota is used up now.
	Hold(tp TP, inSync bool) bool
	// Fetched records the bytes fetched for tp.
	Fetched(tp TP, inSync bool, bytes int)
}

func (f *fetcher) inSync(st *fetchState) bool {
	return st.p.inISR(f.m.cfg.BrokerID)
}

// throttleHold reports whether tp sits this fetch out.
func (f *fetcher) throttleHold(tp TP, st *fetchState) bool {
	t := f.m.cfg.Fetch.Throttle
	return t != nil && t.Hold(tp, f.inSync(st))
}

// throttleRecord counts what the leader sent for tp against the quota.
func (f *fetcher) throttleRecord(tp TP, st *fetchState, rp kmsg.FetchResponseTopicPartition) {
	if t := f.m.cfg.Fetch.Throttle; t != nil && len(rp.RecordBatches) > 0 {
		t.Fetched(tp, f.inSync(st), len(rp.RecordBatches))
	}
}
