package log

import (
	"bytes"
	"io"
	"net"
	"sync"
	"testing"
)

func TestRegionWriteTo(t *testing.T) {
	l, _ := newLog(t, testConfig())
	var want []byte
	for i := range 50 {
		b := makeBatch(t, batchSpec{n: 5, ts: int64(i), pid: -1, epoch: -1, seq: -1, valueSz: 300})
		mustAppend(t, l, b, 0)
		want = append(want, b...)
	}
	r, err := l.Read(0, 1<<30, l.LogEndOffset(), true)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Release()

	var buf bytes.Buffer
	if n, err := r.WriteTo(&buf); err != nil || n != r.Len || !bytes.Equal(buf.Bytes(), want) {
		t.Fatalf("copy: %d bytes, %v", n, err)
	}

	// Over TCP, several regions of the same file at once.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	const conns = 4
	var wg sync.WaitGroup
	errs := make(chan error, conns)
	for range conns {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c, err := net.Dial("tcp", ln.Addr().String())
			if err != nil {
				errs <- err
				return
			}
			defer c.Close()
			r2, err := l.Read(0, 1<<30, l.LogEndOffset(), true)
			if err != nil {
				errs <- err
				return
			}
			defer r2.Release()
			_, err = r2.WriteTo(c)
			errs <- err
		}()
	}
	for range conns {
		c, err := ln.Accept()
		if err != nil {
			t.Fatal(err)
		}
		got, err := io.ReadAll(c)
		c.Close()
		if err != nil || !bytes.Equal(got, want) {
			t.Fatalf("tcp: %d bytes, %v", len(got), err)
		}
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
}
