package broker

import (
	"context"
	"testing"

	"github.com/ktoolhq/ktool/broker/txn"
)

// TestNextMarkerRequest: a request takes queued markers oldest first up to
// the byte bound (one transaction's, however large, always), leaves a second
// job of the same producer for the next request, and drops jobs whose
// Write gave up.
func TestNextMarkerRequest(t *testing.T) {
	tps := func(n int) []txn.TP {
		var out []txn.TP
		for i := range n {
			out = append(out, txn.TP{Topic: "orders", Partition: int32(i)})
		}
		return out
	}
	gone, cancel := context.WithCancel(context.Background())
	cancel()
	job := func(ctx context.Context, pid int64, parts int) *markerJob {
		return newMarkerJob(ctx, txn.MarkerSet{ProducerID: pid}, tps(parts))
	}
	ctx := context.Background()
	big := job(ctx, 1, 100)
	pending := []*markerJob{big, job(ctx, 2, 1), job(gone, 3, 1), job(ctx, 1, 1), job(ctx, 4, 1)}
	bound := big.size + 2*pending[1].size

	jobs, later := nextMarkerRequest(pending, bound)
	pids := func(js []*markerJob) []int64 {
		var out []int64
		for _, j := range js {
			out = append(out, j.m.ProducerID)
		}
		return out
	}
	if got := pids(jobs); len(got) != 3 || got[0] != 1 || got[1] != 2 || got[2] != 4 {
		t.Fatalf("request carries producers %v, want [1 2 4]", got)
	}
	if got := pids(later); len(got) != 1 || got[0] != 1 {
		t.Fatalf("left for later %v, want [1] (the same producer's second job)", got)
	}
	jobs, later = nextMarkerRequest(pending[:2], big.size)
	if len(jobs) != 1 || len(later) != 1 {
		t.Fatalf("a bound of one job's size: %v now, %v later", pids(jobs), pids(later))
	}
	jobs, _ = nextMarkerRequest(pending[:1], 1)
	if len(jobs) != 1 {
		t.Fatal("a job larger than the bound is never sent")
	}
}
