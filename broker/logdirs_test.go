package broker_test

import (
	"context"
	"testing"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/ktoolhq/ktool/broker/brokertest"
)

// TestDescribeLogDirs: the broker lists its log dir with the partitions it hosts
// and their sizes.
func TestDescribeLogDirs(t *testing.T) {
	c := brokertest.NewCluster(t, 1)
	adm := c.Admin()
	ctx := context.Background()
	if _, err := adm.CreateTopic(ctx, 2, 1, nil, "ld"); err != nil {
		t.Fatal(err)
	}
	cl := c.Client(kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err := cl.ProduceSync(ctx, &kgo.Record{Topic: "ld", Partition: 0, Value: []byte("x")}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	all, err := adm.DescribeAllLogDirs(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	dirs := all[0]
	if len(dirs) != 1 {
		t.Fatalf("broker 0 reports %d log dirs, want 1", len(dirs))
	}
	for _, d := range dirs {
		if d.Err != nil || d.Dir != c.Dir(0) {
			t.Fatalf("dir %q err %v, want %q", d.Dir, d.Err, c.Dir(0))
		}
		parts := d.Topics["ld"]
		if len(parts) != 2 {
			t.Fatalf("partitions of ld in the dir: %v", parts)
		}
		if parts[0].Size <= 0 || parts[1].Size != 0 {
			t.Fatalf("sizes %d and %d: want >0 for the written partition and 0 for the empty one", parts[0].Size, parts[1].Size)
		}
	}
}
