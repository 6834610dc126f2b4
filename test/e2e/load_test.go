package e2e

import (
	"errors"
	"fmt"
	"net"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// openFDs counts the broker process's open file descriptors.
func openFDs(t testing.TB, b *broker) int {
	t.Helper()
	pid := b.PID()
	ents, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid))
	if err != nil {
		t.Skipf("no /proc: %v", err)
	}
	return len(ents)
}

// TestConnectionsAreReleased opens many connections that each leave in one state
// (after a request, mid-frame, during a parked long-poll fetch with a long max wait)
// and expects the broker's descriptors to come back to where they were: Kafka
// closes a connection when its client hangs up, whatever is pending on it.
func TestConnectionsAreReleased(t *testing.T) {
	b := startBroker(t)
	const topic = "churn"
	createTopic(t, b.Admin(t), topic, 1, nil)
	brokerStillWorks(t, b, topic, "warm-up")
	adm := b.Admin(t)
	var end int64
	for _, c := range []struct {
		name string
		use  func(rc *rawConn) error
	}{
		{"after a request", func(rc *rawConn) error {
			req := kmsg.NewPtrMetadataRequest()
			req.Version = 9
			_, err := rc.Request(req)
			return err
		}},
		{"mid-frame", func(rc *rawConn) error { return rc.Write([]byte{0, 0, 0, 50, 0, 3}) }},
		{"during a parked fetch", func(rc *rawConn) error {
			req := fetchRequest(topic, end, 10*time.Minute)
			corr, err := rc.Send(req)
			if err != nil {
				return err
			}
			// Make sure it is parked, not answered.
			if _, err := rc.Receive(req, corr, 100*time.Millisecond); !isTimeout(err) {
				return fmt.Errorf("fetch at the log end answered at once: %v", err)
			}
			return nil
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			eo, err := endOffsets(testCtx(t, 10*time.Second), adm, topic)
			if err != nil {
				t.Fatal(err)
			}
			end = eo[0]
			base := openFDs(t, b)
			for range 100 {
				rc := dialRaw(t, b.Addr())
				if err := c.use(rc); err != nil {
					t.Fatal(err)
				}
				rc.c.Close()
			}
			eventually(t, 30*time.Second, func() error {
				if n := openFDs(t, b); n > base+5 {
					return fmt.Errorf("%d descriptors open, %d before 100 connections came and went", n, base)
				}
				return nil
			})
			brokerStillWorks(t, b, topic, c.name)
		})
	}
}

// TestConcurrentProducersOnePartition: many clients append to one partition at
// once, in batches of different sizes while segments roll; every record is there
// once, and each producer's records keep their order.
func TestConcurrentProducersOnePartition(t *testing.T) {
	b := startBroker(t)
	adm := b.Admin(t)
	const topic, producers, each = "contended", 8, 3000
	createTopic(t, adm, topic, 1, map[string]*string{"segment.bytes": kadmString(64 << 10)})
	ctx := testCtx(t, 3*time.Minute)
	var wg sync.WaitGroup
	errs := make(chan error, producers)
	for w := range producers {
		cl := b.Client(t, kgo.DefaultProduceTopic(topic), kgo.ProducerLinger(time.Duration(w)*time.Millisecond),
			kgo.ProducerBatchMaxBytes(int32(4<<10)*int32(w+1)))
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range each {
				cl.Produce(ctx, &kgo.Record{Value: fmt.Appendf(nil, "%d-%d", w, i)}, func(_ *kgo.Record, err error) {
					if err != nil {
						select {
						case errs <- err:
						default:
						}
					}
				})
			}
			if err := cl.Flush(ctx); err != nil {
				errs <- err
			}
		}()
	}
	wg.Wait()
	select {
	case err := <-errs:
		t.Fatalf("produce: %v", err)
	default:
	}
	next := make([]int, producers)
	for _, r := range consumeRange(t, b, topic, 0, 0, producers*each) {
		w, i, ok := strings.Cut(string(r.Value), "-")
		wi, err1 := strconv.Atoi(w)
		ii, err2 := strconv.Atoi(i)
		if !ok || err1 != nil || err2 != nil || wi < 0 || wi >= producers {
			t.Fatalf("offset %d holds %q", r.Offset, r.Value)
		}
		if ii != next[wi] {
			t.Fatalf("offset %d: producer %d record %d, expected its record %d", r.Offset, wi, ii, next[wi])
		}
		next[wi]++
	}
}

func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

func kadmString(n int) *string {
	s := strconv.Itoa(n)
	return &s
}

// TestShutdownWithParkedFetch: SIGTERM while a consumer's fetch is parked for ten
// minutes still shuts down cleanly, long before the fetch would expire: a pending
// long poll is not in-flight work worth waiting for.
func TestShutdownWithParkedFetch(t *testing.T) {
	b := startBroker(t)
	const topic = "parked"
	createTopic(t, b.Admin(t), topic, 1, nil)
	rc := dialRaw(t, b.Addr())
	req := fetchRequest(topic, 0, 10*time.Minute)
	corr, err := rc.Send(req)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := rc.Receive(req, corr, 200*time.Millisecond); !isTimeout(err) {
		t.Fatalf("fetch on an empty partition answered at once: %v", err)
	}
	// The broker's own shutdown timeout is 30 s; a clean exit must not need it.
	if err := b.Broker.Stop(25 * time.Second); err != nil {
		t.Fatalf("SIGTERM with a parked fetch: %v", err)
	}
}
