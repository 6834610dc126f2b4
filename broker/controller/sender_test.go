package controller

import (
	"context"
	"log/slog"
	"net"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/ktoolhq/ktool/broker/protocol"
)

type handlerFunc func(ctx context.Context, c *protocol.Conn, h protocol.Header, req kmsg.Request, respond func(protocol.Response))

func (f handlerFunc) Handle(ctx context.Context, c *protocol.Conn, h protocol.Header, req kmsg.Request, respond func(protocol.Response)) {
	f(ctx, c, h, req, respond)
}

// A sender's drained channel closes only once every queued request has been
// answered (what a stopping controller waits for before it resigns), and a
// queued UpdateMetadata absorbs a newer one only when nothing is queued after it.
func TestSenderDrainsAndMergesMetadata(t *testing.T) {
	release := make(chan struct{})
	got := make(chan kmsg.Request, 10)
	srv := &protocol.Server{Handler: handlerFunc(func(_ context.Context, _ *protocol.Conn, _ protocol.Header, req kmsg.Request, respond func(protocol.Response)) {
		got <- req
		<-release
		respond(protocol.Response{Msg: req.ResponseKind()})
	})}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go srv.Serve(ln)
	defer srv.Shutdown(context.Background())
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	c := newController(ctx, Config{BrokerID: 1, RequestTimeout: 10 * time.Second, Logger: slog.New(slog.DiscardHandler)}, nil, 1, 0)
	s := c.dial(2, ln.Addr().String()).(*sender)
	defer s.stop()
	select {
	case <-s.drained():
	default:
		t.Fatal("a new sender is not drained")
	}
	um := func(parts ...int32) *kmsg.UpdateMetadataRequest {
		req := kmsg.NewPtrUpdateMetadataRequest()
		req.SetVersion(7)
		ts := kmsg.NewUpdateMetadataRequestTopicState()
		ts.Topic = "t"
		for _, p := range parts {
			ps := kmsg.NewUpdateMetadataRequestTopicPartition()
			ps.Partition = p
			ts.PartitionStates = append(ts.PartitionStates, ps)
		}
		req.TopicStates = []kmsg.UpdateMetadataRequestTopicState{ts}
		return req
	}
	s.send(kmsg.NewPtrLeaderAndISRRequest())
	<-got // in flight
	s.send(um(0))
	s.send(um(1)) // merged into the queued one
	s.send(kmsg.NewPtrLeaderAndISRRequest())
	s.send(um(2)) // a LeaderAndIsr is queued after the first: not merged
	select {
	case <-s.drained():
		t.Fatal("drained with requests queued")
	default:
	}
	close(release)
	var kinds []string
	var first *kmsg.UpdateMetadataRequest
	for range 3 {
		req := <-got
		kinds = append(kinds, kmsg.NameForKey(req.Key()))
		if u, ok := req.(*kmsg.UpdateMetadataRequest); ok && first == nil {
			first = u
		}
	}
	select {
	case <-s.drained():
	case <-time.After(10 * time.Second):
		t.Fatal("not drained after every request was answered")
	}
	want := []string{"UpdateMetadata", "LeaderAndISR", "UpdateMetadata"}
	if len(kinds) != 3 || kinds[0] != want[0] || kinds[1] != want[1] || kinds[2] != want[2] {
		t.Fatalf("delivered %v", kinds)
	}
	if got := umPartitionsOf(first); len(got) != 2 {
		t.Fatalf("the merged UpdateMetadata names partitions %v, want 0 and 1", got)
	}
}

func umPartitionsOf(u *kmsg.UpdateMetadataRequest) []int32 {
	var out []int32
	for _, t := range u.TopicStates {
		for _, p := range t.PartitionStates {
			out = append(out, p.Partition)
		}
	}
	return out
}
