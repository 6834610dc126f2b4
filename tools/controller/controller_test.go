package controller

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"

	"github.com/ktoolhq/ktool/internal/zktest"
	"github.com/ktoolhq/ktool/tools/cmdutil"
	"github.com/ktoolhq/ktool/tools/cmdutil/cmdtest"
	"github.com/ktoolhq/ktool/tools/zk"
)

func TestParseZNodes(t *testing.T) {
	z, err := ParseControllerZNode([]byte(`{"version":1,"brokerid":2,"timestamp":"1700000000000"}`))
	if err != nil || z.BrokerID != 2 || z.Version != 1 || !z.Timestamp.Equal(time.UnixMilli(1700000000000)) {
		t.Errorf("got %+v, %v", z, err)
	}
	if z, err := ParseControllerZNode([]byte(`{"version":1,"brokerid":0,"timestamp":1700000000000}`)); err != nil || z.BrokerID != 0 {
		t.Errorf("numeric timestamp: %+v, %v", z, err)
	}
	for _, bad := range []string{``, `{}`, `{"brokerid":1,"timestamp":"soon"}`, `[1]`} {
		if _, err := ParseControllerZNode([]byte(bad)); err == nil {
			t.Errorf("accepted %q", bad)
		}
	}
	if e, err := ParseControllerEpoch([]byte("17")); err != nil || e != 17 {
		t.Errorf("epoch %d, %v", e, err)
	}
	if _, err := ParseControllerEpoch([]byte("x")); err == nil {
		t.Error("accepted a non-number epoch")
	}
}

func TestFromMetadata(t *testing.T) {
	t.Setenv("KTOOL_ZOOKEEPER", "")
	c := cmdtest.Cluster(t, kfake.NumBrokers(3))
	cmdtest.FakeMetadata(c, 2, nil, nil)
	env := cmdtest.NewEnv(t, c.ListenAddrs())
	o := &Options{Factory: env.F}
	o.Output.Format = "json"
	if err := run(cmdtest.Ctx(t), o); err != nil {
		t.Fatal(err)
	}
	var info Info
	if err := json.Unmarshal(env.Out.Bytes(), &info); err != nil {
		t.Fatal(err)
	}
	if info.ID != 2 || info.Endpoint != c.ListenAddrs()[2] || info.ZooKeeper != nil || info.ClusterID != cmdtest.ClusterID {
		t.Errorf("info %+v", info)
	}
}

func TestUnreachableWithoutZooKeeperFails(t *testing.T) {
	t.Setenv("KTOOL_ZOOKEEPER", "")
	env := cmdtest.NewEnv(t, []string{"127.0.0.1:1"})
	env.F.ClientTimeout = 300 * time.Millisecond
	if err := run(cmdtest.Ctx(t), &Options{Factory: env.F}); err == nil || !strings.Contains(err.Error(), "127.0.0.1:1") {
		t.Errorf("err = %v", err)
	}
}

func TestWithZooKeeperAndResign(t *testing.T) {
	srv := zktest.Start(t)
	ctx := cmdtest.Ctx(t)
	c := cmdtest.Cluster(t, kfake.NumBrokers(2))
	cmdtest.FakeMetadata(c, 1, nil, nil)
	env := cmdtest.NewEnv(t, c.ListenAddrs())

	seed, err := zk.Dial(ctx, srv.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer seed.Close()
	if err := seed.Create(ctx, "/kafka", nil, false); err != nil {
		t.Fatal(err)
	}
	if err := seed.Create(ctx, "/kafka/controller_epoch", []byte("4"), false); err != nil {
		t.Fatal(err)
	}
	if err := seed.Create(ctx, "/kafka/controller", []byte(`{"version":1,"brokerid":1,"timestamp":"1700000000000"}`), true); err != nil {
		t.Fatal(err)
	}
	addr := srv.Addr() + "/kafka"

	o := &Options{Factory: env.F, Zookeeper: addr}
	o.Output.Format = "json"
	if err := run(ctx, o); err != nil {
		t.Fatal(err)
	}
	var info Info
	if err := json.Unmarshal(env.Out.Bytes(), &info); err != nil {
		t.Fatal(err)
	}
	z := info.ZooKeeper
	if info.ID != 1 || z == nil || z.BrokerID != 1 || z.Epoch != 4 || !strings.HasPrefix(z.Session, "0x") ||
		!z.Timestamp.Equal(time.UnixMilli(1700000000000)) {
		t.Fatalf("info %+v zk %+v", info, z)
	}
	env.Out.Reset()
	o.Output.Format = "table"
	if err := run(ctx, o); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(env.Out.String(), "broker 1, elected 2023-11-14T22:13:20Z") {
		t.Errorf("table:\n%s", env.Out)
	}

	// A stand-in broker takes over once /controller is gone.
	done := make(chan error, 1)
	go func() {
		tick := time.NewTicker(10 * time.Millisecond)
		defer tick.Stop()
		for range tick.C {
			ok, _, err := seed.Exists(ctx, "/kafka/controller")
			if err != nil {
				done <- err
				return
			}
			if !ok {
				done <- seed.Create(ctx, "/kafka/controller", []byte(`{"version":1,"brokerid":0,"timestamp":"1700000005000"}`), true)
				return
			}
		}
	}()
	env.Out.Reset()
	if err := runResign(ctx, &ResignOptions{Factory: env.F, Zookeeper: addr, Yes: true, Wait: 10 * time.Second}); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	out := env.Out.String()
	if !strings.Contains(out, "Deleted /controller (broker 1)") || !strings.Contains(out, "New controller: broker 0") {
		t.Errorf("resign output:\n%s", out)
	}
}

func TestResignNeedsYes(t *testing.T) {
	env := cmdtest.NewEnv(t, nil)
	cmd := NewResignCommand(env.F, func(context.Context, *ResignOptions) error { return nil })
	cmd.SetArgs([]string{"--zookeeper", "x:1"})
	cmd.SilenceErrors, cmd.SilenceUsage = true, true
	var ee *cmdutil.ExitErr
	if err := cmd.Execute(); !errors.As(err, &ee) || ee.Code != cmdutil.ExitUsage {
		t.Errorf("err = %v, want a usage error", err)
	}
}
