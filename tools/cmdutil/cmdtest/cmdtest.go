package cmdtest

import (
	"bytes"
	"context"
	"net"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/ktoolhq/ktool/tools/cmdutil"
)

// ClusterID is the id of every cluster Cluster starts; FakeMetadata reports it
// too, since clients drop brokers that claim another cluster.
const ClusterID = "ktool-test-cluster"

// Cluster starts a kfake cluster that is closed when the test ends.
func Cluster(t testing.TB, opts ...kfake.Opt) *kfake.Cluster {
	t.Helper()
	c, err := kfake.NewCluster(append([]kfake.Opt{kfake.ClusterID(ClusterID)}, opts...)...)
	if err != nil {
		t.Fatalf("starting kfake: %v", err)
	}
	t.Cleanup(c.Close)
	return c
}

// Env is a Factory wired to test streams and a cluster.
type Env struct {
	F      *cmdutil.Factory
	In     *bytes.Buffer
	Out    *bytes.Buffer
	ErrOut *bytes.Buffer
}

// NewEnv returns a Factory whose --brokers point at addrs, with a private
// config file and buffered streams.
func NewEnv(t testing.TB, addrs []string) *Env {
	t.Helper()
	ios, in, out, errOut := cmdutil.Test()
	f := cmdutil.NewFactory(ios, cmdutil.BuildInfo{Version: "test"})
	f.ConfigPath = filepath.Join(t.TempDir(), "config.yaml")
	f.BrokersFlag = addrs
	f.ClientTimeout = 5 * time.Second
	return &Env{F: f, In: in, Out: out, ErrOut: errOut}
}

// Ctx is a context bounded for one test.
func Ctx(t testing.TB) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// Partition describes one partition of a faked Metadata response.
type Partition struct {
	Leader   int32
	Epoch    int32
	Replicas []int32
	ISR      []int32
	Offline  []int32
}

// FakeMetadata (for clusters made by Cluster) makes every Metadata request answered with the cluster's
// brokers (those listed in live, or all when live is nil), controller
// controller, and the given topics. It lets tests show states kfake never
// reaches on its own, such as a shrunken ISR or a partition without a leader.
// After stop, kfake answers Metadata itself again.
func FakeMetadata(c *kfake.Cluster, controller int32, live []int32, topics map[string][]Partition) (stop func()) {
	addrs := c.ListenAddrs()
	var stopped atomic.Bool
	c.ControlKey(int16(kmsg.Metadata), func(kreq kmsg.Request) (kmsg.Response, error, bool) {
		if stopped.Load() {
			c.DropControl()
			return nil, nil, false
		}
		c.KeepControl()
		req := kreq.(*kmsg.MetadataRequest)
		resp := req.ResponseKind().(*kmsg.MetadataResponse)
		resp.ControllerID = controller
		cid := ClusterID
		resp.ClusterID = &cid
		for i, a := range addrs {
			id := int32(i)
			if live != nil && !slices.Contains(live, id) {
				continue
			}
			host, port := splitHostPort(a)
			b := kmsg.NewMetadataResponseBroker()
			b.NodeID, b.Host, b.Port = id, host, port
			resp.Brokers = append(resp.Brokers, b)
		}
		want := map[string]bool{}
		for _, rt := range req.Topics {
			if rt.Topic != nil {
				want[*rt.Topic] = true
			}
		}
		for _, name := range sortedKeys(topics) {
			if req.Topics != nil && !want[name] {
				continue
			}
			st := kmsg.NewMetadataResponseTopic()
			st.Topic = kmsg.StringPtr(name)
			for i, p := range topics[name] {
				sp := kmsg.NewMetadataResponseTopicPartition()
				sp.Partition = int32(i)
				sp.Leader, sp.LeaderEpoch = p.Leader, p.Epoch
				sp.Replicas, sp.ISR, sp.OfflineReplicas = p.Replicas, p.ISR, p.Offline
				if p.Leader < 0 {
					sp.ErrorCode = 5 // LEADER_NOT_AVAILABLE
				}
				st.Partitions = append(st.Partitions, sp)
			}
			resp.Topics = append(resp.Topics, st)
		}
		for name := range want {
			if _, ok := topics[name]; !ok {
				st := kmsg.NewMetadataResponseTopic()
				st.Topic = kmsg.StringPtr(name)
				st.ErrorCode = 3 // UNKNOWN_TOPIC_OR_PARTITION
				resp.Topics = append(resp.Topics, st)
			}
		}
		return resp, nil, true
	})
	return func() { stopped.Store(true) }
}

// SyncBuffer is a bytes.Buffer safe for one writer and one reader, for
// commands that keep writing (--watch) while the test reads.
type SyncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *SyncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

// String returns what was written so far.
func (s *SyncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// WaitFor polls cond until it holds or the deadline passes.
func WaitFor(t testing.TB, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func splitHostPort(a string) (string, int32) {
	host, port, _ := net.SplitHostPort(a)
	p, _ := strconv.Atoi(port)
	return host, int32(p)
}

func sortedKeys(m map[string][]Partition) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
