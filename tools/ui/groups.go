package ui

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"

	"github.com/ktoolhq/ktool/tools/group"
)

const (
	lagHistoryMax = 300 // points per group: 5 minutes at the default refresh
	groupsTracked = 100 // groups whose lag history is kept
)

type lagPoint struct {
	At  int64 `json:"at"` // unix ms
	Lag int64 `json:"lag"`
}

type groupEntry struct {
	at      time.Time
	g       group.Group
	err     error
	history []lagPoint
}

// groupCache shares group descriptions among viewers: each is read from the
// cluster at most once per refresh interval, and every read adds a point to
// the group's lag history.
type groupCache struct {
	c        *cache
	interval time.Duration

	mu     sync.Mutex
	list   []kadm.ListedGroup
	listAt time.Time
	listMu sync.Mutex
	byName map[string]*groupEntry
	readMu sync.Mutex
}

func newGroupCache(c *cache, interval time.Duration) *groupCache {
	return &groupCache{c: c, interval: interval, byName: map[string]*groupEntry{}}
}

func (gc *groupCache) listed(ctx context.Context) ([]kadm.ListedGroup, error) {
	gc.listMu.Lock()
	defer gc.listMu.Unlock()
	if time.Since(gc.listAt) < gc.interval && gc.list != nil {
		return gc.list, nil
	}
	ls, err := gc.c.adm.ListGroups(ctx)
	if err != nil && !isShardErrors(err) {
		return nil, gc.c.f.ClusterError("listing groups", err)
	}
	out := make([]kadm.ListedGroup, 0, len(ls))
	for _, g := range ls {
		out = append(out, g)
	}
	slices.SortFunc(out, func(a, b kadm.ListedGroup) int { return strings.Compare(a.Group, b.Group) })
	gc.list, gc.listAt = out, time.Now()
	return out, nil
}

func (gc *groupCache) describe(ctx context.Context, name string) (*groupEntry, error) {
	gc.readMu.Lock()
	defer gc.readMu.Unlock()
	gc.mu.Lock()
	e := gc.byName[name]
	gc.mu.Unlock()
	if e != nil && time.Since(e.at) < gc.interval {
		return e, nil
	}
	gs, err := group.Load(ctx, gc.c.adm, []string{name})
	now := time.Now()
	gc.mu.Lock()
	defer gc.mu.Unlock()
	if e == nil {
		if len(gc.byName) >= groupsTracked {
			gc.evictOldest()
		}
		e = &groupEntry{}
		gc.byName[name] = e
	}
	e.at, e.err = now, err
	if err == nil {
		e.g = gs[0]
		e.history = append(e.history, lagPoint{At: now.UnixMilli(), Lag: e.g.TotalLag})
		if len(e.history) > lagHistoryMax {
			e.history = slices.Clone(e.history[len(e.history)-lagHistoryMax:])
		}
	}
	return e, nil
}

func (gc *groupCache) evictOldest() {
	var oldest string
	var at time.Time
	for n, e := range gc.byName {
		if oldest == "" || e.at.Before(at) {
			oldest, at = n, e.at
		}
	}
	delete(gc.byName, oldest)
}

func (gc *groupCache) forget(name string) {
	gc.mu.Lock()
	delete(gc.byName, name)
	gc.mu.Unlock()
	gc.listMu.Lock()
	gc.listAt = time.Time{}
	gc.listMu.Unlock()
}

type groupRow struct {
	Group        string `json:"group"`
	State        string `json:"state"`
	ProtocolType string `json:"protocol_type"`
	Coordinator  int32  `json:"coordinator"`
	Members      int    `json:"members"`
}

func (s *Server) apiGroups(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := s.f.RequestContext(r.Context())
	defer cancel()
	ls, err := s.groups.listed(ctx)
	if err != nil {
		writeError(w, http.StatusBadGateway, err)
		return
	}
	filter := strings.ToLower(r.URL.Query().Get("q"))
	var matched []kadm.ListedGroup
	for _, g := range ls {
		if filter == "" || strings.Contains(strings.ToLower(g.Group), filter) {
			matched = append(matched, g)
		}
	}
	page, size := pageParams(r, 50, 200)
	shown := pageOf(matched, page, size)
	names := make([]string, len(shown))
	for i, g := range shown {
		names[i] = g.Group
	}
	// Members are counted for the page shown only: one DescribeGroups per
	// coordinator, whatever the number of groups in the cluster.
	var described kadm.DescribedGroups
	if len(names) > 0 {
		described, _ = s.cache.adm.DescribeGroups(ctx, names...)
	}
	rows := []groupRow{}
	for _, g := range shown {
		row := groupRow{Group: g.Group, State: g.State, ProtocolType: g.ProtocolType, Coordinator: g.Coordinator}
		if d, ok := described[g.Group]; ok && d.Err == nil {
			row.Members, row.State = len(d.Members), d.State
		}
		rows = append(rows, row)
	}
	writeJSON(w, map[string]any{"total": len(matched), "page": page, "size": size, "groups": rows})
}

func (s *Server) apiGroup(w http.ResponseWriter, r *http.Request) {
	name := r.PathValue("name")
	if name == "" || len(name) > 1024 {
		writeError(w, http.StatusBadRequest, fmt.Errorf("bad group name"))
		return
	}
	ctx, cancel := s.f.RequestContext(r.Context())
	defer cancel()
	e, err := s.groups.describe(ctx, name)
	if err != nil {
		writeError(w, http.StatusBadGateway, err)
		return
	}
	s.groups.mu.Lock()
	g, gerr, hist := e.g, e.err, slices.Clone(e.history)
	s.groups.mu.Unlock()
	if gerr != nil {
		writeError(w, http.StatusNotFound, gerr)
		return
	}
	writeJSON(w, map[string]any{"group": g, "history": hist, "read_only": s.cfg.ReadOnly})
}
