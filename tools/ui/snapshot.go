package ui

import (
	"context"
	"encoding/base64"
	"errors"
	"slices"
	"sort"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/ktoolhq/ktool/tools/cmdutil"
	"github.com/ktoolhq/ktool/tools/replicastate"
)

// healthListMax bounds each health list kept in a snapshot; the counts stay exact.
const healthListMax = 1000

// snapshot is one view of the cluster, shared by every viewer until the next
// refresh. It is never modified after it is published.
type snapshot struct {
	Gen        uint64        `json:"gen"`
	At         time.Time     `json:"at"`
	Took       time.Duration `json:"took_ns"`
	Requests   int64         `json:"requests"`
	ClusterID  string        `json:"cluster_id"`
	Controller int32         `json:"controller"`
	Brokers    []brokerView  `json:"brokers"`
	Errors     []string      `json:"errors"`
	Partitions int           `json:"partitions"`
	// Phases is how long each kind of request of the refresh took.
	Phases map[string]time.Duration `json:"phases_ns"`

	Offline     healthList `json:"offline"`
	UnderRepl   healthList `json:"under_replicated"`
	UnderMinISR healthList `json:"under_min_isr"`

	topics []*topicView
	byName map[string]*topicView
}

type brokerView struct {
	ID       int32  `json:"id"`
	Endpoint string `json:"endpoint"`
	Rack     string `json:"rack"`
	Up       bool   `json:"up"`
	Leaders  int    `json:"leaders"`
	Replicas int    `json:"replicas"`
}

type healthList struct {
	Count int        `json:"count"`
	Items []healthTP `json:"-"`
}

type healthTP struct {
	Topic     string  `json:"topic"`
	Partition int32   `json:"partition"`
	Leader    int32   `json:"leader"`
	Replicas  []int32 `json:"replicas"`
	ISR       []int32 `json:"isr"`
}

type topicView struct {
	Name       string          `json:"name"`
	ID         string          `json:"id"`
	Internal   bool            `json:"internal"`
	RF         int             `json:"replication_factor"`
	MinISR     int             `json:"min_insync_replicas"`
	Size       int64           `json:"size"` // bytes on the leaders; -1 when unknown
	Configs    []configView    `json:"configs"`
	Partitions []partitionView `json:"partitions"`
	Error      string          `json:"error,omitempty"`
}

type partitionView struct {
	replicastate.Partition
	Size         int64 `json:"size"`
	PreferredID  int32 `json:"preferred"`
	BelowMinISR  bool  `json:"under_min_isr"`
	OfflineState bool  `json:"offline"`
}

type configView struct {
	Name      string `json:"name"`
	Value     string `json:"value"`
	Source    string `json:"source"`
	Sensitive bool   `json:"sensitive"`
	ReadOnly  bool   `json:"read_only"`
}

// slowState is the part of a snapshot that changes slowly and costs the most
// to read (configs, log dir sizes); it is refreshed every slowEvery.
type slowState struct {
	at      time.Time
	configs map[string][]configView
	minISR  map[string]int
	sizes   map[string]map[int32]int64 // leader-replica sizes, by topic and partition
}

// cache refreshes the snapshot and publishes it to subscribers.
type cache struct {
	f         *cmdutil.Factory
	adm       *kadm.Client
	requests  *atomic.Int64
	interval  time.Duration
	slowEvery time.Duration

	refreshMu sync.Mutex // one refresh at a time
	slowStale atomic.Bool
	slow      slowState
	known     map[int32]brokerView // brokers seen alive this session, so a dead one stays listed

	mu       sync.Mutex
	cur      *snapshot
	gen      uint64
	lastWant time.Time
	subs     map[chan *snapshot]struct{}
}

func newCache(f *cmdutil.Factory, interval time.Duration) (*cache, error) {
	c := &cache{f: f, interval: interval, slowEvery: 10 * time.Second, requests: &atomic.Int64{},
		known: map[int32]brokerView{}, subs: map[chan *snapshot]struct{}{}}
	cl, err := f.Client(kgo.WithHooks(countHook{c.requests}))
	if err != nil {
		return nil, err
	}
	c.adm = kadm.NewClient(cl)
	return c, nil
}

func (c *cache) close() { c.adm.Close() }

// countHook counts the requests the console sends, so each refresh reports its cost.
type countHook struct{ n *atomic.Int64 }

func (h countHook) OnBrokerWrite(_ kgo.BrokerMetadata, _ int16, _ int, _, _ time.Duration, _ error) {
	h.n.Add(1)
}

// get returns a snapshot no older than the refresh interval, refreshing
// synchronously only when the refresher is idle or nothing was read yet.
func (c *cache) get(ctx context.Context) (*snapshot, error) {
	c.mu.Lock()
	c.lastWant = time.Now()
	cur := c.cur
	c.mu.Unlock()
	if cur != nil && time.Since(cur.At) < 3*c.interval {
		return cur, nil
	}
	return c.refresh(ctx)
}

// run refreshes every interval while someone watched in the last minute.
func (c *cache) run(ctx context.Context) {
	t := time.NewTicker(c.interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		c.mu.Lock()
		wanted := time.Since(c.lastWant) < time.Minute || len(c.subs) > 0
		c.mu.Unlock()
		if wanted {
			rctx, cancel := context.WithTimeout(ctx, max(c.f.ClientTimeout, c.interval))
			_, _ = c.refresh(rctx)
			cancel()
		}
	}
}

// invalidate makes the next read refresh, after an action changed the cluster.
func (c *cache) invalidate() {
	c.mu.Lock()
	c.cur = nil
	c.mu.Unlock()
}

// invalidateSlow makes the next refresh re-read configs and sizes too.
func (c *cache) invalidateSlow() { c.slowStale.Store(true) }

func (c *cache) subscribe() (chan *snapshot, func()) {
	ch := make(chan *snapshot, 1)
	c.mu.Lock()
	c.subs[ch] = struct{}{}
	c.lastWant = time.Now()
	c.mu.Unlock()
	return ch, func() {
		c.mu.Lock()
		delete(c.subs, ch)
		c.mu.Unlock()
	}
}

func (c *cache) publish(s *snapshot) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.gen++
	s.Gen = c.gen
	c.cur = s
	for ch := range c.subs {
		select {
		case <-ch: // a slow viewer only needs the latest
		default:
		}
		ch <- s
	}
}

// refresh reads the cluster: one Metadata request, start and end offsets (one
// ListOffsets per leader broker each), and every slowEvery the topic configs
// (one DescribeConfigs) and log dir sizes (one DescribeLogDirs per broker).
func (c *cache) refresh(ctx context.Context) (*snapshot, error) {
	c.refreshMu.Lock()
	defer c.refreshMu.Unlock()
	c.mu.Lock()
	if c.cur != nil && time.Since(c.cur.At) < c.interval/2 {
		cur := c.cur
		c.mu.Unlock()
		return cur, nil
	}
	c.mu.Unlock()

	start := time.Now()
	before := c.requests.Load()
	s := &snapshot{At: start, Controller: -1, Errors: []string{}, byName: map[string]*topicView{}, Phases: map[string]time.Duration{}}
	phase := func(name string, since time.Time) { s.Phases[name] += time.Since(since) }
	t0 := time.Now()
	m, err := cmdutil.Metadata(ctx, c.adm)
	phase("metadata", t0)
	if err != nil {
		return nil, c.f.ClusterError("reading cluster metadata", err)
	}
	s.ClusterID, s.Controller = m.Cluster, m.Controller
	live := replicastate.LiveBrokers(m)
	names := make([]string, 0, len(m.Topics))
	for name, td := range m.Topics {
		if td.Err == nil {
			names = append(names, name)
		}
	}
	sort.Strings(names)

	if c.slowStale.Swap(false) || time.Since(c.slow.at) >= c.slowEvery || !sameKeys(c.slow.configs, names) {
		c.slow = c.readSlow(ctx, m, names, s)
	}
	var starts, ends kadm.ListedOffsets
	if len(names) > 0 {
		var serr, eerr error
		t0 = time.Now()
		starts, serr = c.adm.ListStartOffsets(ctx, names...)
		ends, eerr = c.adm.ListEndOffsets(ctx, names...)
		phase("offsets", t0)
		for _, e := range []error{serr, eerr} {
			if e != nil && !isShardErrors(e) {
				s.Errors = append(s.Errors, "listing offsets: "+e.Error())
			}
		}
	}

	leaders := map[int32]int{}
	replicas := map[int32]int{}
	for _, td := range m.Topics.Sorted() {
		tv := &topicView{Name: td.Topic, Internal: td.IsInternal, MinISR: 1, Size: -1,
			RF: td.Partitions.NumReplicas(), Configs: c.slow.configs[td.Topic], Partitions: []partitionView{}}
		if td.ID != (kadm.TopicID{}) {
			// As Kafka and `ktool topic describe` print it: unpadded URL-safe base64.
			tv.ID = base64.RawURLEncoding.EncodeToString(td.ID[:])
		}
		if td.Err != nil {
			tv.Error = td.Err.Error()
		}
		if n, ok := c.slow.minISR[td.Topic]; ok {
			tv.MinISR = n
		}
		sizes, haveSizes := c.slow.sizes[td.Topic]
		if haveSizes {
			tv.Size = 0
		}
		for _, pd := range td.Partitions.Sorted() {
			p := partitionView{Partition: replicastate.FromMetadata(pd, live), Size: -1, PreferredID: -1}
			if so, ok := starts.Lookup(td.Topic, pd.Partition); ok && so.Err == nil {
				p.LogStartOffset = so.Offset
			}
			if eo, ok := ends.Lookup(td.Topic, pd.Partition); ok && eo.Err == nil {
				p.HighWatermark = eo.Offset
			}
			if len(p.Replicas) > 0 {
				p.PreferredID = p.Replicas[0]
			}
			if sz, ok := sizes[pd.Partition]; ok {
				p.Size = sz
				tv.Size += sz
			}
			p.OfflineState = p.Unavailable()
			p.BelowMinISR = !p.OfflineState && p.UnderMinISR(tv.MinISR)
			if p.Leader >= 0 {
				leaders[p.Leader]++
			}
			for _, r := range p.Replicas {
				replicas[r]++
			}
			h := healthTP{Topic: td.Topic, Partition: p.Partition.Partition, Leader: p.Leader, Replicas: p.Replicas, ISR: p.ISR}
			if p.OfflineState {
				s.Offline.add(h)
			}
			if p.UnderReplicated() {
				s.UnderRepl.add(h)
			}
			if p.BelowMinISR {
				s.UnderMinISR.add(h)
			}
			tv.Partitions = append(tv.Partitions, p)
		}
		s.Partitions += len(tv.Partitions)
		s.topics = append(s.topics, tv)
		s.byName[tv.Name] = tv
	}

	for _, b := range m.Brokers {
		bv := brokerView{ID: b.NodeID, Endpoint: b.Host + ":" + strconv.Itoa(int(b.Port)), Up: true}
		if b.Rack != nil {
			bv.Rack = *b.Rack
		}
		c.known[b.NodeID] = bv
	}
	for id := range replicas {
		if _, ok := c.known[id]; !ok {
			c.known[id] = brokerView{ID: id}
		}
	}
	for id, bv := range c.known {
		bv.Up = live[id]
		bv.Leaders, bv.Replicas = leaders[id], replicas[id]
		s.Brokers = append(s.Brokers, bv)
	}
	slices.SortFunc(s.Brokers, func(a, b brokerView) int { return int(a.ID) - int(b.ID) })

	s.Took = time.Since(start)
	s.Requests = c.requests.Load() - before
	c.publish(s)
	return s, nil
}

func (h *healthList) add(tp healthTP) {
	h.Count++
	if len(h.Items) < healthListMax {
		h.Items = append(h.Items, tp)
	}
}

func (c *cache) readSlow(ctx context.Context, m kadm.Metadata, names []string, s *snapshot) slowState {
	st := slowState{at: time.Now(), configs: map[string][]configView{}, minISR: map[string]int{},
		sizes: map[string]map[int32]int64{}}
	for _, n := range names {
		st.configs[n] = []configView{}
	}
	if len(names) == 0 {
		return st
	}
	t0 := time.Now()
	rcs, err := c.adm.DescribeTopicConfigs(ctx, names...)
	s.Phases["configs"] += time.Since(t0)
	if err != nil {
		s.Errors = append(s.Errors, "reading topic configs: "+err.Error())
	}
	for _, rc := range rcs {
		if rc.Err != nil {
			continue
		}
		cvs := make([]configView, 0, len(rc.Configs))
		for _, cfg := range rc.Configs {
			v := ""
			if cfg.Value != nil {
				v = *cfg.Value
			}
			if cfg.Sensitive {
				v = ""
			}
			if cfg.Key == "min.insync.replicas" {
				if n, err := strconv.Atoi(v); err == nil {
					st.minISR[rc.Name] = n
				}
			}
			cvs = append(cvs, configView{Name: cfg.Key, Value: v, Source: sourceName(cfg.Source), Sensitive: cfg.Sensitive})
		}
		slices.SortFunc(cvs, func(a, b configView) int {
			switch {
			case a.Name < b.Name:
				return -1
			case a.Name > b.Name:
				return 1
			}
			return 0
		})
		st.configs[rc.Name] = cvs
	}
	// Sizes are what each partition's leader holds; a broker that does not
	// answer leaves its partitions' sizes unknown.
	leaderOf := map[string]map[int32]int32{}
	for _, td := range m.Topics {
		lo := map[int32]int32{}
		for _, pd := range td.Partitions {
			lo[pd.Partition] = pd.Leader
		}
		leaderOf[td.Topic] = lo
	}
	t0 = time.Now()
	dirs, err := c.adm.DescribeAllLogDirs(ctx, nil)
	s.Phases["log dirs"] += time.Since(t0)
	if err != nil && !isShardErrors(err) {
		s.Errors = append(s.Errors, "describing log dirs: "+err.Error())
	}
	dirs.Each(func(d kadm.DescribedLogDir) {
		if d.Err != nil {
			return
		}
		for t, ps := range d.Topics {
			for p, dp := range ps {
				if l, ok := leaderOf[t][p]; !ok || l != dp.Broker || dp.IsFuture {
					continue
				}
				if st.sizes[t] == nil {
					st.sizes[t] = map[int32]int64{}
				}
				st.sizes[t][p] = dp.Size
			}
		}
	})
	return st
}

func sameKeys(m map[string][]configView, names []string) bool {
	if len(m) != len(names) {
		return false
	}
	for _, n := range names {
		if _, ok := m[n]; !ok {
			return false
		}
	}
	return true
}

func sourceName(s kmsg.ConfigSource) string {
	switch s {
	case kmsg.ConfigSourceDynamicTopicConfig:
		return "topic"
	case kmsg.ConfigSourceDynamicBrokerConfig:
		return "broker"
	case kmsg.ConfigSourceDynamicDefaultBrokerConfig:
		return "cluster default"
	case kmsg.ConfigSourceStaticBrokerConfig:
		return "broker static"
	case kmsg.ConfigSourceDefaultConfig:
		return "default"
	case kmsg.ConfigSourceDynamicBrokerLoggerConfig:
		return "broker logger"
	}
	return "unknown"
}

func isShardErrors(err error) bool {
	var se *kadm.ShardErrors
	return errors.As(err, &se)
}
