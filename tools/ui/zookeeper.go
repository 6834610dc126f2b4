package ui

import (
	"context"
	"errors"
	"net/http"
	"sort"
	"strings"

	"github.com/ktoolhq/ktool/internal/zkdata"
	"github.com/ktoolhq/ktool/tools/controller"
	"github.com/ktoolhq/ktool/tools/zk"
)

const (
	znodeShowBytes   = 64 << 10 // data shown of one znode
	znodeMaxChildren = 1000     // children listed of one znode
)

// zkConn returns the console's ZooKeeper session, dialling it on first use
// and again after it failed.
func (s *Server) zkConn(ctx context.Context) (*zk.Conn, error) {
	s.zkMu.Lock()
	defer s.zkMu.Unlock()
	if s.zk != nil {
		return s.zk, nil
	}
	c, err := zk.Dial(ctx, s.cfg.Zookeeper)
	if err != nil {
		return nil, err
	}
	s.zk = c
	return c, nil
}

func (s *Server) dropZK(c *zk.Conn) {
	s.zkMu.Lock()
	if s.zk == c {
		s.zk = nil
		c.Close()
	}
	s.zkMu.Unlock()
}

type znodeView struct {
	Path          string   `json:"path"`
	Data          any      `json:"data"`
	DataTruncated bool     `json:"data_truncated"`
	Stat          zk.Stat  `json:"stat"`
	Children      []string `json:"children"`
	ChildrenTotal int      `json:"children_total"`
}

func (s *Server) apiZooKeeper(w http.ResponseWriter, r *http.Request) {
	if s.cfg.Zookeeper == "" {
		writeJSON(w, map[string]any{"enabled": false})
		return
	}
	p, err := zk.CleanPath(r.URL.Query().Get("path"))
	if err != nil {
		writeError(w, http.StatusBadRequest, err)
		return
	}
	ctx, cancel := s.f.RequestContext(r.Context())
	defer cancel()
	c, err := s.zkConn(ctx)
	if err != nil {
		writeError(w, http.StatusBadGateway, err)
		return
	}
	ctrl, cerr := controller.ReadZK(ctx, c)
	b, st, err := c.Get(ctx, p)
	if err != nil {
		if ctx.Err() != nil || errors.Is(err, context.DeadlineExceeded) {
			s.dropZK(c)
		}
		writeError(w, http.StatusNotFound, err)
		return
	}
	node := znodeView{Path: p, Stat: zk.MakeStat(st), Children: []string{}}
	if len(b) > znodeShowBytes {
		b, node.DataTruncated = b[:znodeShowBytes], true
	}
	node.Data = zk.DecodeData(b)
	if p == zkdata.ControllerTokenPath || strings.HasSuffix(p, zkdata.ControllerTokenPath) {
		// The controller's secret: whoever reads it can send requests the
		// brokers believe as the controller's, and a console viewer need
		// not be able to read ZooKeeper otherwise.
		node.Data = "(the controller token, not shown)"
	}
	kids, _, err := c.Children(ctx, p)
	if err == nil {
		sort.Strings(kids)
		node.ChildrenTotal = len(kids)
		if len(kids) > znodeMaxChildren {
			kids = kids[:znodeMaxChildren]
		}
		node.Children = kids
	}
	out := map[string]any{"enabled": true, "node": node, "controller": ctrl}
	if cerr != nil {
		out["controller_error"] = cerr.Error()
	}
	writeJSON(w, out)
}
