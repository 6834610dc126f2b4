package main

import (
	"testing"
	"time"
)

func TestMeasureReportsBandwidth(t *testing.T) {
	mbps, err := measure(50*time.Millisecond, 64<<10)
	if err != nil {
		t.Fatal(err)
	}
	if mbps <= 0 {
		t.Fatalf("measured %v MB/s over loopback", mbps)
	}
}

func TestMeasureRejectsBadArguments(t *testing.T) {
	for _, c := range []struct {
		d     time.Duration
		chunk int
	}{{0, 1024}, {time.Second, 0}, {-time.Second, 1024}} {
		if _, err := measure(c.d, c.chunk); err == nil {
			t.Errorf("measure(%s, %d) succeeded", c.d, c.chunk)
		}
	}
}
