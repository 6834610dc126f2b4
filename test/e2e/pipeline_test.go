package e2e

import (
	"bufio"
	"encoding/binary"
	"strconv"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestPipelinedResponsesInOrder writes hundreds of mixed requests on one connection
// without waiting (more than the broker queues per connection), among them parked
// long polls and acks=0 produces, and expects every answer, in request order, with
// produce offsets in the order the produces were sent.
func TestPipelinedResponsesInOrder(t *testing.T) {
	b := startBroker(t)
	const topic = "pipelined"
	createTopic(t, b.Admin(t), topic, 1, nil)
	rc := dialRaw(t, b.Addr())
	w := bufio.NewWriter(rc.c)

	type sent struct {
		corr int32
		req  kmsg.Request
	}
	var expect []sent
	var corr int32
	next := int64(0) // the offset of the next record appended
	for i := range 500 {
		corr++
		var req kmsg.Request
		answered := true
		switch i % 7 {
		case 0:
			m := kmsg.NewPtrMetadataRequest()
			m.Version = 9
			req = m
		case 1:
			req = produceRequest(7, 1, topic, 0, encodeBatch(-1, -1, -1, time.Now().UnixMilli(), batchRecord{value: []byte(strconv.Itoa(i))}))
			next++
		case 2:
			req = produceRequest(7, 0, topic, 0, encodeBatch(-1, -1, -1, time.Now().UnixMilli(), batchRecord{value: []byte(strconv.Itoa(i))}))
			next++
			answered = false
		case 3:
			// Parked at the end of the log until the next produce wakes it, or for
			// 300 ms when none comes.
			req = fetchRequest(topic, next, 300*time.Millisecond)
		case 4:
			a := kmsg.NewPtrApiVersionsRequest()
			a.Version = 3
			req = a
		case 5:
			req = listOffsetsRequest(topic, -1)
		case 6:
			req = fetchRequest(topic, 0, 0)
		}
		if _, err := w.Write(encodeRequest(corr, "pipeline", req)); err != nil {
			t.Fatal(err)
		}
		if answered {
			expect = append(expect, sent{corr, req})
		}
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	var lastOffset int64 = -1
	for _, e := range expect {
		frame, err := rc.ReadFrame(30 * time.Second)
		if err != nil {
			t.Fatalf("waiting for the answer to request %d (%s): %v", e.corr, kmsg.NameForKey(e.req.Key()), err)
		}
		if got := int32(binary.BigEndian.Uint32(frame)); got != e.corr {
			t.Fatalf("answer with correlation id %d where %d (%s) was due", got, e.corr, kmsg.NameForKey(e.req.Key()))
		}
		resp, err := decodeResponse(e.req, e.corr, frame)
		if err != nil {
			t.Fatal(err)
		}
		if pr, ok := resp.(*kmsg.ProduceResponse); ok {
			p := pr.Topics[0].Partitions[0]
			if err := kerr.ErrorForCode(p.ErrorCode); err != nil {
				t.Fatalf("produce %d: %v", e.corr, err)
			}
			if p.BaseOffset <= lastOffset {
				t.Fatalf("produce %d at offset %d, after one at %d", e.corr, p.BaseOffset, lastOffset)
			}
			lastOffset = p.BaseOffset
		}
	}
	end, err := endOffsets(testCtx(t, 10*time.Second), b.Admin(t), topic)
	if err != nil {
		t.Fatal(err)
	}
	if end[0] != next {
		t.Fatalf("high watermark %d, want %d", end[0], next)
	}
}

func listOffsetsRequest(topic string, ts int64) *kmsg.ListOffsetsRequest {
	req := kmsg.NewPtrListOffsetsRequest()
	req.Version = 4
	req.ReplicaID = -1
	rt := kmsg.NewListOffsetsRequestTopic()
	rt.Topic = topic
	rp := kmsg.NewListOffsetsRequestTopicPartition()
	rp.Timestamp = ts
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	return req
}

// TestAnswerBeforeAcksZeroProduceIsFlushed: a request followed at once by an
// acks=0 produce (one write, as a client with one connection per broker sends them)
// gets its answer without waiting for some later request.
func TestAnswerBeforeAcksZeroProduceIsFlushed(t *testing.T) {
	b := startBroker(t)
	const topic = "acks0-flush"
	createTopic(t, b.Admin(t), topic, 1, nil)
	rc := dialRaw(t, b.Addr())
	for i := range 20 {
		meta := kmsg.NewPtrMetadataRequest()
		meta.Version = 9
		corr := int32(2*i + 1)
		both := encodeRequest(corr, "acks0", meta)
		both = append(both, encodeRequest(corr+1, "acks0", produceRequest(7, 0, topic, 0,
			encodeBatch(-1, -1, -1, time.Now().UnixMilli(), batchRecord{value: []byte("x")})))...)
		if err := rc.Write(both); err != nil {
			t.Fatal(err)
		}
		if _, err := rc.Receive(meta, corr, 10*time.Second); err != nil {
			t.Fatalf("round %d: Metadata answer not sent while an acks=0 produce followed it: %v", i, err)
		}
	}
}
