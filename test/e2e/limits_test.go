package e2e

import (
	"bytes"
	"strconv"
	"testing"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
)

// TestMaxMessageBytesBoundary: max.message.bytes bounds a whole batch including its
// 12-byte offset and length prefix, as in Kafka (whose default 1048588 is 1 MiB plus
// those 12 bytes): a batch of exactly the limit is taken, one byte more is not.
func TestMaxMessageBytesBoundary(t *testing.T) {
	b := startBroker(t)
	const topic, limit = "boundary", 5000
	createTopic(t, b.Admin(t), topic, 1, map[string]*string{"max.message.bytes": kadm.StringPtr(strconv.Itoa(limit))})
	// A batch of one record whose value is sized so the batch is exactly n bytes.
	batchOf := func(n int) []byte {
		empty := len(encodeBatch(-1, -1, -1, 0, batchRecord{value: []byte{}}))
		// Value lengths below 64 and above take one and two varint bytes; stay above.
		v := n - empty
		for len(encodeBatch(-1, -1, -1, 0, batchRecord{value: bytes.Repeat([]byte("v"), v)})) > n {
			v--
		}
		batch := encodeBatch(-1, -1, -1, 0, batchRecord{value: bytes.Repeat([]byte("v"), v)})
		if len(batch) != n {
			t.Fatalf("cannot build a %d-byte batch (got %d)", n, len(batch))
		}
		return batch
	}
	rc := dialRaw(t, b.Addr())
	for _, c := range []struct {
		size int
		want int16
	}{{limit, 0}, {limit + 1, kerr.MessageTooLarge.Code}, {limit - 1, 0}} {
		resp, err := rc.Request(produceRequest(7, -1, topic, 0, batchOf(c.size)))
		if err != nil {
			t.Fatal(err)
		}
		if p := producePartition(t, resp); p.ErrorCode != c.want {
			t.Errorf("%d-byte batch with max.message.bytes %d: %v, want %v", c.size, limit, kerr.ErrorForCode(p.ErrorCode), kerr.ErrorForCode(c.want))
		}
	}
}
