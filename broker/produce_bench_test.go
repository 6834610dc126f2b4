package broker

import (
	"context"
	"encoding/binary"
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/ktoolhq/ktool/broker/config"
	"github.com/ktoolhq/ktool/broker/protocol"
	"github.com/ktoolhq/ktool/internal/batch"
)

// BenchmarkProduceHandler is the broker's own work for one produce request
// with the socket and the client taken away: the handler, on a standalone
// broker with data on disk, for 1 and 64 partitions of one small idempotent
// batch each (10 records of 100 bytes, franz-go's shape at 64 partitions),
// acks=1 and acks=all at RF=1:
//
//	go test -run '^$' -bench BenchmarkProduceHandler -benchtime 2000x ./broker/
//
// ns/partition is wall time per partition batch; allocs/op counts the
// request's allocations (the response's included).
func BenchmarkProduceHandler(b *testing.B) {
	for _, parts := range []int{1, 64} {
		for _, acks := range []int16{1, -1} {
			b.Run(fmt.Sprintf("partitions=%d/acks=%d", parts, acks), func(b *testing.B) {
				benchProduceHandler(b, parts, acks)
			})
		}
	}
}

func benchProduceHandler(b *testing.B, parts int, acks int16) {
	br := benchBroker(b)
	topic := fmt.Sprintf("bench-%d-%d", parts, -acks)
	createBenchTopic(b, br, topic, parts)
	const records = 10
	req := idempotentProduce(topic, parts, acks, 1000, records)
	rc := &reqCtx{ctx: context.Background()}
	done := make(chan *kmsg.ProduceResponse, 1)
	respond := func(r protocol.Response) { done <- r.Msg.(*kmsg.ProduceResponse) }
	seq := int32(0)
	b.ReportAllocs()
	for b.Loop() {
		b.StopTimer()
		for i := range req.Topics[0].Partitions {
			setSequence(req.Topics[0].Partitions[i].Records, seq)
		}
		seq += records
		b.StartTimer()
		handleProduce(br, rc, req, respond)
		resp := <-done
		for _, p := range resp.Topics[0].Partitions {
			if p.ErrorCode != 0 {
				b.Fatalf("partition %d: error %d", p.Partition, p.ErrorCode)
			}
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*parts), "ns/partition")
}

// benchBroker is one standalone broker on a temporary log dir.
func benchBroker(b testing.TB) *Broker {
	cfg, err := config.NewBroker(map[string]string{
		"broker.id": "0",
		"log.dirs":  b.TempDir(),
		"listeners": "PLAINTEXT://127.0.0.1:0",
	})
	if err != nil {
		b.Fatal(err)
	}
	br, err := New(Options{Config: cfg})
	if err != nil {
		b.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := br.Start(ctx); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() {
		sctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		_ = br.Shutdown(sctx)
	})
	select {
	case <-br.Ready():
	case <-ctx.Done():
		b.Fatal("broker not ready")
	}
	return br
}

// createBenchTopic creates topic with parts partitions at RF=1 and waits
// until this broker leads every one.
func createBenchTopic(b testing.TB, br *Broker, topic string, parts int) {
	cl, err := kgo.NewClient(kgo.SeedBrokers(br.Addr()))
	if err != nil {
		b.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := kadm.NewClient(cl).CreateTopic(ctx, int32(parts), 1, nil, topic); err != nil {
		b.Fatal(err)
	}
	for p := range parts {
		for {
			if _, err := br.leaderPartition(topic, int32(p)); err == nil {
				break
			}
			select {
			case <-ctx.Done():
				b.Fatalf("partition %d never led here", p)
			case <-time.After(10 * time.Millisecond):
			}
		}
	}
}

// idempotentBatch is an uncompressed batch of n records of size-byte values
// from producer pid (epoch 0), sequence 0.
// idempotentProduce is a Produce v9 to partitions 0..parts-1 of topic, each
// with a batch of n 100-byte records of its own idempotent producer
// (pidBase+partition) at sequence 0.
func idempotentProduce(topic string, parts int, acks int16, pidBase int64, n int) *kmsg.ProduceRequest {
	req := kmsg.NewPtrProduceRequest()
	req.SetVersion(9)
	req.Acks, req.TimeoutMillis = acks, 30000
	rt := kmsg.NewProduceRequestTopic()
	rt.Topic = topic
	for p := range parts {
		rp := kmsg.NewProduceRequestTopicPartition()
		rp.Partition = int32(p)
		rp.Records = idempotentBatch(pidBase+int64(p), n, 100)
		rt.Partitions = append(rt.Partitions, rp)
	}
	req.Topics = append(req.Topics, rt)
	return req
}

func idempotentBatch(pid int64, n, size int) []byte {
	var section []byte
	value := make([]byte, size)
	for i := range n {
		section = batch.AppendRecord(section, 0, int32(i), nil, value, nil)
	}
	now := time.Now().UnixMilli()
	return batch.Encode(batch.Header{
		LastOffsetDelta: int32(n - 1),
		FirstTimestamp:  now,
		MaxTimestamp:    now,
		ProducerID:      pid,
		NumRecords:      int32(n),
	}, section)
}

// setSequence rewrites a batch's base sequence and its CRC.
func setSequence(b []byte, seq int32) {
	binary.BigEndian.PutUint32(b[batch.OffBaseSequence:], uint32(seq))
	binary.BigEndian.PutUint32(b[batch.OffCRC:], batch.Checksum(b))
}
