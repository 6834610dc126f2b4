package hostile

import (
	"bufio"
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kbin"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/ktoolhq/ktool/internal/brokerproc"
	"github.com/ktoolhq/ktool/internal/brokerproc/proctest"
	"github.com/ktoolhq/ktool/internal/testbin"
)

var (
	ktoolBin string
	buildErr error
)

func TestMain(m *testing.M) {
	var cleanup func()
	ktoolBin, cleanup, buildErr = testbin.Build()
	code := m.Run()
	cleanup()
	os.Exit(code)
}

// broker is one `ktool broker start` child (internal/brokerproc). Its log dir
// is root/data; root holds nothing else but what a test puts there, so anything
// a request creates or removes outside log.dirs shows in root's listing.
type broker struct {
	*brokerproc.Broker
	root, dir string
}

// startBroker starts a standalone broker; overrides are key=value settings.
func startBroker(t *testing.T, overrides ...string) *broker {
	t.Helper()
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	root := t.TempDir()
	dir := filepath.Join(root, "data")
	p := proctest.Broker(t, brokerproc.Spec{Bin: ktoolBin, ID: 0, Dir: dir, Overrides: overrides}, 20*time.Second)
	return &broker{Broker: p, root: root, dir: dir}
}

// procKB reads a "VmRSS"/"VmHWM" line of /proc/<pid>/status, in KiB.
func (b *broker) procKB(t testing.TB, field string) int64 {
	t.Helper()
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", b.PID()))
	if err != nil {
		t.Fatalf("reading the broker's /proc status (is it alive?): %v", err)
	}
	for _, line := range strings.Split(string(data), "\n") {
		if rest, ok := strings.CutPrefix(line, field+":"); ok {
			n, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(rest), "kB")), 10, 64)
			if err != nil {
				t.Fatalf("%s: %v", line, err)
			}
			return n
		}
	}
	t.Fatalf("no %s in /proc status", field)
	return 0
}

// memoryBound fails the test when the broker's peak RSS grew more than limitMB
// above base (KiB, taken before the attack). It is not a timing assertion: the
// peak is whatever the attack made the broker hold.
func (b *broker) memoryBound(t testing.TB, base int64, limitMB int64, what string) {
	t.Helper()
	peak := b.procKB(t, "VmHWM")
	t.Logf("%s: RSS peak %d MiB (baseline %d MiB, growth %d MiB, bound %d MiB)",
		what, peak>>10, base>>10, (peak-base)>>10, limitMB)
	if peak-base > limitMB<<10 {
		t.Errorf("%s: the broker's peak RSS grew by %d MiB, more than %d MiB", what, (peak-base)>>10, limitMB)
	}
}

// alive fails unless the broker process runs and answers Metadata.
func (b *broker) alive(t testing.TB, after string) {
	t.Helper()
	if !b.Running() {
		t.Fatalf("the broker exited after %s: %v", after, b.ExitErr())
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := b.Admin(t).BrokerMetadata(ctx); err != nil {
		t.Fatalf("the broker does not answer Metadata after %s: %v", after, err)
	}
}

func (b *broker) Client(t testing.TB, opts ...kgo.Opt) *kgo.Client {
	t.Helper()
	cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(b.Addr())}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	return cl
}

func (b *broker) Admin(t testing.TB) *kadm.Client { return kadm.NewClient(b.Client(t)) }

// outside lists everything under root except the log dir: what a request must
// never create or remove.
func (b *broker) outside(t testing.TB) []string {
	t.Helper()
	var out []string
	err := filepath.Walk(b.root, func(p string, info os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		if p == b.dir {
			return filepath.SkipDir
		}
		rel, _ := filepath.Rel(b.root, p)
		out = append(out, rel)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	sort.Strings(out)
	return out
}

func testCtx(t testing.TB, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

func eventually(t testing.TB, total time.Duration, f func() error) {
	t.Helper()
	deadline := time.Now().Add(total)
	for {
		err := f()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("still failing after %v: %v", total, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// raw speaks Kafka framing by hand, so tests send exactly the bytes they mean.
type raw struct {
	t    testing.TB
	c    net.Conn
	br   *bufio.Reader
	corr int32
}

func dialRaw(t testing.TB, addr string) *raw {
	t.Helper()
	c, err := net.DialTimeout("tcp", addr, 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return &raw{t: t, c: c, br: bufio.NewReader(c)}
}

func encode(corr int32, req kmsg.Request) []byte {
	buf := make([]byte, 4, 128)
	buf = kbin.AppendInt16(buf, req.Key())
	buf = kbin.AppendInt16(buf, req.GetVersion())
	buf = kbin.AppendInt32(buf, corr)
	id := "ktool-hostile"
	buf = kbin.AppendNullableString(buf, &id)
	if req.IsFlexible() {
		buf = append(buf, 0)
	}
	buf = req.AppendTo(buf)
	binary.BigEndian.PutUint32(buf, uint32(len(buf)-4))
	return buf
}

// request sends req and decodes its answer; an error means no answer (closed).
func (r *raw) request(req kmsg.Request) (kmsg.Response, error) {
	r.corr++
	_ = r.c.SetDeadline(time.Now().Add(30 * time.Second))
	if _, err := r.c.Write(encode(r.corr, req)); err != nil {
		return nil, err
	}
	var sz [4]byte
	if _, err := io.ReadFull(r.br, sz[:]); err != nil {
		return nil, err
	}
	n := binary.BigEndian.Uint32(sz[:])
	if n < 4 || n > 256<<20 {
		return nil, fmt.Errorf("response size %d", n)
	}
	buf := make([]byte, n)
	if _, err := io.ReadFull(r.br, buf); err != nil {
		return nil, err
	}
	body := buf[4:]
	resp := req.ResponseKind()
	resp.SetVersion(req.GetVersion())
	if resp.IsFlexible() && req.Key() != 18 {
		rd := kbin.Reader{Src: body}
		for n := rd.Uvarint(); n > 0; n-- {
			rd.Uvarint()
			rd.Span(int(rd.Uvarint()))
		}
		body = rd.Src
	}
	return resp, resp.ReadFrom(body)
}
