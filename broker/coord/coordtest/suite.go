package coordtest

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/ktoolhq/ktool/broker/coord"
)

// Harness is what the suite needs from an implementation. Each subtest
// asks for a fresh one, so trees do not leak between tests.
type Harness struct {
	Connector coord.Connector
	// Expire makes the session behind s expire, as a timeout would; the
	// suite then waits for s.Expired() itself.
	Expire func(t *testing.T, s coord.Store)
}

// wait bounds every wait of the suite; real ZooKeeper needs well under it.
const wait = 15 * time.Second

// Run runs the conformance suite, calling newHarness once per subtest.
func Run(t *testing.T, newHarness func(t *testing.T) Harness) {
	tests := []struct {
		name string
		fn   func(t *testing.T, h Harness)
	}{
		{"CreateGetSetDelete", testCreateGetSetDelete},
		{"Errors", testErrors},
		{"CreateAllDeleteAll", testCreateAllDeleteAll},
		{"ChildrenSortedWithStat", testChildren},
		{"Sequential", testSequential},
		{"EphemeralVanishesOnExpiry", testEphemeralExpiry},
		{"EphemeralVanishesOnClose", testEphemeralClose},
		{"DataWatchFiresOnce", testDataWatch},
		{"ExistsWatchCreateAndDelete", testExistsWatch},
		{"ChildrenWatch", testChildrenWatch},
		{"WatchFailsOnExpiry", testWatchExpiry},
		{"WatchFailsOnClose", testWatchClose},
		{"MultiAtomic", testMulti},
		{"ZxidsIncrease", testZxids},
		{"CanceledContext", testCanceled},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tc.fn(t, newHarness(t))
		})
	}
}

func connect(t *testing.T, h Harness) coord.Store {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	s, err := h.Connector.Connect(ctx)
	if err != nil {
		t.Fatalf("connect: %v", err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func ctxT(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	t.Cleanup(cancel)
	return ctx
}

// req turns a call's error into a test failure, so tests read as a
// sequence of operations.
type req struct{ t *testing.T }

func (r req) fail(err error) {
	r.t.Helper()
	if err != nil {
		r.t.Fatal(err)
	}
}

func (r req) name(n string, err error) string {
	r.t.Helper()
	r.fail(err)
	return n
}

func (r req) stat(st coord.Stat, err error) coord.Stat {
	r.t.Helper()
	r.fail(err)
	return st
}

func (r req) get(data []byte, st coord.Stat, err error) ([]byte, coord.Stat) {
	r.t.Helper()
	r.fail(err)
	return data, st
}

func (r req) exists(ok bool, st coord.Stat, err error) (bool, coord.Stat) {
	r.t.Helper()
	r.fail(err)
	return ok, st
}

func (r req) kids(kids []string, st coord.Stat, err error) ([]string, coord.Stat) {
	r.t.Helper()
	r.fail(err)
	return kids, st
}

func wantErr(t *testing.T, err, want error, what string) {
	t.Helper()
	if !errors.Is(err, want) {
		t.Fatalf("%s: got error %v, want %v", what, err, want)
	}
}

// nextEvent waits for the one event of a watch and checks the channel is
// closed after it.
func nextEvent(t *testing.T, ch <-chan coord.Event) coord.Event {
	t.Helper()
	if ch == nil {
		t.Fatal("nil watch channel")
	}
	var ev coord.Event
	select {
	case e, ok := <-ch:
		if !ok {
			t.Fatal("watch channel closed without an event")
		}
		ev = e
	case <-time.After(wait):
		t.Fatal("watch did not fire")
	}
	select {
	case e, ok := <-ch:
		if ok {
			t.Fatalf("watch fired twice: %+v then %+v", ev, e)
		}
	case <-time.After(wait):
		t.Fatal("watch channel not closed after its event")
	}
	return ev
}

func pending(ch <-chan coord.Event) bool {
	select {
	case <-ch:
		return false
	default:
		return true
	}
}

func wantEvent(t *testing.T, ch <-chan coord.Event, typ coord.EventType, path string) {
	t.Helper()
	ev := nextEvent(t, ch)
	if ev.Err != nil || ev.Type != typ || ev.Path != path {
		t.Fatalf("event %+v, want %v on %s", ev, typ, path)
	}
}

func waitExpired(t *testing.T, s coord.Store) {
	t.Helper()
	select {
	case <-s.Expired():
	case <-time.After(wait):
		t.Fatal("session did not expire")
	}
}

func waitGone(t *testing.T, s coord.Store, path string) {
	t.Helper()
	ctx := ctxT(t)
	deadline := time.Now().Add(wait)
	for {
		ok, _, err := s.Exists(ctx, path)
		if err != nil {
			t.Fatal(err)
		}
		if !ok {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s still exists", path)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func testCreateGetSetDelete(t *testing.T, h Harness) {
	r := req{t}
	s := connect(t, h)
	ctx := ctxT(t)
	name := r.name(s.Create(ctx, "/a", []byte("one"), coord.Persistent))
	if name != "/a" {
		t.Fatalf("created %q", name)
	}
	data, st := r.get(s.Get(ctx, "/a"))
	if string(data) != "one" || st.Version != 0 || st.DataLength != 3 || st.Czxid == 0 || st.Czxid != st.Mzxid || st.EphemeralOwner != 0 {
		t.Fatalf("get: %q %+v", data, st)
	}
	if st.Ctime.IsZero() || time.Since(st.Ctime) > time.Hour {
		t.Fatalf("ctime %v", st.Ctime)
	}
	st2 := r.stat(s.Set(ctx, "/a", []byte("two"), 0))
	if st2.Version != 1 || st2.Mzxid <= st.Mzxid || st2.Czxid != st.Czxid {
		t.Fatalf("set stat %+v after %+v", st2, st)
	}
	_, err := s.Set(ctx, "/a", []byte("three"), 0)
	wantErr(t, err, coord.ErrBadVersion, "set with stale version")
	r.stat(s.Set(ctx, "/a", []byte("four"), coord.AnyVersion))
	data, st = r.get(s.Get(ctx, "/a"))
	if string(data) != "four" || st.Version != 2 {
		t.Fatalf("after set any: %q %+v", data, st)
	}
	r.name(s.Create(ctx, "/empty", nil, coord.Persistent))
	data, _ = r.get(s.Get(ctx, "/empty"))
	if len(data) != 0 {
		t.Fatalf("empty node data %q", data)
	}
	wantErr(t, s.Delete(ctx, "/a", 1), coord.ErrBadVersion, "delete with stale version")
	if err := s.Delete(ctx, "/a", 2); err != nil {
		t.Fatal(err)
	}
	_, _, err = s.Get(ctx, "/a")
	wantErr(t, err, coord.ErrNoNode, "get deleted")
	ok, _ := r.exists(s.Exists(ctx, "/a"))
	if ok {
		t.Fatal("deleted node exists")
	}
	_, err = s.Set(ctx, "/a", nil, coord.AnyVersion)
	wantErr(t, err, coord.ErrNoNode, "set deleted")
	wantErr(t, s.Delete(ctx, "/a", coord.AnyVersion), coord.ErrNoNode, "delete deleted")

	other := connect(t, h)
	data, _ = r.get(other.Get(ctx, "/empty"))
	if len(data) != 0 {
		t.Fatalf("other session sees %q", data)
	}
}

func testErrors(t *testing.T, h Harness) {
	r := req{t}
	s := connect(t, h)
	ctx := ctxT(t)
	_, err := s.Create(ctx, "/missing/child", nil, coord.Persistent)
	wantErr(t, err, coord.ErrNoNode, "create under missing parent")
	r.name(s.Create(ctx, "/p", nil, coord.Persistent))
	_, err = s.Create(ctx, "/p", nil, coord.Persistent)
	wantErr(t, err, coord.ErrNodeExists, "create existing")
	r.name(s.Create(ctx, "/p/c", nil, coord.Persistent))
	wantErr(t, s.Delete(ctx, "/p", coord.AnyVersion), coord.ErrNotEmpty, "delete with children")
	r.name(s.Create(ctx, "/eph", nil, coord.Ephemeral))
	_, err = s.Create(ctx, "/eph/c", nil, coord.Persistent)
	wantErr(t, err, coord.ErrNoChildrenForEphemerals, "child of ephemeral")
	for _, bad := range []string{"", "rel", "/trailing/", "/a//b", "/a/./b", "/a/.."} {
		_, err = s.Create(ctx, bad, nil, coord.Persistent)
		wantErr(t, err, coord.ErrInvalidPath, fmt.Sprintf("create %q", bad))
		_, _, err = s.Get(ctx, bad)
		wantErr(t, err, coord.ErrInvalidPath, fmt.Sprintf("get %q", bad))
	}
	_, _, err = s.Children(ctx, "/nope")
	wantErr(t, err, coord.ErrNoNode, "children of missing")
	_, _, _, err = s.GetW(ctx, "/nope")
	wantErr(t, err, coord.ErrNoNode, "watch data of missing")
}

func testCreateAllDeleteAll(t *testing.T, h Harness) {
	r := req{t}
	s := connect(t, h)
	ctx := ctxT(t)
	name := r.name(s.CreateAll(ctx, "/x/y/z", []byte("leaf"), coord.Persistent))
	if name != "/x/y/z" {
		t.Fatalf("created %q", name)
	}
	data, _ := r.get(s.Get(ctx, "/x/y/z"))
	if string(data) != "leaf" {
		t.Fatalf("leaf %q", data)
	}
	data, _ = r.get(s.Get(ctx, "/x/y"))
	if len(data) != 0 {
		t.Fatalf("parent data %q", data)
	}
	r.name(s.CreateAll(ctx, "/x/y/w", nil, coord.Ephemeral))
	_, err := s.CreateAll(ctx, "/x/y/z", nil, coord.Persistent)
	wantErr(t, err, coord.ErrNodeExists, "create all existing")
	seq := r.name(s.CreateAll(ctx, "/x/q/item-", nil, coord.PersistentSequential))
	if seq != "/x/q/item-0000000000" {
		t.Fatalf("sequential create all made %q", seq)
	}
	if err := s.DeleteAll(ctx, "/x"); err != nil {
		t.Fatal(err)
	}
	ok, _ := r.exists(s.Exists(ctx, "/x"))
	if ok {
		t.Fatal("/x survives DeleteAll")
	}
	if err := s.DeleteAll(ctx, "/x"); err != nil {
		t.Fatalf("DeleteAll of missing: %v", err)
	}
}

func testChildren(t *testing.T, h Harness) {
	r := req{t}
	s := connect(t, h)
	ctx := ctxT(t)
	r.name(s.Create(ctx, "/k", nil, coord.Persistent))
	for _, c := range []string{"b", "10", "a", "2"} {
		r.name(s.Create(ctx, "/k/"+c, nil, coord.Persistent))
	}
	kids, st := r.kids(s.Children(ctx, "/k"))
	if fmt.Sprint(kids) != "[10 2 a b]" {
		t.Fatalf("children %v", kids)
	}
	if st.NumChildren != 4 || st.Cversion != 4 {
		t.Fatalf("stat %+v", st)
	}
	if err := s.Delete(ctx, "/k/a", coord.AnyVersion); err != nil {
		t.Fatal(err)
	}
	_, st = r.exists(s.Exists(ctx, "/k"))
	if st.NumChildren != 3 || st.Cversion != 5 || st.Version != 0 {
		t.Fatalf("stat after delete %+v", st)
	}
	kids, _ = r.kids(s.Children(ctx, "/k/b"))
	if len(kids) != 0 {
		t.Fatalf("leaf children %v", kids)
	}
}

func testSequential(t *testing.T, h Harness) {
	r := req{t}
	s := connect(t, h)
	ctx := ctxT(t)
	r.name(s.Create(ctx, "/q", nil, coord.Persistent))
	r.name(s.Create(ctx, "/q/other", nil, coord.Persistent))
	var got []string
	for _, mode := range []coord.CreateMode{coord.PersistentSequential, coord.EphemeralSequential, coord.PersistentSequential} {
		got = append(got, r.name(s.Create(ctx, "/q/n-", []byte("x"), mode)))
	}
	want := "[/q/n-0000000001 /q/n-0000000002 /q/n-0000000003]"
	if fmt.Sprint(got) != want {
		t.Fatalf("sequential names %v, want %s", got, want)
	}
	_, st := r.get(s.Get(ctx, got[1]))
	if st.EphemeralOwner != s.SessionID() {
		t.Fatalf("ephemeral sequential owner %d, session %d", st.EphemeralOwner, s.SessionID())
	}
	r.name(s.Create(ctx, "/seqroot", nil, coord.Persistent))
	name := r.name(s.Create(ctx, "/seqroot/", nil, coord.PersistentSequential))
	if name != "/seqroot/0000000000" {
		t.Fatalf("bare sequential %q", name)
	}
}

func testEphemeralExpiry(t *testing.T, h Harness) {
	r := req{t}
	s := connect(t, h)
	other := connect(t, h)
	ctx := ctxT(t)
	r.name(s.Create(ctx, "/brokers", nil, coord.Persistent))
	r.name(s.Create(ctx, "/brokers/1", []byte("b1"), coord.Ephemeral))
	r.name(other.Create(ctx, "/brokers/2", []byte("b2"), coord.Ephemeral))
	_, st := r.get(other.Get(ctx, "/brokers/1"))
	if st.EphemeralOwner != s.SessionID() || s.SessionID() == 0 || s.SessionID() == other.SessionID() {
		t.Fatalf("owner %d, sessions %d and %d", st.EphemeralOwner, s.SessionID(), other.SessionID())
	}
	select {
	case <-s.Expired():
		t.Fatal("expired before expiry")
	default:
	}
	h.Expire(t, s)
	waitExpired(t, s)
	waitGone(t, other, "/brokers/1")
	ok, _ := r.exists(other.Exists(ctx, "/brokers/2"))
	if !ok {
		t.Fatal("other session's ephemeral vanished")
	}
	ok, _ = r.exists(other.Exists(ctx, "/brokers"))
	if !ok {
		t.Fatal("persistent parent vanished")
	}
	_, _, err := s.Get(ctx, "/brokers")
	wantErr(t, err, coord.ErrSessionExpired, "get on expired session")
	_, err = s.Create(ctx, "/brokers/1", nil, coord.Ephemeral)
	wantErr(t, err, coord.ErrSessionExpired, "create on expired session")

	fresh := connect(t, h)
	r.name(fresh.Create(ctx, "/brokers/1", []byte("b1"), coord.Ephemeral))
	_, st2 := r.get(other.Get(ctx, "/brokers/1"))
	if st2.Czxid <= st.Czxid {
		t.Fatalf("re-registration czxid %d not after %d", st2.Czxid, st.Czxid)
	}
}

func testEphemeralClose(t *testing.T, h Harness) {
	r := req{t}
	s := connect(t, h)
	other := connect(t, h)
	ctx := ctxT(t)
	r.name(s.Create(ctx, "/controller", []byte("1"), coord.Ephemeral))
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	waitGone(t, other, "/controller")
	_, _, err := s.Get(ctx, "/controller")
	wantErr(t, err, coord.ErrClosed, "get on closed session")
	select {
	case <-s.Expired():
		t.Fatal("Close closed Expired")
	default:
	}
	if err := s.Close(); err != nil {
		t.Fatalf("second close: %v", err)
	}
}

func testDataWatch(t *testing.T, h Harness) {
	r := req{t}
	s := connect(t, h)
	writer := connect(t, h)
	ctx := ctxT(t)
	r.name(s.Create(ctx, "/d", []byte("v0"), coord.Persistent))
	r.name(s.Create(ctx, "/unrelated", nil, coord.Persistent))
	data, _, ch, err := s.GetW(ctx, "/d")
	if err != nil || string(data) != "v0" {
		t.Fatalf("getw: %q %v", data, err)
	}
	r.stat(writer.Set(ctx, "/unrelated", []byte("x"), coord.AnyVersion))
	if _, _, err := s.Get(ctx, "/unrelated"); err != nil {
		t.Fatal(err)
	}
	if !pending(ch) {
		t.Fatal("watch fired for another node")
	}
	r.stat(writer.Set(ctx, "/d", []byte("v1"), coord.AnyVersion))
	r.stat(writer.Set(ctx, "/d", []byte("v2"), coord.AnyVersion))
	wantEvent(t, ch, coord.NodeDataChanged, "/d")

	_, _, ch, err = s.GetW(ctx, "/d")
	if err != nil {
		t.Fatal(err)
	}
	if err := writer.Delete(ctx, "/d", coord.AnyVersion); err != nil {
		t.Fatal(err)
	}
	wantEvent(t, ch, coord.NodeDeleted, "/d")
}

func testExistsWatch(t *testing.T, h Harness) {
	r := req{t}
	s := connect(t, h)
	writer := connect(t, h)
	ctx := ctxT(t)
	ok, _, ch, err := s.ExistsW(ctx, "/e")
	if err != nil || ok {
		t.Fatalf("existsw missing: %v %v", ok, err)
	}
	r.name(writer.Create(ctx, "/e", nil, coord.Ephemeral))
	wantEvent(t, ch, coord.NodeCreated, "/e")

	ok, _, ch, err = s.ExistsW(ctx, "/e")
	if err != nil || !ok {
		t.Fatalf("existsw present: %v %v", ok, err)
	}
	r.stat(writer.Set(ctx, "/e", []byte("x"), coord.AnyVersion))
	wantEvent(t, ch, coord.NodeDataChanged, "/e")

	_, _, ch, err = s.ExistsW(ctx, "/e")
	if err != nil {
		t.Fatal(err)
	}
	if err := writer.Close(); err != nil {
		t.Fatal(err)
	}
	wantEvent(t, ch, coord.NodeDeleted, "/e")
}

func testChildrenWatch(t *testing.T, h Harness) {
	r := req{t}
	s := connect(t, h)
	writer := connect(t, h)
	ctx := ctxT(t)
	r.name(s.Create(ctx, "/ids", nil, coord.Persistent))
	kids, _, ch, err := s.ChildrenW(ctx, "/ids")
	if err != nil || len(kids) != 0 {
		t.Fatalf("childrenw: %v %v", kids, err)
	}
	r.stat(writer.Set(ctx, "/ids", []byte("data"), coord.AnyVersion))
	if _, _, err := s.Get(ctx, "/ids"); err != nil {
		t.Fatal(err)
	}
	if !pending(ch) {
		t.Fatal("children watch fired on a data change")
	}
	r.name(writer.Create(ctx, "/ids/1", nil, coord.Ephemeral))
	r.name(writer.Create(ctx, "/ids/2", nil, coord.Ephemeral))
	wantEvent(t, ch, coord.NodeChildrenChanged, "/ids")

	_, _, ch, err = s.ChildrenW(ctx, "/ids")
	if err != nil {
		t.Fatal(err)
	}
	if err := writer.Delete(ctx, "/ids/1", coord.AnyVersion); err != nil {
		t.Fatal(err)
	}
	wantEvent(t, ch, coord.NodeChildrenChanged, "/ids")

	_, _, ch, err = s.ChildrenW(ctx, "/ids/2")
	if err != nil {
		t.Fatal(err)
	}
	if err := writer.Delete(ctx, "/ids/2", coord.AnyVersion); err != nil {
		t.Fatal(err)
	}
	wantEvent(t, ch, coord.NodeDeleted, "/ids/2")
}

func testWatchExpiry(t *testing.T, h Harness) {
	r := req{t}
	s := connect(t, h)
	ctx := ctxT(t)
	r.name(s.Create(ctx, "/w", nil, coord.Persistent))
	_, _, data, err := s.GetW(ctx, "/w")
	if err != nil {
		t.Fatal(err)
	}
	_, _, exists, err := s.ExistsW(ctx, "/not-yet")
	if err != nil {
		t.Fatal(err)
	}
	_, _, kids, err := s.ChildrenW(ctx, "/w")
	if err != nil {
		t.Fatal(err)
	}
	h.Expire(t, s)
	for _, ch := range []<-chan coord.Event{data, exists, kids} {
		ev := nextEvent(t, ch)
		if !errors.Is(ev.Err, coord.ErrSessionExpired) {
			t.Fatalf("watch event on expiry %+v", ev)
		}
	}
	waitExpired(t, s)
}

func testWatchClose(t *testing.T, h Harness) {
	r := req{t}
	s := connect(t, h)
	ctx := ctxT(t)
	r.name(s.Create(ctx, "/w", nil, coord.Persistent))
	_, _, ch, err := s.GetW(ctx, "/w")
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	ev := nextEvent(t, ch)
	if !errors.Is(ev.Err, coord.ErrClosed) {
		t.Fatalf("watch event on close %+v", ev)
	}
}

func testMulti(t *testing.T, h Harness) {
	r := req{t}
	s := connect(t, h)
	ctx := ctxT(t)
	r.name(s.Create(ctx, "/m", []byte("v0"), coord.Persistent))
	r.name(s.Create(ctx, "/m/old", nil, coord.Persistent))
	_, _, watch, err := s.ChildrenW(ctx, "/m")
	if err != nil {
		t.Fatal(err)
	}
	err = s.Multi(ctx,
		coord.CreateOp("/m/new", []byte("n"), coord.Persistent),
		coord.SetOp("/m", []byte("v1"), 0),
		coord.DeleteOp("/m/old", coord.AnyVersion),
		coord.CheckOp("/m", 5),
	)
	var me *coord.MultiError
	if !errors.As(err, &me) || me.Index != 3 || !errors.Is(err, coord.ErrBadVersion) {
		t.Fatalf("failing multi: %v", err)
	}
	ok, _ := r.exists(s.Exists(ctx, "/m/new"))
	old, _ := r.exists(s.Exists(ctx, "/m/old"))
	data, st := r.get(s.Get(ctx, "/m"))
	if ok || !old || string(data) != "v0" || st.Version != 0 {
		t.Fatalf("failed multi left changes: new=%v old=%v data=%q %+v", ok, old, data, st)
	}
	if !pending(watch) {
		t.Fatal("failed multi fired a watch")
	}
	err = s.Multi(ctx,
		coord.CheckOp("/m", 0),
		coord.CreateOp("/m/new", []byte("n"), coord.Persistent),
		coord.CreateOp("/m/new/deeper", nil, coord.Persistent),
		coord.SetOp("/m", []byte("v1"), 0),
		coord.DeleteOp("/m/old", 0),
	)
	if err != nil {
		t.Fatal(err)
	}
	wantEvent(t, watch, coord.NodeChildrenChanged, "/m")
	kids, st := r.kids(s.Children(ctx, "/m"))
	data, _ = r.get(s.Get(ctx, "/m"))
	if fmt.Sprint(kids) != "[new]" || string(data) != "v1" || st.Version != 1 {
		t.Fatalf("after multi: %v %q %+v", kids, data, st)
	}
	_, st1 := r.get(s.Get(ctx, "/m/new"))
	_, st2 := r.get(s.Get(ctx, "/m/new/deeper"))
	if st1.Czxid != st2.Czxid || st1.Czxid != st.Mzxid {
		t.Fatalf("multi is not one transaction: czxids %d %d, mzxid %d", st1.Czxid, st2.Czxid, st.Mzxid)
	}
	err = s.Multi(ctx, coord.CreateOp("/m/new", nil, coord.Persistent))
	if !errors.As(err, &me) || me.Index != 0 || !errors.Is(err, coord.ErrNodeExists) {
		t.Fatalf("multi on existing: %v", err)
	}
	if err := s.Multi(ctx); err != nil {
		t.Fatalf("empty multi: %v", err)
	}
}

func testZxids(t *testing.T, h Harness) {
	r := req{t}
	s := connect(t, h)
	ctx := ctxT(t)
	var last int64
	for i := range 5 {
		r.name(s.Create(ctx, fmt.Sprintf("/z%d", i), nil, coord.Ephemeral))
		_, st := r.get(s.Get(ctx, fmt.Sprintf("/z%d", i)))
		if st.Czxid <= last {
			t.Fatalf("czxid %d after %d", st.Czxid, last)
		}
		last = st.Czxid
	}
	st := r.stat(s.Set(ctx, "/z0", []byte("x"), coord.AnyVersion))
	if st.Mzxid <= last || st.Czxid >= last {
		t.Fatalf("set stat %+v after zxid %d", st, last)
	}
	_, root := r.exists(s.Exists(ctx, "/"))
	if root.NumChildren < 5 || root.Pzxid < last {
		t.Fatalf("root stat %+v", root)
	}
}

func testCanceled(t *testing.T, h Harness) {
	r := req{t}
	s := connect(t, h)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := s.Create(ctx, "/c", nil, coord.Persistent)
	wantErr(t, err, context.Canceled, "create with canceled ctx")
	_, _, err = s.Get(ctx, "/")
	wantErr(t, err, context.Canceled, "get with canceled ctx")
	_, err = h.Connector.Connect(ctx)
	wantErr(t, err, context.Canceled, "connect with canceled ctx")
	ok, _ := r.exists(s.Exists(ctxT(t), "/c"))
	if ok {
		t.Fatal("create with canceled ctx happened")
	}
}
