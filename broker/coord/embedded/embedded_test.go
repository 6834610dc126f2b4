package embedded

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/ktoolhq/ktool/broker/coord"
	"github.com/ktoolhq/ktool/broker/coord/coordtest"
)

func open(t *testing.T, dir string) *Server {
	t.Helper()
	s, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func TestConformance(t *testing.T) {
	coordtest.Run(t, func(t *testing.T) coordtest.Harness {
		srv := open(t, t.TempDir())
		return coordtest.Harness{
			Connector: srv,
			Expire: func(t *testing.T, s coord.Store) {
				if err := srv.Expire(s.SessionID()); err != nil {
					t.Fatal(err)
				}
			},
		}
	})
}

func connect(t *testing.T, srv *Server) coord.Store {
	t.Helper()
	s, err := srv.Connect(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestPersistsAcrossRestart(t *testing.T) {
	dir := t.TempDir()
	ctx := context.Background()
	srv := open(t, dir)
	s := connect(t, srv)
	if _, err := s.CreateAll(ctx, "/brokers/topics/t", []byte(`{"partitions":{}}`), coord.Persistent); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Set(ctx, "/brokers/topics/t", []byte("v2"), 0); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Create(ctx, "/brokers/ids", nil, coord.Persistent); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Create(ctx, "/brokers/ids/1", []byte("b"), coord.Ephemeral); err != nil {
		t.Fatal(err)
	}
	seq, err := s.Create(ctx, "/brokers/n-", nil, coord.PersistentSequential)
	if err != nil {
		t.Fatal(err)
	}
	_, before, err := s.Get(ctx, "/brokers/topics/t")
	if err != nil {
		t.Fatal(err)
	}
	last := srv.LastZxid()
	if err := srv.Close(); err != nil {
		t.Fatal(err)
	}
	if _, _, err := s.Get(ctx, "/brokers"); !errors.Is(err, coord.ErrClosed) {
		t.Fatalf("get after server close: %v", err)
	}

	srv = open(t, dir)
	if srv.LastZxid() <= last {
		t.Fatalf("zxid %d after restart, was %d (ephemeral cleanup must take a new zxid)", srv.LastZxid(), last)
	}
	s = connect(t, srv)
	data, after, err := s.Get(ctx, "/brokers/topics/t")
	if err != nil {
		t.Fatal(err)
	}
	if string(data) != "v2" || after.Version != 1 || after.Czxid != before.Czxid || after.Mzxid != before.Mzxid || !after.Mtime.Equal(before.Mtime.Truncate(1e6)) {
		t.Fatalf("after restart %q %+v, before %+v", data, after, before)
	}
	if ok, _, err := s.Exists(ctx, "/brokers/ids/1"); err != nil || ok {
		t.Fatalf("ephemeral survived restart: %v %v", ok, err)
	}
	if ok, _, err := s.Exists(ctx, seq); err != nil || !ok {
		t.Fatalf("sequential node lost: %v %v", ok, err)
	}
	next, err := s.Create(ctx, "/brokers/n-", nil, coord.PersistentSequential)
	if err != nil {
		t.Fatal(err)
	}
	if next <= seq {
		t.Fatalf("sequence went back: %s after %s", next, seq)
	}
	if _, err := s.Create(ctx, "/brokers/ids/1", []byte("b"), coord.Ephemeral); err != nil {
		t.Fatal(err)
	}
	_, st, err := s.Get(ctx, "/brokers/ids/1")
	if err != nil {
		t.Fatal(err)
	}
	if st.Czxid <= last {
		t.Fatalf("broker epoch %d not after %d", st.Czxid, last)
	}
}

func TestCompactionKeepsTree(t *testing.T) {
	dir := t.TempDir()
	ctx := context.Background()
	srv := open(t, dir)
	srv.disk.compactBytes = 2 << 10
	s := connect(t, srv)
	if _, err := s.Create(ctx, "/c", nil, coord.Persistent); err != nil {
		t.Fatal(err)
	}
	for i := range 200 {
		if _, err := s.Create(ctx, "/c/n-", []byte("payload"), coord.PersistentSequential); err != nil {
			t.Fatal(err)
		}
		if i%3 == 0 {
			if _, err := s.Set(ctx, "/c", []byte{byte(i)}, coord.AnyVersion); err != nil {
				t.Fatal(err)
			}
		}
	}
	snap, err := os.Stat(filepath.Join(dir, snapshotFile))
	if err != nil {
		t.Fatalf("no snapshot written: %v", err)
	}
	journal, err := os.Stat(filepath.Join(dir, journalFile))
	if err != nil {
		t.Fatal(err)
	}
	// The journal is folded once it outgrows the snapshot, so it never
	// exceeds the snapshot by more than one record.
	if journal.Size() > snap.Size()+(1<<10) {
		t.Fatalf("journal not compacted: %d bytes, snapshot %d", journal.Size(), snap.Size())
	}
	kids, st, err := s.Children(ctx, "/c")
	if err != nil {
		t.Fatal(err)
	}
	srv.Close()

	srv = open(t, dir)
	s = connect(t, srv)
	kids2, st2, err := s.Children(ctx, "/c")
	if err != nil {
		t.Fatal(err)
	}
	if len(kids2) != 200 || len(kids) != 200 || st2.Cversion != st.Cversion || st2.Version != st.Version || st2.Mzxid != st.Mzxid {
		t.Fatalf("after reopen %d children %+v, before %d %+v", len(kids2), st2, len(kids), st)
	}
}

func TestTornJournalTailIsCut(t *testing.T) {
	dir := t.TempDir()
	ctx := context.Background()
	srv := open(t, dir)
	s := connect(t, srv)
	for _, p := range []string{"/a", "/b"} {
		if _, err := s.Create(ctx, p, nil, coord.Persistent); err != nil {
			t.Fatal(err)
		}
	}
	srv.Close()
	path := filepath.Join(dir, journalFile)
	info, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	// Drop the last 3 bytes, as a crash in the middle of the append would.
	if err := os.Truncate(path, info.Size()-3); err != nil {
		t.Fatal(err)
	}
	srv = open(t, dir)
	s = connect(t, srv)
	if ok, _, _ := s.Exists(ctx, "/a"); !ok {
		t.Fatal("/a lost")
	}
	if ok, _, _ := s.Exists(ctx, "/b"); ok {
		t.Fatal("/b from the torn record exists")
	}
	if _, err := s.Create(ctx, "/b", nil, coord.Persistent); err != nil {
		t.Fatal(err)
	}
	srv.Close()
	srv = open(t, dir)
	s = connect(t, srv)
	if ok, _, _ := s.Exists(ctx, "/b"); !ok {
		t.Fatal("/b written after the repair is lost")
	}
}

func TestCorruptJournalFailsOpen(t *testing.T) {
	dir := t.TempDir()
	ctx := context.Background()
	srv := open(t, dir)
	s := connect(t, srv)
	for _, p := range []string{"/a", "/b", "/c"} {
		if _, err := s.Create(ctx, p, nil, coord.Persistent); err != nil {
			t.Fatal(err)
		}
	}
	srv.Close()
	path := filepath.Join(dir, journalFile)
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	b[frameHeader+2] ^= 0xff
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Open(dir); err == nil {
		t.Fatal("open succeeded on a corrupt journal")
	}
}

func TestExpireUnknownSession(t *testing.T) {
	srv := open(t, t.TempDir())
	if err := srv.Expire(12345); err == nil {
		t.Fatal("expired an unknown session")
	}
	s := connect(t, srv)
	if got := srv.Sessions(); len(got) != 1 || got[0] != s.SessionID() {
		t.Fatalf("sessions %v", got)
	}
	if err := srv.Expire(s.SessionID()); err != nil {
		t.Fatal(err)
	}
	if got := srv.Sessions(); len(got) != 0 {
		t.Fatalf("sessions after expiry %v", got)
	}
	if _, err := srv.Connect(context.Background()); err != nil {
		t.Fatal(err)
	}
	srv.Close()
	if _, err := srv.Connect(context.Background()); !errors.Is(err, coord.ErrClosed) {
		t.Fatalf("connect after close: %v", err)
	}
}
