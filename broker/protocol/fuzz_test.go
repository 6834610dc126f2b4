package protocol_test

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"testing"

	"github.com/twmb/franz-go/pkg/kbin"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/ktoolhq/ktool/broker/protocol"
)

// encodeHeaderAndBody is a request frame without its size prefix: v1 header, a tag
// buffer for flexible versions, then the body.
func encodeHeaderAndBody(req kmsg.Request, corr int32, clientID *string) []byte {
	b := kbin.AppendInt16(nil, req.Key())
	b = kbin.AppendInt16(b, req.GetVersion())
	b = kbin.AppendInt32(b, corr)
	b = kbin.AppendNullableString(b, clientID)
	if req.IsFlexible() {
		b = append(b, 0)
	}
	return req.AppendTo(b)
}

// seedRequests are well-formed frames of every key kmsg knows at its lowest and
// highest version, plus a few with content, so the fuzzer starts from valid shapes.
func seedRequests() [][]byte {
	var out [][]byte
	id := "seed"
	for key := int16(0); key < 100; key++ {
		req := kmsg.RequestForKey(key)
		if req == nil {
			continue
		}
		for _, v := range []int16{0, req.MaxVersion()} {
			r := kmsg.RequestForKey(key)
			r.SetVersion(v)
			out = append(out, encodeHeaderAndBody(r, 7, &id))
		}
	}
	produce := kmsg.NewPtrProduceRequest()
	produce.Version = 9
	produce.Acks = -1
	rt := kmsg.NewProduceRequestTopic()
	rt.Topic = "t"
	rp := kmsg.NewProduceRequestTopicPartition()
	rp.Records = bytes.Repeat([]byte{1}, 70)
	rt.Partitions = append(rt.Partitions, rp)
	produce.Topics = append(produce.Topics, rt)
	out = append(out, encodeHeaderAndBody(produce, 1, nil))
	meta := kmsg.NewPtrMetadataRequest()
	meta.Version = 12
	mt := kmsg.NewMetadataRequestTopic()
	mt.Topic = kmsg.StringPtr("x")
	meta.Topics = append(meta.Topics, mt)
	out = append(out, encodeHeaderAndBody(meta, 2, &id))
	av := kmsg.NewPtrApiVersionsRequest()
	av.Version = 99 // unsupported: the body must not matter
	out = append(out, encodeHeaderAndBody(av, 3, &id))
	out = append(out, nil, []byte{0, 18}, []byte{0, 18, 0, 3, 0, 0, 0, 1, 0x7f, 0xff})
	return out
}

// FuzzParseRequest: ParseRequest never panics, and what it accepts is consistent:
// the header matches the request, and the request encodes to a frame it accepts
// again with the same header.
func FuzzParseRequest(f *testing.F) {
	for _, s := range seedRequests() {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, frame []byte) {
		h, req, err := protocol.ParseRequest(frame)
		if protocol.IsUnsupportedVersion(err) {
			if req == nil {
				t.Fatalf("unsupported version without the request kind (key %d)", h.Key)
			}
			if h.Version >= 0 && h.Version <= req.MaxVersion() {
				t.Fatalf("version %d of key %d called unsupported, kmsg knows up to %d", h.Version, h.Key, req.MaxVersion())
			}
			return
		}
		if err != nil {
			return
		}
		if req == nil || req.Key() != h.Key || req.GetVersion() != h.Version {
			t.Fatalf("header key %d v%d, request %v", h.Key, h.Version, req)
		}
		if h.Flexible != req.IsFlexible() {
			t.Fatalf("header flexible %v, request flexible %v", h.Flexible, req.IsFlexible())
		}
		again := encodeHeaderAndBody(req, h.CorrelationID, &h.ClientID)
		h2, req2, err := protocol.ParseRequest(again)
		if err != nil {
			t.Fatalf("re-encoded %s v%d does not parse: %v", kmsg.NameForKey(h.Key), h.Version, err)
		}
		if h2 != h || req2.Key() != req.Key() {
			t.Fatalf("re-encoded header %+v, first %+v", h2, h)
		}
		if !bytes.Equal(req2.AppendTo(nil), req.AppendTo(nil)) {
			t.Fatalf("%s v%d does not survive a second round trip", kmsg.NameForKey(h.Key), h.Version)
		}
	})
}

// FuzzReadFrame: ReadFrame never panics, refuses sizes outside [0, max] before
// reading the body, and otherwise returns exactly the prefixed bytes, leaving the
// rest of the stream unread.
func FuzzReadFrame(f *testing.F) {
	f.Add([]byte{0, 0, 0, 3, 'a', 'b', 'c', 'd'}, int32(100))
	f.Add([]byte{0, 0, 0, 0}, int32(0))
	f.Add([]byte{0x7f, 0xff, 0xff, 0xff, 1, 2, 3}, int32(1<<20))
	f.Add([]byte{0xff, 0xff, 0xff, 0xff}, int32(100))
	f.Add([]byte{0, 0, 1}, int32(100))
	f.Add([]byte{0, 0, 0, 10, 1, 2}, int32(100))
	f.Add([]byte{0, 0, 0, 5, 1, 2, 3, 4, 5}, int32(4))
	f.Add([]byte{}, int32(-1))
	f.Fuzz(func(t *testing.T, stream []byte, maxSize int32) {
		// ReadFrame allocates the declared size up front; keep the limit small so
		// the fuzzer spends its time on parsing rather than on gigabyte buffers.
		if maxSize > 1<<20 {
			maxSize %= 1 << 20
		}
		r := bufio.NewReader(bytes.NewReader(stream))
		frame, err := protocol.ReadFrame(r, maxSize)
		if len(stream) < 4 {
			if err == nil {
				t.Fatalf("frame %x from %d bytes", frame, len(stream))
			}
			return
		}
		n := int32(binary.BigEndian.Uint32(stream))
		if n < 0 || n > maxSize {
			if !errors.Is(err, protocol.ErrFrameTooLarge) {
				t.Fatalf("size %d with limit %d: %v, want ErrFrameTooLarge", n, maxSize, err)
			}
			return
		}
		if int(n) > len(stream)-4 {
			if err == nil {
				t.Fatalf("size %d with %d bytes after it: no error", n, len(stream)-4)
			}
			return
		}
		if err != nil {
			t.Fatalf("size %d, limit %d, %d bytes: %v", n, maxSize, len(stream), err)
		}
		if !bytes.Equal(frame, stream[4:4+n]) {
			t.Fatalf("frame %x, want %x", frame, stream[4:4+n])
		}
		rest, _ := io.ReadAll(r)
		if !bytes.Equal(rest, stream[4+n:]) {
			t.Fatalf("left %d bytes unread, want %d", len(rest), len(stream)-4-int(n))
		}
	})
}
