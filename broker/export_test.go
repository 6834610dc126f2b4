package broker

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/ktoolhq/ktool/broker/coord"
	"github.com/ktoolhq/ktool/broker/replica"
)

// HostedLeaderAndEpoch is the leader and leader epoch this broker hosts
// topic-partition at, for tests; ok is false when it does not host it.
func (b *Broker) HostedLeaderAndEpoch(topic string, partition int32) (leader, epoch int32, ok bool) {
	p := b.replicas.Get(replica.TP{Topic: topic, Partition: partition})
	if p == nil {
		return -1, -1, false
	}
	leader, epoch = p.LeaderAndEpoch()
	return leader, epoch, true
}

// ControllerCheckReads is how many store reads the checks of controller
// requests have made for single partitions, for tests.
func (b *Broker) ControllerCheckReads() int64 { return b.checkReads.Load() }

// ReadAndEncodeFetch reads and encodes a consumer fetch of req as the broker
// answers one, then drops the answer: for allocation counts of the fetch path.
func (b *Broker) ReadAndEncodeFetch(req *kmsg.FetchRequest) {
	parts, _, _ := b.readFetch(req, false, req.MaxBytes, nil, nil)
	encodeFetch(req.GetVersion(), 0, parts, 0).Release()
}

// WrapStore replaces the broker's coordination session with wrap(session)
// and returns a func putting the session back, for tests.
func (b *Broker) WrapStore(wrap func(coord.Store) coord.Store) (restore func()) {
	s := b.Store()
	b.setStore(wrap(s))
	return func() { b.setStore(s) }
}

// ReloadConfig re-reads a config entity ("topics/T", "brokers/<id>") as a
// config change notification makes the broker do, for tests.
func (b *Broker) ReloadConfig(ctx context.Context, entity string) { b.reloadEntity(ctx, entity) }

// TopicOverrides is the topic's overrides this broker applies, for tests.
func (b *Broker) TopicOverrides(topic string) map[string]string { return b.topicOverrides(topic) }
