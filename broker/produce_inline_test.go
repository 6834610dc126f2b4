package broker

import (
	"context"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/ktoolhq/ktool/broker/protocol"
)

// TestAcksAllAtRF1AnsweredInline: a leader alone in its ISR has moved the
// high watermark in the append, so an acks=all produce is answered before
// the handler returns (nothing parks, no goroutine), and idempotence still
// holds on that path: a retried request is answered with the original
// offsets and appends nothing, the next sequences follow in order, and a
// sequence gap is refused.
func TestAcksAllAtRF1AnsweredInline(t *testing.T) {
	br := benchBroker(t)
	const topic, parts, records = "inline", 3, 4
	createBenchTopic(t, br, topic, parts)

	req := idempotentProduce(topic, parts, -1, 500, records)
	rc := &reqCtx{ctx: context.Background()}

	// send produces with every batch at sequence seq and returns the answer
	// given before handleProduce returned.
	send := func(seq int32) *kmsg.ProduceResponse {
		t.Helper()
		for i := range req.Topics[0].Partitions {
			setSequence(req.Topics[0].Partitions[i].Records, seq)
		}
		var got *kmsg.ProduceResponse
		handleProduce(br, rc, req, func(r protocol.Response) { got = r.Msg.(*kmsg.ProduceResponse) })
		if got == nil {
			t.Fatalf("sequence %d: acks=all at RF=1 not answered inline", seq)
		}
		return got
	}
	check := func(resp *kmsg.ProduceResponse, code int16, base int64) {
		t.Helper()
		for _, p := range resp.Topics[0].Partitions {
			if p.ErrorCode != code {
				t.Fatalf("partition %d: error %v, want %v", p.Partition, kerr.ErrorForCode(p.ErrorCode), kerr.ErrorForCode(code))
			}
			if code == 0 && p.BaseOffset != base {
				t.Fatalf("partition %d: base offset %d, want %d", p.Partition, p.BaseOffset, base)
			}
		}
	}
	check(send(0), 0, 0)
	check(send(records), 0, records)
	check(send(records), 0, records) // the retry: its original offsets
	check(send(2*records), 0, 2*records)
	check(send(4*records), kerr.OutOfOrderSequenceNumber.Code, 0)
	for p := range parts {
		part, err := br.leaderPartition(topic, int32(p))
		if err != nil {
			t.Fatal(err)
		}
		if leo, hw := part.Log().LogEndOffset(), part.Log().HighWatermark(); leo != 3*records || hw != leo {
			t.Fatalf("partition %d: LEO %d, HW %d; want both %d", p, leo, hw, 3*records)
		}
	}
}
