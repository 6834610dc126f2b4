package uitest

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/ktoolhq/ktool/broker/brokertest"
	"github.com/ktoolhq/ktool/tools/cmdutil/cmdtest"
	"github.com/ktoolhq/ktool/tools/ui"
)

// createTopics makes n topics of parts partitions each (replication factor 1).
func createTopics(tb testing.TB, adm *kadm.Client, prefix string, n, parts int) {
	tb.Helper()
	const batch = 10
	for i := 0; i < n; i += batch {
		names := []string{}
		for j := i; j < min(i+batch, n); j++ {
			names = append(names, fmt.Sprintf("%s-%04d", prefix, j))
		}
		// A busy controller may answer REQUEST_TIMED_OUT and create the
		// topics anyway; asking again settles it.
		brokertest.Eventually(tb, 2*time.Minute, func() error {
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			rs, err := adm.CreateTopics(ctx, int32(parts), 1, nil, names...)
			if err != nil {
				return err
			}
			for _, r := range rs {
				if r.Err != nil && !errors.Is(r.Err, kerr.TopicAlreadyExists) {
					return fmt.Errorf("creating %s: %w", r.Topic, r.Err)
				}
			}
			return nil
		})
	}
	brokertest.Eventually(tb, time.Minute, func() error {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		ts, err := adm.ListTopics(ctx)
		if err != nil {
			return err
		}
		have := 0
		for _, t := range ts {
			for _, p := range t.Partitions {
				if p.Leader >= 0 {
					have++
				}
			}
		}
		if want := n * parts; have < want {
			return fmt.Errorf("%d of %d partitions have a leader", have, want)
		}
		return nil
	})
}

func newServer(tb testing.TB, brokers []string) *ui.Server {
	tb.Helper()
	env := cmdtest.NewEnv(tb, brokers)
	env.F.ClientTimeout = 30 * time.Second
	s, err := ui.New(env.F, ui.Config{Listen: "127.0.0.1:0", Refresh: time.Second})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(s.Close)
	return s
}

func serve(tb testing.TB, s *ui.Server, path string) {
	tb.Helper()
	req := httptest.NewRequest("GET", path, nil)
	req.Host = "127.0.0.1:8080"
	rec := httptest.NewRecorder()
	s.ServeHTTP(rec, req)
	if rec.Code != http.StatusOK {
		tb.Fatalf("%s: %d %s", path, rec.Code, rec.Body.String())
	}
}

func refresh(tb testing.TB, s *ui.Server, full bool) ui.RefreshStats {
	tb.Helper()
	st, err := s.Refresh(context.Background(), full)
	if err != nil {
		tb.Fatal(err)
	}
	return st
}

// TestRequestsPerRefreshDoNotGrowWithTopics checks that a refresh costs a
// number of admin requests set by the brokers, not by the topics: tripling
// the topics leaves it unchanged.
func TestRequestsPerRefreshDoNotGrowWithTopics(t *testing.T) {
	c := brokertest.NewCluster(t, 3)
	adm := c.Admin()
	createTopics(t, adm, "a", 20, 4)
	s := newServer(t, c.Addrs())
	// The client's first connections and metadata; createTopics saw every
	// leader through one broker, and the console may ask another, whose
	// metadata can trail the controller's by a moment.
	seeAll := func(want int) {
		brokertest.Eventually(t, time.Minute, func() error {
			if st := refresh(t, s, true); st.Partitions != want {
				return fmt.Errorf("the console sees %d of %d partitions", st.Partitions, want)
			}
			return nil
		})
	}
	seeAll(80)
	fullBefore, fastBefore := refresh(t, s, true), refresh(t, s, false)
	createTopics(t, adm, "b", 40, 4)
	seeAll(240)
	fullAfter, fastAfter := refresh(t, s, true), refresh(t, s, false)
	if fullBefore.Partitions != 80 || fullAfter.Partitions != 240 || fastAfter.Partitions != fullAfter.Partitions {
		t.Fatalf("partitions %d then %d", fullBefore.Partitions, fullAfter.Partitions)
	}
	// Metadata and two ListOffsets per broker; then DescribeConfigs and
	// DescribeLogDirs per broker: 1 + 2*3, and 1 + 3 more (plus, at times, a
	// metadata refresh of the client's own).
	t.Logf("requests per refresh with %d partitions: %d (full) %d (fast); with %d: %d, %d",
		fullBefore.Partitions, fullBefore.Requests, fastBefore.Requests, fullAfter.Partitions, fullAfter.Requests, fastAfter.Requests)
	if fastAfter.Requests > 8 || fullAfter.Requests > 12 || fastAfter.Requests > fastBefore.Requests+1 || fullAfter.Requests > fullBefore.Requests+1 {
		t.Fatal("the requests of a refresh grew with the topics")
	}
}

// BenchmarkConsole measures the console with KTOOL_UI_BENCH_PARTITIONS
// partitions (100 topics of 100 by default): a full refresh of the shared
// snapshot, the every-second part of it, and the pages' API calls answered
// from it. The cluster is KTOOL_UI_BENCH_BROKERS (topics t-0000... created
// when missing), else three in-process brokers; in one process every partition
// holds open files, so 10,000 of them need brokers in their own processes
// (README: "ktool ui").
func BenchmarkConsole(b *testing.B) {
	total := 10000
	if v := os.Getenv("KTOOL_UI_BENCH_PARTITIONS"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 100 {
			b.Fatalf("KTOOL_UI_BENCH_PARTITIONS=%q: want a number >= 100", v)
		}
		total = n
	}
	var brokers []string
	if v := os.Getenv("KTOOL_UI_BENCH_BROKERS"); v != "" {
		brokers = strings.Split(v, ",")
	} else {
		brokers = brokertest.NewCluster(b, 3).Addrs()
	}
	adm := kadm.NewClient(mustClient(b, brokers))
	createTopics(b, adm, "t", total/100, 100)
	s := newServer(b, brokers)
	st := refresh(b, s, true)
	b.Logf("%d topics, %d partitions; one refresh: %v, %d requests, %v", st.Topics, st.Partitions, st.Took, st.Requests, st.Phases)

	for _, full := range []bool{true, false} {
		name := "refresh-every-second"
		if full {
			name = "refresh-with-configs-and-sizes"
		}
		b.Run(name, func(b *testing.B) {
			var reqs int64
			for b.Loop() {
				reqs += refresh(b, s, full).Requests
			}
			b.ReportMetric(float64(reqs)/float64(b.N), "requests/refresh")
		})
	}
	for _, path := range []string{"/api/cluster", "/api/topics?page=3&size=50", "/api/topics?q=t-00&page=0&size=50",
		"/api/topics/t-0042", "/api/health?kind=under_replicated"} {
		b.Run("GET "+path, func(b *testing.B) {
			refresh(b, s, false)
			for b.Loop() {
				serve(b, s, path)
			}
		})
	}
}

func mustClient(tb testing.TB, brokers []string) *kgo.Client {
	tb.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(brokers...), kgo.RequestTimeoutOverhead(time.Minute))
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(cl.Close)
	return cl
}
