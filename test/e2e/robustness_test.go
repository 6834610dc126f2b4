package e2e

import (
	"bufio"
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kbin"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/ktoolhq/ktool/internal/batch"
)

// frame prefixes body with its length.
func frame(body []byte) []byte {
	return append(binary.BigEndian.AppendUint32(nil, uint32(len(body))), body...)
}

// header encodes a v1 request header.
func header(key, version int16, corr int32) []byte {
	h := kbin.AppendInt16(nil, key)
	h = kbin.AppendInt16(h, version)
	h = kbin.AppendInt32(h, corr)
	return kbin.AppendNullableString(h, kmsg.StringPtr("robustness"))
}

// brokerStillWorks checks that the process is alive and that a well-behaved client
// on its own connection still produces and consumes.
func brokerStillWorks(t *testing.T, b *broker, topic, after string) {
	t.Helper()
	b.Alive(t)
	cl := b.Client(t, kgo.DefaultProduceTopic(topic))
	ctx := testCtx(t, 30*time.Second)
	r := &kgo.Record{Value: []byte("after " + after)}
	if err := cl.ProduceSync(ctx, r).FirstErr(); err != nil {
		t.Fatalf("produce after %s: %v", after, err)
	}
	got := consumeRange(t, b, topic, r.Partition, r.Offset, 1)
	if string(got[0].Value) != "after "+after {
		t.Fatalf("consumed %q after %s", got[0].Value, after)
	}
	cl.Close()
	b.Alive(t)
}

// rss is the resident set size of the broker process in bytes.
func rss(t testing.TB, b *broker) int64 {
	t.Helper()
	pid := b.PID()
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Skipf("no /proc: %v", err)
	}
	for _, line := range strings.Split(string(data), "\n") {
		if f := strings.Fields(line); len(f) == 3 && f[0] == "VmRSS:" {
			kb, err := strconv.ParseInt(f[1], 10, 64)
			if err != nil {
				t.Fatal(err)
			}
			return kb << 10
		}
	}
	t.Fatalf("no VmRSS in /proc/%d/status", pid)
	return 0
}

// TestHostileConnectionsAreClosed sends one kind of bad input per raw connection and
// expects the broker to close that connection without answering, and to keep
// serving everyone else.
func TestHostileConnectionsAreClosed(t *testing.T) {
	b := startBroker(t)
	const topic = "robust"
	createTopic(t, b.Admin(t), topic, 1, nil)
	rng := rand.New(rand.NewPCG(3, 4))
	random := func(n int) []byte {
		p := make([]byte, n)
		for i := range p {
			p[i] = byte(rng.Uint32())
		}
		return p
	}
	validProduce := encodeRequest(1, "robustness", produceRequest(7, -1, topic, 0,
		encodeBatch(-1, -1, -1, time.Now().UnixMilli(), batchRecord{value: []byte("never")})))

	cases := []struct {
		name     string
		data     []byte
		halfShut bool // close our write side after sending
	}{
		{name: "http request", data: []byte("GET / HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")},
		{name: "tls client hello", data: append([]byte{0x16, 0x03, 0x01, 0x02, 0x00, 0x01}, random(512)...)},
		{name: "random bytes", data: random(4096)},
		{name: "random body in a small frame", data: frame(append([]byte{0x7f, 0x7f}, random(62)...))},
		{name: "2 GiB length prefix", data: append([]byte{0x7f, 0xff, 0xff, 0xff}, random(1024)...)},
		{name: "negative length prefix", data: []byte{0xff, 0xff, 0xff, 0xfe, 0, 0, 0, 0}},
		{name: "empty frame", data: frame(nil)},
		{name: "header shorter than its fields", data: frame([]byte{0, 18, 0})},
		{name: "client id longer than the frame", data: frame(append(kbin.AppendInt32(kbin.AppendInt32(nil, 0x00120000), 7), 0x7f, 0xff, 'a'))},
		{name: "truncated frame then EOF", data: frame(header(18, 0, 1))[:9], halfShut: true},
		{name: "length larger than the data sent then EOF", data: append([]byte{0, 0, 1, 0}, header(3, 1, 1)...), halfShut: true},
		{name: "unknown API key", data: frame(header(9999, 0, 1))},
		{name: "negative API key", data: frame(header(-1, 0, 1))},
		{name: "produce at an unsupported version", data: frame(header(0, 99, 1))},
		{name: "metadata at a negative version", data: frame(header(3, -1, 1))},
		{name: "produce body cut short", data: frame(validProduce[4 : len(validProduce)-30])},
		{name: "produce body with a huge topic count", data: frame(append(append(header(0, 3, 1), kbin.AppendInt32(kbin.AppendInt32(kbin.AppendInt16(kbin.AppendInt16(nil, -1), -1), 1000), 0x7fffffff)...), random(16)...))},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			rc := dialRaw(t, b.Addr())
			if err := rc.Write(c.data); err != nil {
				t.Fatalf("writing: %v", err)
			}
			if c.halfShut {
				if err := rc.c.(*net.TCPConn).CloseWrite(); err != nil {
					t.Fatal(err)
				}
			}
			rc.ExpectClosed(t)
			brokerStillWorks(t, b, topic, c.name)
		})
	}
	if t.Failed() {
		return
	}
	// A 2 GiB length prefix must not have been allocated.
	if n := rss(t, b); n > 512<<20 {
		t.Errorf("broker resident set is %d MiB after hostile frames", n>>20)
	}
	if end, err := endOffsets(testCtx(t, 10*time.Second), b.Admin(t), topic); err != nil {
		t.Fatal(err)
	} else if want := int64(len(cases)); end[0] != want {
		t.Errorf("high watermark %d, want %d: a malformed produce was appended", end[0], want)
	}
}

// TestHalfSentFrameDoesNotBlockOthers keeps a connection open in the middle of a
// frame while other clients work.
func TestHalfSentFrameDoesNotBlockOthers(t *testing.T) {
	b := startBroker(t)
	const topic = "half-frame"
	createTopic(t, b.Admin(t), topic, 1, nil)
	for i := range 20 {
		rc := dialRaw(t, b.Addr())
		if err := rc.Write(append([]byte{0, 0, 0, 100}, header(3, 1, int32(i))...)); err != nil {
			t.Fatal(err)
		}
	}
	brokerStillWorks(t, b, topic, "20 half-sent frames")
}

// TestPipelinedRequestsThenHangUp writes many requests and closes without reading
// the answers: the broker's writer must cope with the vanished peer.
func TestPipelinedRequestsThenHangUp(t *testing.T) {
	b := startBroker(t)
	const topic = "hang-up"
	createTopic(t, b.Admin(t), topic, 1, nil)
	for range 5 {
		rc := dialRaw(t, b.Addr())
		w := bufio.NewWriter(rc.c)
		for i := range 200 {
			req := kmsg.NewPtrMetadataRequest()
			req.Version = 9
			_, _ = w.Write(encodeRequest(int32(i), "hang-up", req))
		}
		if err := w.Flush(); err != nil {
			t.Fatal(err)
		}
		rc.c.Close()
	}
	brokerStillWorks(t, b, topic, "pipelined requests and a hang-up")
}

// TestApiVersionsUnsupportedVersion: an ApiVersions request above the broker's
// range is answered in v0 with UNSUPPORTED_VERSION and the supported keys (KIP-511),
// and the connection stays usable for the retry.
func TestApiVersionsUnsupportedVersion(t *testing.T) {
	b := startBroker(t)
	rc := dialRaw(t, b.Addr())
	supported := apiVersions(t, rc, 0)
	if err := kerr.ErrorForCode(supported.ErrorCode); err != nil {
		t.Fatalf("ApiVersions v0: %v", err)
	}
	var maxAV int16 = -1
	for _, k := range supported.ApiKeys {
		if k.ApiKey == 18 {
			maxAV = k.MaxVersion
		}
	}
	if maxAV < 3 {
		t.Fatalf("ApiVersions advertises versions up to %d, want at least 3", maxAV)
	}
	// 99 is unknown to every library; maxAV+1 is a version kmsg knows but the broker
	// does not serve; both get the same v0 answer.
	for _, v := range []int16{99, maxAV + 1, 0x7fff} {
		t.Run("v"+strconv.Itoa(int(v)), func(t *testing.T) {
			rc := dialRaw(t, b.Addr())
			// The body is a flexible v3+ body: empty client software name and version,
			// no tags. A broker must not need to parse it to answer.
			body := append(header(18, v, 42), 0, 1, 1, 0)
			if err := rc.Write(frame(body)); err != nil {
				t.Fatal(err)
			}
			fr, err := rc.ReadFrame(10 * time.Second)
			if err != nil {
				t.Fatalf("no answer to ApiVersions v%d: %v", v, err)
			}
			if corr := int32(binary.BigEndian.Uint32(fr)); corr != 42 {
				t.Fatalf("correlation id %d, want 42", corr)
			}
			resp := kmsg.NewPtrApiVersionsResponse()
			resp.Version = 0
			if err := resp.ReadFrom(fr[4:]); err != nil {
				t.Fatalf("answer to ApiVersions v%d is not a v0 response: %v (% x)", v, err, fr[4:min(len(fr), 40)])
			}
			if resp.ErrorCode != kerr.UnsupportedVersion.Code {
				t.Fatalf("error %v, want UNSUPPORTED_VERSION", kerr.ErrorForCode(resp.ErrorCode))
			}
			if len(resp.ApiKeys) != len(supported.ApiKeys) {
				t.Fatalf("%d keys listed, want the %d supported ones", len(resp.ApiKeys), len(supported.ApiKeys))
			}
			// The client retries on the same connection with a supported version.
			if again := apiVersions(t, rc, 3); again.ErrorCode != 0 || len(again.ApiKeys) != len(supported.ApiKeys) {
				t.Fatalf("retry at v3: error %v, %d keys", kerr.ErrorForCode(again.ErrorCode), len(again.ApiKeys))
			}
		})
	}
	b.Alive(t)
}

func apiVersions(t testing.TB, rc *rawConn, version int16) *kmsg.ApiVersionsResponse {
	t.Helper()
	req := kmsg.NewPtrApiVersionsRequest()
	req.Version = version
	req.ClientSoftwareName = "ktool-e2e"
	req.ClientSoftwareVersion = "1"
	resp, err := rc.Request(req)
	if err != nil {
		t.Fatalf("ApiVersions v%d: %v", version, err)
	}
	return resp.(*kmsg.ApiVersionsResponse)
}

// TestCorruptRecordsAreRefused sends well-formed Produce requests whose record bytes
// are bad: each gets an error for its partition, nothing is appended, and the
// connection stays open.
func TestCorruptRecordsAreRefused(t *testing.T) {
	b := startBroker(t)
	const topic = "corrupt"
	createTopic(t, b.Admin(t), topic, 1, nil)
	good := func() []byte {
		return encodeBatch(-1, -1, -1, time.Now().UnixMilli(), batchRecord{value: []byte("v")}, batchRecord{value: []byte("w"), tsDelta: 1})
	}
	flip := func(i int) []byte { g := good(); g[i] ^= 0x40; return g }
	cases := []struct {
		name  string
		batch []byte
	}{
		{"crc mismatch in a record", flip(len(good()) - 2)},
		{"crc field wrong", flip(18)},
		{"magic 3", func() []byte { g := good(); g[16] = 3; return g }()},
		{"batch length past the end", func() []byte { g := good(); binary.BigEndian.PutUint32(g[batch.OffLength:], uint32(len(g))); return g }()},
		{"batch length too small", func() []byte { g := good(); binary.BigEndian.PutUint32(g[batch.OffLength:], 10); return g }()},
		{"cut inside the batch", good()[:40]},
		{"five bytes", []byte{1, 2, 3, 4, 5}},
		{"record count larger than the records", func() []byte {
			g := good()
			binary.BigEndian.PutUint32(g[batch.OffNumRecords:], 3)
			binary.BigEndian.PutUint32(g[batch.OffCRC:], crc32c(g[batch.OffAttributes:]))
			return g
		}()},
		{"record count negative", func() []byte {
			g := good()
			binary.BigEndian.PutUint32(g[batch.OffNumRecords:], 0xffffffff)
			binary.BigEndian.PutUint32(g[batch.OffCRC:], crc32c(g[batch.OffAttributes:]))
			return g
		}()},
	}
	rc := dialRaw(t, b.Addr())
	for _, c := range cases {
		resp, err := rc.Request(produceRequest(7, -1, topic, 0, c.batch))
		if err != nil {
			t.Fatalf("%s: %v (the connection must stay open)", c.name, err)
		}
		p := producePartition(t, resp)
		switch p.ErrorCode {
		case kerr.CorruptMessage.Code, kerr.InvalidRecord.Code, kerr.UnsupportedForMessageFormat.Code:
		default:
			t.Errorf("%s: error %v, want CORRUPT_MESSAGE or INVALID_RECORD", c.name, kerr.ErrorForCode(p.ErrorCode))
		}
	}
	if end, err := endOffsets(testCtx(t, 10*time.Second), b.Admin(t), topic); err != nil {
		t.Fatal(err)
	} else if end[0] != 0 {
		t.Fatalf("high watermark %d after only corrupt batches, want 0", end[0])
	}
	brokerStillWorks(t, b, topic, "corrupt batches")
}
