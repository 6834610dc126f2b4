package group

import (
	"context"
	"fmt"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// BenchmarkOffsetCommit measures commits from many groups at once against the
// in-memory log: encoding, the shard lock and the writer's batching.
func BenchmarkOffsetCommit(b *testing.B) {
	log := newMemLog()
	c := New(Config{NumPartitions: testPartitions, Log: log})
	defer c.Close()
	for p := range int32(testPartitions) {
		c.BecomeLeader(p, 1)
	}
	waitFor(b, "partitions loaded", func() bool {
		for _, s := range c.shards {
			s.mu.Lock()
			st := s.status
			s.mu.Unlock()
			if st != shardActive {
				return false
			}
		}
		return true
	})
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		done := make(chan struct{}, 1)
		i := 0
		for pb.Next() {
			i++
			r := kmsg.NewPtrOffsetCommitRequest()
			r.Version = 8
			r.Group = fmt.Sprintf("bench-%d", i%64)
			r.Topics = []kmsg.OffsetCommitRequestTopic{{Topic: "t", Partitions: []kmsg.OffsetCommitRequestTopicPartition{{Partition: int32(i % 8), Offset: int64(i), LeaderEpoch: -1}}}}
			c.OffsetCommit(context.Background(), r, func(*kmsg.OffsetCommitResponse) { done <- struct{}{} })
			<-done
		}
	})
}
