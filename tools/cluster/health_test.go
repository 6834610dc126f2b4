package cluster

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"

	"github.com/ktoolhq/ktool/tools/cmdutil"
	"github.com/ktoolhq/ktool/tools/cmdutil/cmdtest"
)

func exitCode(err error) int {
	var ee *cmdutil.ExitErr
	if errors.As(err, &ee) {
		return ee.Code
	}
	if err != nil {
		return cmdutil.ExitError
	}
	return cmdutil.ExitOK
}

func TestHealthy(t *testing.T) {
	c := cmdtest.Cluster(t, kfake.NumBrokers(3), kfake.SeedTopics(3, "t"))
	env := cmdtest.NewEnv(t, c.ListenAddrs())
	err := runHealth(cmdtest.Ctx(t), &HealthOptions{Factory: env.F})
	if code := exitCode(err); code != 0 {
		t.Fatalf("exit %d (%v)\n%s", code, err, env.Out)
	}
	if !strings.Contains(env.Out.String(), "is healthy") || !strings.Contains(env.Out.String(), "Brokers down:                none") {
		t.Errorf("report:\n%s", env.Out)
	}
}

func TestUnhealthyExits3(t *testing.T) {
	tests := []struct {
		name  string
		live  []int32
		parts []cmdtest.Partition
		check func(*testing.T, Health)
	}{
		{"isr shrink", nil, []cmdtest.Partition{{Leader: 0, Replicas: []int32{0, 1, 2}, ISR: []int32{0, 1}}},
			func(t *testing.T, h Health) {
				if len(h.UnderReplicated) != 1 || len(h.Offline) != 0 || len(h.BrokersDown) != 0 {
					t.Errorf("%+v", h)
				}
			}},
		{"no leader", nil, []cmdtest.Partition{{Leader: -1, Replicas: []int32{0, 1, 2}, ISR: []int32{0, 1, 2}}},
			func(t *testing.T, h Health) {
				if len(h.Offline) != 1 || h.Offline[0].Leader != -1 || len(h.UnderReplicated) != 0 {
					t.Errorf("%+v", h)
				}
			}},
		{"broker down", []int32{0, 1}, []cmdtest.Partition{{Leader: 2, Replicas: []int32{2, 0, 1}, ISR: []int32{2, 0, 1}}},
			func(t *testing.T, h Health) {
				if cmdutil.JoinInt32(h.BrokersDown) != "2" || len(h.Offline) != 1 {
					t.Errorf("%+v", h)
				}
			}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := cmdtest.Cluster(t, kfake.NumBrokers(3))
			cmdtest.FakeMetadata(c, 0, tt.live, map[string][]cmdtest.Partition{"t": tt.parts})
			env := cmdtest.NewEnv(t, c.ListenAddrs())
			opts := &HealthOptions{Factory: env.F}
			opts.Output.Format = "json"
			err := runHealth(cmdtest.Ctx(t), opts)
			if code := exitCode(err); code != cmdutil.ExitProblems {
				t.Fatalf("exit %d (%v), want 3", code, err)
			}
			var h Health
			if err := json.Unmarshal(env.Out.Bytes(), &h); err != nil {
				t.Fatal(err)
			}
			if h.Healthy {
				t.Error("reported healthy")
			}
			tt.check(t, h)
		})
	}
}

func TestExitWhenHealthy(t *testing.T) {
	c := cmdtest.Cluster(t, kfake.NumBrokers(3))
	stop := cmdtest.FakeMetadata(c, 0, nil, map[string][]cmdtest.Partition{"t": {
		{Leader: 0, Replicas: []int32{0, 1}, ISR: []int32{0}},
	}})
	env := cmdtest.NewEnv(t, c.ListenAddrs())
	out := &cmdtest.SyncBuffer{}
	env.F.IO.Out = out
	opts := &HealthOptions{Factory: env.F, ExitWhenHealthy: true, Interval: 10 * time.Millisecond}
	done := make(chan error, 1)
	go func() { done <- runHealth(cmdtest.Ctx(t), opts) }()
	cmdtest.WaitFor(t, "an unhealthy report", func() bool { return strings.Contains(out.String(), "UNHEALTHY") })
	select {
	case err := <-done:
		t.Fatalf("returned while unhealthy: %v", err)
	default:
	}
	// Drop the fake: kfake's own metadata is healthy.
	stop()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("exit-when-healthy: %v", err)
		}
	case <-cmdtest.Ctx(t).Done():
		t.Fatal("never became healthy")
	}
	if !strings.Contains(out.String(), "is healthy") {
		t.Errorf("no healthy report:\n%s", out)
	}
}

func TestWatchEndsWithContext(t *testing.T) {
	c := cmdtest.Cluster(t, kfake.NumBrokers(1), kfake.SeedTopics(1, "t"))
	env := cmdtest.NewEnv(t, c.ListenAddrs())
	ctx, cancel := context.WithCancel(cmdtest.Ctx(t))
	out := &cmdtest.SyncBuffer{}
	env.F.IO.Out = out
	done := make(chan error, 1)
	go func() {
		done <- runHealth(ctx, &HealthOptions{Factory: env.F, Watch: true, Interval: 10 * time.Millisecond})
	}()
	cmdtest.WaitFor(t, "a report", func() bool { return strings.Contains(out.String(), "is healthy") })
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("watch on a healthy cluster ended with %v", err)
	}
	if n := strings.Count(out.String(), "is healthy"); n != 1 {
		t.Errorf("printed %d reports for an unchanged cluster, want 1", n)
	}
}
