package controller

import (
	"context"
	"sync/atomic"
	"testing"

	"github.com/ktoolhq/ktool/broker/coord"
	"github.com/ktoolhq/ktool/internal/zkdata"
)

// flakyChildren fails the next ChildrenW of one path with a lost connection,
// as a call made while ZooKeeper's leader changes does.
type flakyChildren struct {
	coord.Store
	path string
	fail atomic.Int32
}

func (s *flakyChildren) ChildrenW(ctx context.Context, path string) ([]string, coord.Stat, <-chan coord.Event, error) {
	if path == s.path && s.fail.Add(-1) >= 0 {
		return nil, coord.Stat{}, nil, coord.ErrConnectionLoss
	}
	return s.Store.ChildrenW(ctx, path)
}

// A broker that re-registers while the controller's listing of the brokers
// fails on a lost connection is still seen, with its new epoch, once the
// connection is back: the controller used to give up, leaving no watch on
// /brokers/ids, and sent that broker requests with its old epoch for good.
func TestBrokerListingRetriedAfterConnectionLoss(t *testing.T) {
	var flaky *flakyChildren
	cl := newClusterWith(t, ids(1, 2), map[string]map[int32][]int32{"a": {0: {1, 2}}}, Config{BrokerID: 1}, func(s coord.Store) coord.Store {
		flaky = &flakyChildren{Store: s, path: zkdata.BrokerIDsPath}
		return flaky
	})
	cl.waitState("a", 0, 1, ids(1, 2))
	flaky.fail.Store(1)
	cl.killBroker(2)
	cl.startBroker(2)
	want := cl.brokerEpoch(2)
	cl.waitFor("the controller to see broker 2's new registration", func() bool {
		md := cl.rec.lastMetadata(2)
		return md != nil && md.BrokerEpoch == want
	})
}
