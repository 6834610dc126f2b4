package e2e

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"net"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kbin"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/ktoolhq/ktool/internal/batch"
)

// rawConn speaks the Kafka framing by hand, at exactly the version set on each
// request, so tests control every byte the broker sees.
type rawConn struct {
	c    net.Conn
	br   *bufio.Reader
	corr int32
}

func dialRaw(t testing.TB, addr string) *rawConn {
	t.Helper()
	c, err := net.DialTimeout("tcp", addr, 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return &rawConn{c: c, br: bufio.NewReader(c)}
}

// encodeRequest frames req with a v1 or v2 request header.
func encodeRequest(corr int32, clientID string, req kmsg.Request) []byte {
	buf := make([]byte, 4, 128)
	buf = kbin.AppendInt16(buf, req.Key())
	buf = kbin.AppendInt16(buf, req.GetVersion())
	buf = kbin.AppendInt32(buf, corr)
	buf = kbin.AppendNullableString(buf, &clientID)
	if req.IsFlexible() {
		buf = append(buf, 0)
	}
	buf = req.AppendTo(buf)
	binary.BigEndian.PutUint32(buf, uint32(len(buf)-4))
	return buf
}

// Write sends raw bytes.
func (r *rawConn) Write(b []byte) error {
	_ = r.c.SetWriteDeadline(time.Now().Add(10 * time.Second))
	_, err := r.c.Write(b)
	return err
}

// Send writes req at its set version and returns its correlation id.
func (r *rawConn) Send(req kmsg.Request) (int32, error) {
	r.corr++
	return r.corr, r.Write(encodeRequest(r.corr, "ktool-e2e", req))
}

// ReadFrame reads one response frame within d.
func (r *rawConn) ReadFrame(d time.Duration) ([]byte, error) {
	_ = r.c.SetReadDeadline(time.Now().Add(d))
	var sz [4]byte
	if _, err := io.ReadFull(r.br, sz[:]); err != nil {
		return nil, err
	}
	n := int32(binary.BigEndian.Uint32(sz[:]))
	if n < 4 || n > 64<<20 {
		return nil, fmt.Errorf("response frame size %d", n)
	}
	buf := make([]byte, n)
	_, err := io.ReadFull(r.br, buf)
	return buf, err
}

// Receive reads the response to the request sent with corr.
func (r *rawConn) Receive(req kmsg.Request, corr int32, d time.Duration) (kmsg.Response, error) {
	frame, err := r.ReadFrame(d)
	if err != nil {
		return nil, err
	}
	return decodeResponse(req, corr, frame)
}

// Request sends req and reads its response.
func (r *rawConn) Request(req kmsg.Request) (kmsg.Response, error) {
	corr, err := r.Send(req)
	if err != nil {
		return nil, err
	}
	return r.Receive(req, corr, 30*time.Second)
}

func decodeResponse(req kmsg.Request, corr int32, frame []byte) (kmsg.Response, error) {
	if got := int32(binary.BigEndian.Uint32(frame)); got != corr {
		return nil, fmt.Errorf("correlation id %d, want %d", got, corr)
	}
	body := frame[4:]
	resp := req.ResponseKind()
	resp.SetVersion(req.GetVersion())
	// Flexible responses carry a tag buffer in the header, except ApiVersions (KIP-511).
	if resp.IsFlexible() && req.Key() != 18 {
		if len(body) == 0 || body[0] != 0 {
			return nil, errors.New("flexible response header without an empty tag buffer")
		}
		body = body[1:]
	}
	if err := resp.ReadFrom(body); err != nil {
		return nil, fmt.Errorf("decoding %s v%d response: %w", kmsg.NameForKey(req.Key()), req.GetVersion(), err)
	}
	return resp, nil
}

// ExpectClosed reads until the broker closes the connection; any response frame
// before that fails the test.
func (r *rawConn) ExpectClosed(t testing.TB) {
	t.Helper()
	_ = r.c.SetReadDeadline(time.Now().Add(15 * time.Second))
	var b [1]byte
	n, err := r.br.Read(b[:])
	if n > 0 {
		t.Fatalf("broker answered (first byte %#x) instead of closing the connection", b[0])
	}
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		t.Fatal("broker kept the connection open for 15s instead of closing it")
	}
	if err == nil {
		t.Fatal("read returned nothing and no error")
	}
}

// batchRecord is one record of a hand-built batch.
type batchRecord struct {
	key, value []byte
	tsDelta    int64
	headers    [][2][]byte
}

// encodeBatch builds a magic-v2 record batch with offsets from 0 and a correct
// CRC32C, without any codec; producerID -1 means a non-idempotent batch.
func encodeBatch(producerID int64, epoch int16, baseSeq int32, firstTS int64, recs ...batchRecord) []byte {
	var records []byte
	var maxTS int64
	for i, r := range recs {
		var body []byte
		body = append(body, 0) // attributes
		body = kbin.AppendVarlong(body, r.tsDelta)
		body = kbin.AppendVarint(body, int32(i))
		body = appendVarintBytes(body, r.key)
		body = appendVarintBytes(body, r.value)
		body = kbin.AppendVarint(body, int32(len(r.headers)))
		for _, h := range r.headers {
			body = appendVarintBytes(body, h[0])
			body = appendVarintBytes(body, h[1])
		}
		records = kbin.AppendVarint(records, int32(len(body)))
		records = append(records, body...)
		maxTS = max(maxTS, r.tsDelta)
	}
	var b []byte
	b = kbin.AppendInt64(b, 0)  // baseOffset
	b = kbin.AppendInt32(b, 0)  // length, set below
	b = kbin.AppendInt32(b, -1) // partitionLeaderEpoch
	b = append(b, 2)            // magic
	b = kbin.AppendInt32(b, 0)  // crc, set below
	crcStart := len(b)
	b = kbin.AppendInt16(b, 0) // attributes
	b = kbin.AppendInt32(b, int32(len(recs)-1))
	b = kbin.AppendInt64(b, firstTS)
	b = kbin.AppendInt64(b, firstTS+maxTS)
	b = kbin.AppendInt64(b, producerID)
	b = kbin.AppendInt16(b, epoch)
	b = kbin.AppendInt32(b, baseSeq)
	b = kbin.AppendInt32(b, int32(len(recs)))
	b = append(b, records...)
	binary.BigEndian.PutUint32(b[batch.OffLength:], uint32(len(b)-batch.LogOverhead))
	binary.BigEndian.PutUint32(b[batch.OffCRC:], crc32c(b[crcStart:]))
	return b
}

func appendVarintBytes(dst, b []byte) []byte {
	if b == nil {
		return kbin.AppendVarint(dst, -1)
	}
	return append(kbin.AppendVarint(dst, int32(len(b))), b...)
}

// produceRequest wraps one batch for one partition at the given version.
func produceRequest(version int16, acks int16, topic string, partition int32, batch []byte) *kmsg.ProduceRequest {
	req := kmsg.NewPtrProduceRequest()
	req.Version = version
	req.Acks = acks
	req.TimeoutMillis = 10000
	rt := kmsg.NewProduceRequestTopic()
	rt.Topic = topic
	rp := kmsg.NewProduceRequestTopicPartition()
	rp.Partition = partition
	rp.Records = batch
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	return req
}

// producePartition is the single partition answer of a produce response.
func producePartition(t testing.TB, resp kmsg.Response) kmsg.ProduceResponseTopicPartition {
	t.Helper()
	pr := resp.(*kmsg.ProduceResponse)
	if len(pr.Topics) != 1 || len(pr.Topics[0].Partitions) != 1 {
		t.Fatalf("produce response has %d topics, want 1 with 1 partition: %+v", len(pr.Topics), pr.Topics)
	}
	return pr.Topics[0].Partitions[0]
}

// rawRecord is one record decoded from an uncompressed batch.
type rawRecord struct {
	offset     int64
	timestamp  int64
	key, value []byte
}

// recordsOf decodes uncompressed magic-v2 batches as a fetch returns them; a
// partial batch at the end (allowed by the protocol) is skipped.
func recordsOf(b []byte) ([]rawRecord, error) {
	var out []rawRecord
	for len(b) >= 12 {
		base := int64(binary.BigEndian.Uint64(b))
		n := int(int32(binary.BigEndian.Uint32(b[batch.OffLength:])))
		if n < 49 {
			return nil, fmt.Errorf("batch at offset %d has length %d", base, n)
		}
		if len(b) < 12+n {
			break
		}
		bt := b[:batch.LogOverhead+n]
		b = b[12+n:]
		if bt[batch.OffMagic] != 2 {
			return nil, fmt.Errorf("batch at offset %d has magic %d", base, bt[batch.OffMagic])
		}
		if attr := binary.BigEndian.Uint16(bt[batch.OffAttributes:]); attr&7 != 0 {
			return nil, fmt.Errorf("batch at offset %d is compressed (attributes %#x)", base, attr)
		}
		if crc := crc32c(bt[batch.OffAttributes:]); crc != binary.BigEndian.Uint32(bt[batch.OffCRC:]) {
			return nil, fmt.Errorf("batch at offset %d fails its CRC", base)
		}
		firstTS := int64(binary.BigEndian.Uint64(bt[batch.OffFirstTimestamp:]))
		count := int(int32(binary.BigEndian.Uint32(bt[batch.OffNumRecords:])))
		rd := kbin.Reader{Src: bt[batch.HeaderSize:]}
		for range count {
			rd.Varint() // length
			rd.Int8()   // attributes
			tsDelta := rd.Varlong()
			offDelta := rd.Varint()
			key := rd.VarintBytes()
			value := rd.VarintBytes()
			for range rd.Varint() {
				rd.VarintBytes()
				rd.VarintBytes()
			}
			out = append(out, rawRecord{offset: base + int64(offDelta), timestamp: firstTS + tsDelta, key: key, value: value})
		}
		if err := rd.Complete(); err != nil {
			return nil, fmt.Errorf("batch at offset %d: %w", base, err)
		}
	}
	return out, nil
}

func crc32c(b []byte) uint32 { return crc32.Checksum(b, crc32.MakeTable(crc32.Castagnoli)) }
