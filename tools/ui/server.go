package ui

import (
	"context"
	"embed"
	"encoding/json"
	"errors"
	"fmt"
	"html/template"
	"io/fs"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/ktoolhq/ktool/tools/cmdutil"
	"github.com/ktoolhq/ktool/tools/zk"
)

//go:embed assets
var assets embed.FS

const (
	maxStreams = 256 // event streams open at once
	maxBrowses = 4   // message browses at once
)

// acquire takes a slot of sem, or answers 503 when none is free.
func acquire(w http.ResponseWriter, sem chan struct{}, what string) bool {
	select {
	case sem <- struct{}{}:
		return true
	default:
		writeError(w, http.StatusServiceUnavailable, fmt.Errorf("too many %s at once; try again", what))
		return false
	}
}

// Config is what a console needs besides the cluster connection.
type Config struct {
	Listen    string        // host:port the console is reached on (for the Host check)
	ReadOnly  bool          // offer no action
	Auth      Auth          // optional credentials
	Zookeeper string        // ZooKeeper host:port[/chroot], or "" for none
	Refresh   time.Duration // snapshot refresh interval
}

// Server is the console's HTTP handler and its background refresher.
type Server struct {
	f     *cmdutil.Factory
	cfg   Config
	cache *cache
	guard *guard
	page  *template.Template
	mux   *http.ServeMux

	groups *groupCache

	// Bounds on what viewers can make the console hold at once.
	streams  chan struct{} // open event streams
	browsing chan struct{} // message browses in flight (each is a Kafka client)

	zkMu sync.Mutex
	zk   *zk.Conn
}

// New builds a console on the factory's cluster connection. Run starts its
// refresher; Close releases its clients.
func New(f *cmdutil.Factory, cfg Config) (*Server, error) {
	if cfg.Refresh <= 0 {
		cfg.Refresh = time.Second
	}
	g, err := newGuard(cfg.Auth, cfg.Listen)
	if err != nil {
		return nil, err
	}
	c, err := newCache(f, cfg.Refresh)
	if err != nil {
		return nil, err
	}
	page, err := template.ParseFS(assets, "assets/index.html")
	if err != nil {
		c.close()
		return nil, err
	}
	s := &Server{f: f, cfg: cfg, cache: c, guard: g, page: page, mux: http.NewServeMux(),
		groups: newGroupCache(c, cfg.Refresh), streams: make(chan struct{}, maxStreams), browsing: make(chan struct{}, maxBrowses)}
	s.routes()
	return s, nil
}

// RefreshStats is what one refresh of the shared snapshot cost.
type RefreshStats struct {
	Brokers    int
	Topics     int
	Partitions int
	Took       time.Duration
	Requests   int64
	Phases     map[string]time.Duration // time per kind of request
}

// Refresh reads the cluster now, configs and log dir sizes too when full, and
// shares the result with every viewer.
func (s *Server) Refresh(ctx context.Context, full bool) (RefreshStats, error) {
	s.cache.invalidate()
	if full {
		s.cache.invalidateSlow()
	}
	snap, err := s.cache.refresh(ctx)
	if err != nil {
		return RefreshStats{}, err
	}
	return RefreshStats{Brokers: len(snap.Brokers), Topics: len(snap.topics), Partitions: snap.Partitions,
		Took: snap.Took, Requests: snap.Requests, Phases: snap.Phases}, nil
}

// Run refreshes the shared snapshot until ctx ends.
func (s *Server) Run(ctx context.Context) { s.cache.run(ctx) }

// Close releases the Kafka and ZooKeeper clients.
func (s *Server) Close() {
	s.cache.close()
	s.zkMu.Lock()
	if s.zk != nil {
		s.zk.Close()
	}
	s.zkMu.Unlock()
}

// ServeHTTP serves pages, assets, the JSON API and the event stream.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s.guard.wrap(s.mux).ServeHTTP(w, r)
}

func (s *Server) routes() {
	static, _ := fs.Sub(assets, "assets")
	files := http.FileServerFS(static)
	s.mux.Handle("GET /static/", http.StripPrefix("/static/", files))
	for _, p := range []string{"GET /{$}", "GET /topics", "GET /topics/{name}", "GET /groups", "GET /groups/{name}",
		"GET /messages", "GET /zookeeper"} {
		s.mux.HandleFunc(p, s.servePage)
	}
	s.mux.HandleFunc("GET /api/events", s.serveEvents)
	s.mux.HandleFunc("GET /api/cluster", s.apiCluster)
	s.mux.HandleFunc("GET /api/health", s.apiHealth)
	s.mux.HandleFunc("GET /api/topics", s.apiTopics)
	s.mux.HandleFunc("GET /api/topics/{name}", s.apiTopic)
	s.mux.HandleFunc("GET /api/groups", s.apiGroups)
	s.mux.HandleFunc("GET /api/groups/{name}", s.apiGroup)
	s.mux.HandleFunc("GET /api/messages", s.apiMessages)
	s.mux.HandleFunc("GET /api/zookeeper", s.apiZooKeeper)
	s.mux.HandleFunc("POST /api/actions/{action}", s.apiAction)
}

type pageData struct {
	CSRF      string
	ReadOnly  bool
	Zookeeper bool
}

func (s *Server) servePage(w http.ResponseWriter, r *http.Request) {
	sess := s.guard.session(w, r)
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	_ = s.page.Execute(w, pageData{CSRF: s.guard.csrfToken(sess), ReadOnly: s.cfg.ReadOnly, Zookeeper: s.cfg.Zookeeper != ""})
}

// serveEvents streams one "snapshot" event per refresh; pages re-read their
// data from the shared snapshot when one arrives.
func (s *Server) serveEvents(w http.ResponseWriter, r *http.Request) {
	fl, ok := w.(http.Flusher)
	if !ok {
		http.Error(w, "streaming unsupported", http.StatusInternalServerError)
		return
	}
	if !acquire(w, s.streams, "open pages") {
		return
	}
	defer func() { <-s.streams }()
	ch, cancel := s.cache.subscribe()
	defer cancel()
	w.Header().Set("Content-Type", "text/event-stream")
	send := func(snap *snapshot) {
		fmt.Fprintf(w, "event: snapshot\ndata: {\"gen\":%d,\"at\":%d}\n\n", snap.Gen, snap.At.UnixMilli())
		fl.Flush()
	}
	fmt.Fprint(w, "retry: 1000\n\n")
	fl.Flush()
	if snap, err := s.cache.get(r.Context()); err == nil {
		send(snap)
	}
	keep := time.NewTicker(15 * time.Second)
	defer keep.Stop()
	for {
		select {
		case <-r.Context().Done():
			return
		case snap := <-ch:
			send(snap)
		case <-keep.C:
			fmt.Fprint(w, ": keep-alive\n\n")
			fl.Flush()
		}
	}
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(true)
	_ = enc.Encode(v)
}

func writeError(w http.ResponseWriter, code int, err error) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(map[string]string{"error": err.Error()})
}

func (s *Server) snapshot(w http.ResponseWriter, r *http.Request) (*snapshot, bool) {
	ctx, cancel := s.f.RequestContext(r.Context())
	defer cancel()
	snap, err := s.cache.get(ctx)
	if err != nil {
		writeError(w, http.StatusBadGateway, err)
		return nil, false
	}
	return snap, true
}

// pageParams reads page (from 0) and size, size bounded by limit.
func pageParams(r *http.Request, def, limit int) (page, size int) {
	page, _ = strconv.Atoi(r.URL.Query().Get("page"))
	size, _ = strconv.Atoi(r.URL.Query().Get("size"))
	if size <= 0 {
		size = def
	}
	return max(page, 0), min(size, limit)
}

func pageOf[T any](xs []T, page, size int) []T {
	lo := min(page*size, len(xs))
	return xs[lo:min(lo+size, len(xs))]
}

type meta struct {
	Gen        uint64 `json:"gen"`
	At         int64  `json:"at"`
	TookMillis int64  `json:"took_ms"`
	Requests   int64  `json:"requests"`
	Partitions int    `json:"partitions"`
	Topics     int    `json:"topics"`
}

func metaOf(s *snapshot) meta {
	return meta{Gen: s.Gen, At: s.At.UnixMilli(), TookMillis: s.Took.Milliseconds(), Requests: s.Requests,
		Partitions: s.Partitions, Topics: len(s.topics)}
}

func (s *Server) apiCluster(w http.ResponseWriter, r *http.Request) {
	snap, ok := s.snapshot(w, r)
	if !ok {
		return
	}
	page, size := pageParams(r, 100, 500)
	up := 0
	for _, b := range snap.Brokers {
		if b.Up {
			up++
		}
	}
	writeJSON(w, map[string]any{
		"meta": metaOf(snap), "cluster_id": snap.ClusterID, "controller": snap.Controller,
		"brokers_total": len(snap.Brokers), "brokers_up": up, "brokers": pageOf(snap.Brokers, page, size),
		"offline": snap.Offline.Count, "under_replicated": snap.UnderRepl.Count, "under_min_isr": snap.UnderMinISR.Count,
		"errors": snap.Errors, "read_only": s.cfg.ReadOnly,
	})
}

func (s *Server) apiHealth(w http.ResponseWriter, r *http.Request) {
	snap, ok := s.snapshot(w, r)
	if !ok {
		return
	}
	var list healthList
	switch r.URL.Query().Get("kind") {
	case "offline":
		list = snap.Offline
	case "under_replicated":
		list = snap.UnderRepl
	case "under_min_isr":
		list = snap.UnderMinISR
	default:
		writeError(w, http.StatusBadRequest, errors.New("kind must be offline, under_replicated or under_min_isr"))
		return
	}
	page, size := pageParams(r, 50, 200)
	writeJSON(w, map[string]any{"meta": metaOf(snap), "count": list.Count, "listed": len(list.Items),
		"items": pageOf(list.Items, page, size)})
}

type topicRow struct {
	Name       string       `json:"name"`
	Internal   bool         `json:"internal"`
	Partitions int          `json:"partitions"`
	RF         int          `json:"replication_factor"`
	Size       int64        `json:"size"`
	URP        int          `json:"under_replicated"`
	Offline    int          `json:"offline"`
	Overrides  []configView `json:"overrides"`
	Error      string       `json:"error,omitempty"`
}

func (s *Server) apiTopics(w http.ResponseWriter, r *http.Request) {
	snap, ok := s.snapshot(w, r)
	if !ok {
		return
	}
	q := r.URL.Query()
	filter := strings.ToLower(q.Get("q"))
	if len(filter) > 249 {
		filter = filter[:249]
	}
	internal := q.Get("internal") == "1"
	page, size := pageParams(r, 50, 500)
	var matched []*topicView
	for _, t := range snap.topics {
		if (t.Internal && !internal) || (filter != "" && !strings.Contains(strings.ToLower(t.Name), filter)) {
			continue
		}
		matched = append(matched, t)
	}
	rows := []topicRow{}
	for _, t := range pageOf(matched, page, size) {
		row := topicRow{Name: t.Name, Internal: t.Internal, Partitions: len(t.Partitions), RF: t.RF, Size: t.Size,
			Overrides: []configView{}, Error: t.Error}
		for _, p := range t.Partitions {
			if p.UnderReplicated() {
				row.URP++
			}
			if p.OfflineState {
				row.Offline++
			}
		}
		for _, c := range t.Configs {
			if c.Source == "topic" {
				row.Overrides = append(row.Overrides, c)
			}
		}
		rows = append(rows, row)
	}
	writeJSON(w, map[string]any{"meta": metaOf(snap), "total": len(matched), "page": page, "size": size, "topics": rows})
}

func (s *Server) apiTopic(w http.ResponseWriter, r *http.Request) {
	snap, ok := s.snapshot(w, r)
	if !ok {
		return
	}
	t, ok := snap.byName[r.PathValue("name")]
	if !ok {
		writeError(w, http.StatusNotFound, fmt.Errorf("no topic %q", r.PathValue("name")))
		return
	}
	// A topic can have thousands of partitions: they come a page at a time.
	page, size := pageParams(r, 1000, 1000)
	view := *t
	view.Partitions = pageOf(t.Partitions, page, size)
	writeJSON(w, map[string]any{"meta": metaOf(snap), "topic": view, "partitions_total": len(t.Partitions),
		"page": page, "size": size, "controller": snap.Controller, "read_only": s.cfg.ReadOnly})
}
