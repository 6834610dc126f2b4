package embedded

import "github.com/ktoolhq/ktool/broker/coord"

type watchTable int

const (
	// tableData holds watches set by GetW and ExistsW: they fire on
	// creation, data change and deletion of their path.
	tableData watchTable = iota
	// tableChild holds watches set by ChildrenW: they fire when a child is
	// added or removed, or the path itself is deleted.
	tableChild
)

// watch is one one-shot watch; ch has room for its single event, so firing
// never blocks while the server lock is held.
type watch struct {
	sess  *session
	table watchTable
	path  string
	ch    chan coord.Event
}

func (w *watch) fire(ev coord.Event) {
	w.ch <- ev
	close(w.ch)
}

type pendingEvent struct {
	table watchTable
	path  string
	typ   coord.EventType
}

func (s *Server) tableFor(t watchTable) map[string]map[*watch]struct{} {
	if t == tableData {
		return s.dataWatches
	}
	return s.childWatches
}

func (s *Server) addWatch(sess *session, t watchTable, path string) <-chan coord.Event {
	w := &watch{sess: sess, table: t, path: path, ch: make(chan coord.Event, 1)}
	tab := s.tableFor(t)
	set, ok := tab[path]
	if !ok {
		set = map[*watch]struct{}{}
		tab[path] = set
	}
	set[w] = struct{}{}
	sess.watches[w] = struct{}{}
	return w.ch
}

func (s *Server) removeWatch(w *watch) {
	tab := s.tableFor(w.table)
	if set, ok := tab[w.path]; ok {
		delete(set, w)
		if len(set) == 0 {
			delete(tab, w.path)
		}
	}
}

// deliver fires and forgets every watch the events trigger, in order.
func (s *Server) deliver(events []pendingEvent) {
	for _, ev := range events {
		tab := s.tableFor(ev.table)
		set, ok := tab[ev.path]
		if !ok {
			continue
		}
		delete(tab, ev.path)
		for w := range set {
			delete(w.sess.watches, w)
			w.fire(coord.Event{Type: ev.typ, Path: ev.path})
		}
	}
}
