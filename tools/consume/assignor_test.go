package consume

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/ktoolhq/ktool/assignor"
	"github.com/ktoolhq/ktool/plugins"
	"github.com/ktoolhq/ktool/tools/cmdutil"
	"github.com/ktoolhq/ktool/tools/cmdutil/cmdtest"
)

func TestBalancerComesFromThePluginCatalog(t *testing.T) {
	ctx := cmdtest.Ctx(t)
	cat := plugins.NewCatalog(plugins.Options{Dir: t.TempDir()})
	defer cat.Close()
	for name, want := range map[string]string{"range": "range", "roundrobin": "roundrobin", "Round-Robin": "roundrobin",
		"sticky": "sticky", "cooperative-sticky": "cooperative-sticky"} {
		b, err := Balancer(ctx, cat, name)
		if err != nil || b.ProtocolName() != want {
			t.Errorf("%s: %v, %v", name, b, err)
			continue
		}
		if b.IsCooperative() != (want == "cooperative-sticky") {
			t.Errorf("%s: cooperative %v", name, b.IsCooperative())
		}
	}

	// The built-ins are served by the executable the catalog is told is
	// ktool; when that cannot run, no balancer is made.
	broken := plugins.NewCatalog(plugins.Options{Dir: t.TempDir(), Self: filepath.Join(t.TempDir(), "no-ktool-here")})
	defer broken.Close()
	if _, err := Balancer(ctx, broken, "range"); err == nil || !strings.Contains(err.Error(), `starting assignor "range"`) {
		t.Errorf("range without a plugin process: %v", err)
	}
}

func TestUnknownAssignorListsTheAvailableOnes(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, plugins.ExecutableName(plugins.KindAssignor, "mine")), []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	cat := plugins.NewCatalog(plugins.Options{Dir: dir})
	defer cat.Close()
	_, err := Balancer(cmdtest.Ctx(t), cat, "random")
	var ee *cmdutil.ExitErr
	if !errors.As(err, &ee) || ee.Code != cmdutil.ExitUsage {
		t.Fatalf("err = %v, want a usage error", err)
	}
	want := `--assignor "random": no such assignor; available: range, roundrobin, sticky, cooperative-sticky, mine (in ` + dir + ")"
	if err.Error() != want {
		t.Errorf("got  %s\nwant %s", err, want)
	}

	env := newEnv(t)
	o := &Options{Factory: env.F, Topic: "t", Offset: "beginning", Format: `%s\n`, Group: "g", Assignor: "random", PluginDir: dir}
	if err := run(cmdtest.Ctx(t), o); err == nil || !strings.Contains(err.Error(), "available: range") {
		t.Errorf("consume --assignor random: %v", err)
	}
}

// TestPluginRangeAgreesWithKgoRange puts a ktool consumer, whose range
// assignor runs in a plugin process, and a kgo consumer with franz-go's own
// RangeBalancer in one group: whichever leads, the assignment is Kafka's
// range assignment, and between them they read every record.
func TestPluginRangeAgreesWithKgoRange(t *testing.T) {
	const parts, perPart = 4, 5
	c := cmdtest.Cluster(t, kfake.NumBrokers(1), kfake.SeedTopics(parts, "t"))
	env := cmdtest.NewEnv(t, c.ListenAddrs())
	prod, err := env.F.Client(kgo.DefaultProduceTopic("t"), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	defer prod.Close()
	for p := int32(0); p < parts; p++ {
		for i := 0; i < perPart; i++ {
			if err := prod.ProduceSync(cmdtest.Ctx(t), &kgo.Record{Partition: p, Value: []byte(fmt.Sprint(i))}).FirstErr(); err != nil {
				t.Fatal(err)
			}
		}
	}

	var mu sync.Mutex
	seen := map[string]bool{}
	out := &cmdtest.SyncBuffer{}
	env.F.IO.Out = out
	ctx, cancel := context.WithCancel(cmdtest.Ctx(t))
	done := make(chan error, 1)
	go func() {
		done <- run(ctx, &Options{Factory: env.F, Topic: "t", Offset: "beginning", Format: `%p/%o\n`,
			Group: "g", Assignor: "range", PluginDir: t.TempDir()})
	}()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("ktool consume: %v", err)
		}
	}()

	// The ktool member leads the group alone first, so the plugin assigns.
	adm := kadm.NewClient(prod)
	assignment := func() map[string][]int32 {
		ds, err := adm.DescribeGroups(cmdtest.Ctx(t), "g")
		if err != nil || ds["g"].State != "Stable" {
			return nil
		}
		got := map[string][]int32{}
		for _, m := range ds["g"].Members {
			a, _ := m.Assigned.AsConsumer()
			for _, at := range a.Topics {
				got[m.MemberID] = append(got[m.MemberID], at.Partitions...)
			}
			slices.Sort(got[m.MemberID])
		}
		return got
	}
	cmdtest.WaitFor(t, "the ktool member to own every partition", func() bool {
		a := assignment()
		return len(a) == 1 && len(slices.Concat(slices.Collect(maps.Values(a))...)) == parts
	})

	other, err := env.F.Client(kgo.ConsumerGroup("g"), kgo.ConsumeTopics("t"), kgo.Balancers(kgo.RangeBalancer()),
		kgo.ClientID("kgo-range"))
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	pollDone := make(chan struct{})
	go func() {
		defer close(pollDone)
		for {
			fs := other.PollFetches(ctx)
			if ctx.Err() != nil || fs.IsClientClosed() {
				return
			}
			fs.EachRecord(func(r *kgo.Record) {
				mu.Lock()
				seen[fmt.Sprintf("%d/%d", r.Partition, r.Offset)] = true
				mu.Unlock()
			})
		}
	}()
	defer func() { cancel(); <-pollDone }()

	var final map[string][]int32
	cmdtest.WaitFor(t, "both members to share the partitions by range", func() bool {
		final = assignment()
		if len(final) != 2 {
			return false
		}
		members := make([]assignor.Member, 0, 2)
		for id := range final {
			members = append(members, assignor.Member{ID: id, Topics: []string{"t"}, Generation: -1})
		}
		want, err := assignor.Range().Assign(members, map[string]int32{"t": parts})
		if err != nil {
			t.Fatal(err)
		}
		for id, ps := range final {
			if !slices.Equal(ps, want[id]["t"]) {
				return false
			}
		}
		return true
	})
	cmdtest.WaitFor(t, "every record read by one member or the other", func() bool {
		for _, line := range strings.Fields(out.String()) {
			mu.Lock()
			seen[line] = true
			mu.Unlock()
		}
		mu.Lock()
		defer mu.Unlock()
		for p := 0; p < parts; p++ {
			for o := 0; o < perPart; o++ {
				if !seen[fmt.Sprintf("%d/%d", p, o)] {
					return false
				}
			}
		}
		return true
	})
	for id, ps := range final {
		if len(ps) != parts/2 {
			t.Errorf("member %s got %v, want %d partitions", id, ps, parts/2)
		}
	}
}
