package hostile

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// The growth of peak RSS an attack may cause. The broker idles at about 30 MiB;
// the bound is "a few hundred MB of its baseline".
const rssBoundMB = 300

// TestMetadataRepeatedNames: a Metadata request naming one topic (with several
// partitions) hundreds of thousands of times is answered once per name, and a
// 100 MiB one is refused before it is read.
func TestMetadataRepeatedNames(t *testing.T) {
	b := startBroker(t)
	createTopic(t, b, "t", 16, nil)
	base := b.procKB(t, "VmRSS")
	md := kmsg.NewPtrMetadataRequest()
	md.Version = 4
	for range 1_000_000 { // 3 MB on the wire
		md.Topics = append(md.Topics, kmsg.MetadataRequestTopic{Topic: kmsg.StringPtr("t")})
	}
	resp, err := dialRaw(t, b.Addr()).request(md)
	if err != nil {
		t.Fatalf("Metadata naming t a million times: %v", err)
	}
	if n := len(resp.(*kmsg.MetadataResponse).Topics); n != 1 {
		t.Errorf("answered %d topics, want 1", n)
	}
	b.memoryBound(t, base, rssBoundMB, "Metadata naming one topic a million times")

	// 100 MiB of names: refused from its size and key, never read.
	c := dialRaw(t, b.Addr())
	hdr := binary.BigEndian.AppendUint32(nil, 100<<20)
	hdr = binary.BigEndian.AppendUint16(hdr, 3)
	_ = c.c.SetDeadline(time.Now().Add(30 * time.Second))
	_, _ = c.c.Write(append(hdr, make([]byte, 1<<20)...))
	if _, err := c.br.ReadByte(); err == nil {
		t.Error("the broker answered a 100 MiB Metadata frame")
	}
	b.memoryBound(t, base, rssBoundMB, "a 100 MiB Metadata frame")
	b.alive(t, "huge Metadata requests")
}

// TestHugePartitionCounts: CreateTopics (validate_only or not) and
// CreatePartitions asking for 2^31-1 partitions are refused from their counts
// (max.broker.partitions), before any assignment is built.
func TestHugePartitionCounts(t *testing.T) {
	b := startBroker(t)
	createTopic(t, b, "small", 1, nil)
	base := b.procKB(t, "VmRSS")
	for _, validate := range []bool{true, false} {
		req := kmsg.NewPtrCreateTopicsRequest()
		req.Version, req.ValidateOnly, req.TimeoutMillis = 4, validate, 5000
		rt := kmsg.NewCreateTopicsRequestTopic()
		rt.Topic, rt.NumPartitions, rt.ReplicationFactor = "huge", math.MaxInt32, 1
		req.Topics = []kmsg.CreateTopicsRequestTopic{rt}
		resp, err := dialRaw(t, b.Addr()).request(req)
		if err != nil {
			t.Fatalf("CreateTopics validate_only=%v: %v", validate, err)
		}
		if code := resp.(*kmsg.CreateTopicsResponse).Topics[0].ErrorCode; code != kerr.PolicyViolation.Code {
			t.Errorf("CreateTopics of 2^31-1 partitions (validate_only=%v): %v, want POLICY_VIOLATION", validate, kerr.ErrorForCode(code))
		}
	}
	cp := kmsg.NewPtrCreatePartitionsRequest()
	cp.Version, cp.ValidateOnly, cp.TimeoutMillis = 1, true, 5000
	ct := kmsg.NewCreatePartitionsRequestTopic()
	ct.Topic, ct.Count = "small", math.MaxInt32
	cp.Topics = []kmsg.CreatePartitionsRequestTopic{ct}
	resp, err := dialRaw(t, b.Addr()).request(cp)
	if err != nil {
		t.Fatal(err)
	}
	if code := resp.(*kmsg.CreatePartitionsResponse).Topics[0].ErrorCode; code != kerr.PolicyViolation.Code {
		t.Errorf("CreatePartitions to 2^31-1: %v, want POLICY_VIOLATION", kerr.ErrorForCode(code))
	}
	b.memoryBound(t, base, rssBoundMB, "2^31-1 partitions")
	worksAfter(t, b, "after", "huge partition counts")
}

// TestDescribeConfigsRepeated: one topic listed 200,000 times is described once.
func TestDescribeConfigsRepeated(t *testing.T) {
	b := startBroker(t)
	createTopic(t, b, "t", 1, nil)
	base := b.procKB(t, "VmRSS")
	req := kmsg.NewPtrDescribeConfigsRequest()
	req.Version, req.IncludeDocumentation, req.IncludeSynonyms = 3, true, true
	for range 200_000 {
		r := kmsg.NewDescribeConfigsRequestResource()
		r.ResourceType, r.ResourceName = kmsg.ConfigResourceTypeTopic, "t"
		req.Resources = append(req.Resources, r)
	}
	resp, err := dialRaw(t, b.Addr()).request(req)
	if err != nil {
		t.Fatalf("DescribeConfigs: %v", err)
	}
	if n := len(resp.(*kmsg.DescribeConfigsResponse).Resources); n != 1 {
		t.Errorf("described %d resources, want 1", n)
	}
	b.memoryBound(t, base, rssBoundMB, "DescribeConfigs naming one topic 200,000 times")
	b.alive(t, "repeated DescribeConfigs resources")
}

// TestDescribeProducersRepeated: a DescribeProducers request naming one
// partition a million times (100,000 times its topic) is answered once, not
// once per name with every producer of the partition.
func TestDescribeProducersRepeated(t *testing.T) {
	b := startBroker(t)
	createTopic(t, b, "t", 1, nil)
	const producers = 20
	for range producers {
		produce(t, b.Client(t), "t", 1) // an idempotent client: one producer id each
	}
	base := b.procKB(t, "VmRSS")
	req := kmsg.NewPtrDescribeProducersRequest()
	for range 100_000 { // 4.5 MB on the wire
		req.Topics = append(req.Topics, kmsg.DescribeProducersRequestTopic{Topic: "t", Partitions: []int32{0, 0, 0, 0, 0, 0, 0, 0, 0, 0}})
	}
	resp, err := dialRaw(t, b.Addr()).request(req)
	if err != nil {
		t.Fatalf("DescribeProducers: %v", err)
	}
	ts := resp.(*kmsg.DescribeProducersResponse).Topics
	if len(ts) != 1 || len(ts[0].Partitions) != 1 || len(ts[0].Partitions[0].ActiveProducers) != producers {
		t.Errorf("answered %d topics, want 1 with one partition of %d producers", len(ts), producers)
	}
	b.memoryBound(t, base, rssBoundMB, "DescribeProducers naming one partition a million times")
	b.alive(t, "repeated DescribeProducers partitions")
}

// TestHalfSentFrames: ten connections that send half of a 100 MiB Produce frame
// and go silent pin no more than the queued.max.request.bytes budget, other
// clients keep being served meanwhile, and connections.max.idle.ms closes them.
func TestHalfSentFrames(t *testing.T) {
	b := startBroker(t, "connections.max.idle.ms=1000")
	createTopic(t, b, "t", 1, nil)
	base := b.procKB(t, "VmRSS")
	var wg sync.WaitGroup
	conns := make([]net.Conn, 10)
	for i := range conns {
		c, err := net.DialTimeout("tcp", b.Addr(), 10*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		conns[i] = c
		wg.Add(1)
		go func() {
			defer wg.Done()
			hdr := binary.BigEndian.AppendUint32(nil, 100<<20)
			hdr = binary.BigEndian.AppendUint16(hdr, 0) // Produce
			_ = c.SetWriteDeadline(time.Now().Add(5 * time.Second))
			// A frame refused (over budget) or held back ends this write early.
			_, _ = c.Write(append(hdr, make([]byte, 50<<20)...))
		}()
	}
	// While those hang, another client is served.
	produce(t, b.Client(t), "t", 3)
	wg.Wait()
	b.memoryBound(t, base, rssBoundMB, "ten half-sent 100 MiB frames")
	for i, c := range conns {
		_ = c.SetReadDeadline(time.Now().Add(30 * time.Second))
		var one [1]byte
		_, err := c.Read(one[:])
		var ne net.Error
		if errors.As(err, &ne) && ne.Timeout() {
			t.Errorf("connection %d with a stalled frame still open after connections.max.idle.ms", i)
		}
	}
	worksAfter(t, b, "after", "half-sent frames")
}

// TestHalfSentFramesLargeProduce: with the default connections.max.idle.ms,
// ten connections that announce a 100 MiB Produce (whose cost is the whole
// default queued.max.request.bytes), send 1 MiB of it and go silent do not
// stall large requests of other clients: a producer's 1 MB batches are
// acknowledged while they stay connected.
func TestHalfSentFramesLargeProduce(t *testing.T) {
	b := startBroker(t)
	createTopic(t, b, "t", 1, nil)
	base := b.procKB(t, "VmRSS")
	for range 10 {
		c, err := net.DialTimeout("tcp", b.Addr(), 10*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		hdr := binary.BigEndian.AppendUint32(nil, 100<<20)
		hdr = binary.BigEndian.AppendUint16(hdr, 0) // Produce
		_ = c.SetWriteDeadline(time.Now().Add(10 * time.Second))
		// A frame held back unread may take less than the whole write.
		_, _ = c.Write(append(hdr, make([]byte, 1<<20)...))
	}
	cl := b.Client(t, kgo.ProducerLinger(time.Second), kgo.ProducerBatchMaxBytes(1_000_000),
		kgo.RecordDeliveryTimeout(60*time.Second))
	ctx := testCtx(t, 60*time.Second)
	var wg sync.WaitGroup
	var mu sync.Mutex
	var firstErr error
	for i := range 2000 { // two batches of about 1 MB: frames far above 32 KiB
		wg.Add(1)
		cl.Produce(ctx, &kgo.Record{Topic: "t", Value: make([]byte, 1000)}, func(_ *kgo.Record, err error) {
			defer wg.Done()
			mu.Lock()
			defer mu.Unlock()
			if err != nil && firstErr == nil {
				firstErr = fmt.Errorf("record %d: %w", i, err)
			}
		})
	}
	// Records in flight are not failed by their context: wait with a deadline.
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(60 * time.Second):
		t.Fatalf("1 MB batches beside ten half-sent 100 MiB frames: not acknowledged in 60 s")
	}
	mu.Lock()
	defer mu.Unlock()
	if firstErr != nil {
		t.Fatalf("1 MB batches beside ten half-sent 100 MiB frames: %v", firstErr)
	}
	b.memoryBound(t, base, rssBoundMB, "ten half-sent 100 MiB frames and 1 MB batches")
	worksAfter(t, b, "after", "half-sent frames")
}

// TestManyConnectionsPerIP: max.connections.per.ip refuses connections beyond it.
func TestManyConnectionsPerIP(t *testing.T) {
	b := startBroker(t, "max.connections.per.ip=20")
	var open []net.Conn
	t.Cleanup(func() {
		for _, c := range open {
			c.Close()
		}
	})
	for range 20 {
		c, err := net.DialTimeout("tcp", b.Addr(), 10*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		open = append(open, c)
	}
	extra := dialRaw(t, b.Addr())
	if _, err := extra.request(kmsg.NewPtrApiVersionsRequest()); err == nil {
		t.Error("the 21st connection from 127.0.0.1 was served with max.connections.per.ip=20")
	}
	for _, c := range open {
		c.Close()
	}
	open = nil
	eventually(t, 30*time.Second, func() error {
		c, err := net.DialTimeout("tcp", b.Addr(), 10*time.Second)
		if err != nil {
			return err
		}
		defer c.Close()
		r := &raw{t: t, c: c, br: bufio.NewReader(c)}
		_, err = r.request(kmsg.NewPtrApiVersionsRequest())
		return err
	})
}
