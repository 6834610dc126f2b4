package group

import (
	"context"
	"testing"
	"time"
)

// FuzzReadBatch feeds arbitrary bytes to what loading runs on every batch of
// __consumer_offsets: bad input must give an error, never a panic.
func FuzzReadBatch(f *testing.F) {
	f.Add(buildBatch([]record{
		{offsetKey("g", topicPartition{"t", 1}), offsetValue(offsetEntry{offset: 5, commitAt: 1, expireAt: -1})},
		{groupKey("g"), nil},
	}, time.UnixMilli(1)))
	g := newGroup("g", time.UnixMilli(2))
	g.protocolType = "consumer"
	f.Add(buildBatch([]record{{groupKey("g"), g.metadataValue(nil)}}, time.UnixMilli(3)))
	f.Add([]byte{0, 0, 0})
	f.Fuzz(func(t *testing.T, b []byte) {
		st := newLoadState()
		_ = readBatch(context.Background(), nil, b, st.apply)
		st.build(time.UnixMilli(4))
	})
}
