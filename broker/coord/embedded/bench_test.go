package embedded

import (
	"context"
	"fmt"
	"testing"

	"github.com/ktoolhq/ktool/broker/coord"
)

// BenchmarkSet measures a durable conditional update, the controller's
// partition-state write.
func BenchmarkSet(b *testing.B) {
	srv, err := Open(b.TempDir())
	if err != nil {
		b.Fatal(err)
	}
	defer srv.Close()
	s, err := srv.Connect(context.Background())
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	if _, err := s.Create(ctx, "/state", []byte("{}"), coord.Persistent); err != nil {
		b.Fatal(err)
	}
	data := []byte(`{"controller_epoch":1,"leader":1,"version":1,"leader_epoch":0,"isr":[1,2,3]}`)
	version := int32(0)
	for b.Loop() {
		st, err := s.Set(ctx, "/state", data, version)
		if err != nil {
			b.Fatal(err)
		}
		version = st.Version
	}
}

// BenchmarkMultiCreate measures creating 100 partition states in one Multi,
// which costs one journal append.
func BenchmarkMultiCreate(b *testing.B) {
	srv, err := Open(b.TempDir())
	if err != nil {
		b.Fatal(err)
	}
	defer srv.Close()
	s, err := srv.Connect(context.Background())
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	n := 0
	for b.Loop() {
		n++
		topic := fmt.Sprintf("/t%d", n)
		ops := []coord.Op{coord.CreateOp(topic, nil, coord.Persistent)}
		for p := range 100 {
			ops = append(ops, coord.CreateOp(fmt.Sprintf("%s/%d", topic, p), []byte(`{"leader":1}`), coord.Persistent))
		}
		if err := s.Multi(ctx, ops...); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkGet measures a read, which touches no disk.
func BenchmarkGet(b *testing.B) {
	srv, err := Open(b.TempDir())
	if err != nil {
		b.Fatal(err)
	}
	defer srv.Close()
	s, err := srv.Connect(context.Background())
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	if _, err := s.Create(ctx, "/x", []byte("data"), coord.Persistent); err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		if _, _, err := s.Get(ctx, "/x"); err != nil {
			b.Fatal(err)
		}
	}
}
