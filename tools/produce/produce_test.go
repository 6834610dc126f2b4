package produce

import (
	"context"
	"errors"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/ktoolhq/ktool/tools/cmdutil"
	"github.com/ktoolhq/ktool/tools/cmdutil/cmdtest"
)

func readAll(t *testing.T, env *cmdtest.Env, topic string, partition int32, n int) []*kgo.Record {
	t.Helper()
	cl, err := env.F.Client(kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: {partition: kgo.NewOffset().AtStart()}}))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	var out []*kgo.Record
	ctx := cmdtest.Ctx(t)
	for len(out) < n {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("read %d of %d records", len(out), n)
		}
		out = append(out, fs.Records()...)
	}
	return out
}

func TestProduceKeysHeadersPartition(t *testing.T) {
	c := cmdtest.Cluster(t, kfake.NumBrokers(2), kfake.SeedTopics(3, "t"))
	env := cmdtest.NewEnv(t, c.ListenAddrs())
	env.In.WriteString("k1:v1\nk2:v:2\r\n:empty-key\nk4:last")
	o := &Options{Factory: env.F, Topic: "t", KeySeparator: ":", Headers: []string{"src=cli", "n=1"},
		Partition: 2, Acks: "all", Compression: "zstd", Linger: 5 * time.Millisecond, Verbose: true}
	if err := run(cmdtest.Ctx(t), o); err != nil {
		t.Fatal(err)
	}
	if env.Out.Len() != 0 {
		t.Errorf("wrote to stdout: %q", env.Out)
	}
	if n := strings.Count(env.ErrOut.String(), "delivered to t-2@"); n != 4 {
		t.Errorf("-v reported %d deliveries:\n%s", n, env.ErrOut)
	}
	rs := readAll(t, env, "t", 2, 4)
	want := [][2]string{{"k1", "v1"}, {"k2", "v:2"}, {"", "empty-key"}, {"k4", "last"}}
	for i, w := range want {
		r := rs[i]
		if string(r.Key) != w[0] || string(r.Value) != w[1] || len(r.Headers) != 2 ||
			r.Headers[0].Key != "src" || string(r.Headers[0].Value) != "cli" {
			t.Errorf("record %d: key %q value %q headers %v", i, r.Key, r.Value, r.Headers)
		}
	}
}

func TestProduceQuietWithoutVerbose(t *testing.T) {
	c := cmdtest.Cluster(t, kfake.NumBrokers(1), kfake.SeedTopics(1, "t"))
	env := cmdtest.NewEnv(t, c.ListenAddrs())
	env.In.WriteString("a\nb\n")
	if err := run(cmdtest.Ctx(t), &Options{Factory: env.F, Topic: "t", Partition: -1, Acks: "1", Compression: "none"}); err != nil {
		t.Fatal(err)
	}
	if env.Out.Len()+env.ErrOut.Len() != 0 {
		t.Errorf("printed %q %q", env.Out, env.ErrOut)
	}
	if rs := readAll(t, env, "t", 0, 2); string(rs[0].Value) != "a" || string(rs[1].Value) != "b" {
		t.Errorf("records %q %q", rs[0].Value, rs[1].Value)
	}
}

func TestProduceMissingSeparator(t *testing.T) {
	c := cmdtest.Cluster(t, kfake.NumBrokers(1), kfake.SeedTopics(1, "t"))
	env := cmdtest.NewEnv(t, c.ListenAddrs())
	env.In.WriteString("k:v\nnosep\n")
	err := run(cmdtest.Ctx(t), &Options{Factory: env.F, Topic: "t", KeySeparator: ":", Partition: -1, Acks: "all"})
	if err == nil || !strings.Contains(err.Error(), "line 2") {
		t.Errorf("err = %v, want it to name line 2", err)
	}
}

func TestProduceDeliveryFailureExits1(t *testing.T) {
	c := cmdtest.Cluster(t, kfake.NumBrokers(1))
	env := cmdtest.NewEnv(t, c.ListenAddrs())
	env.F.ClientTimeout = 2 * time.Second
	env.In.WriteString("x\n")
	err := run(cmdtest.Ctx(t), &Options{Factory: env.F, Topic: "missing", Partition: -1, Acks: "all"})
	if code := cmdutil.ExitCode(&strings.Builder{}, err); code != cmdutil.ExitError {
		t.Fatalf("exit %d (%v), want 1", code, err)
	}
	if !strings.Contains(err.Error(), "1 of 1 records to missing were not delivered") {
		t.Errorf("err = %v", err)
	}
}

func TestProduceUsageErrors(t *testing.T) {
	env := cmdtest.NewEnv(t, []string{"127.0.0.1:1"})
	for _, o := range []*Options{
		{Acks: "2", Partition: -1},
		{Acks: "all", Compression: "brotli", Partition: -1},
		{Acks: "all", Headers: []string{"novalue"}, Partition: -1},
		{Acks: "all", Partition: -3},
	} {
		o.Factory, o.Topic = env.F, "t"
		var ee *cmdutil.ExitErr
		if err := run(cmdtest.Ctx(t), o); !errors.As(err, &ee) || ee.Code != cmdutil.ExitUsage {
			t.Errorf("%+v: err = %v, want a usage error", o, err)
		}
	}
}

func TestFlags(t *testing.T) {
	ios, _, _, _ := cmdutil.Test()
	f := cmdutil.NewFactory(ios, cmdutil.BuildInfo{})
	var got *Options
	cmd := NewCommand(f, func(_ context.Context, o *Options) error { got = o; return nil })
	cmd.SetArgs([]string{"t", "-K", "|", "-H", "a=1", "-H", "b=2", "-p", "1", "--acks", "0", "-z", "lz4", "--linger", "20ms", "-v"})
	if err := cmd.Execute(); err != nil {
		t.Fatal(err)
	}
	if got.Topic != "t" || got.KeySeparator != "|" || strings.Join(got.Headers, ",") != "a=1,b=2" || got.Partition != 1 ||
		got.Acks != "0" || got.Compression != "lz4" || got.Linger != 20*time.Millisecond || !got.Verbose {
		t.Errorf("parsed %+v", got)
	}
}

func TestInterruptDeliversWhatWasRead(t *testing.T) {
	c := cmdtest.Cluster(t, kfake.NumBrokers(1), kfake.SeedTopics(1, "t"))
	env := cmdtest.NewEnv(t, c.ListenAddrs())
	pr, pw := io.Pipe()
	defer pw.Close()
	env.F.IO.In = pr
	ctx, cancel := context.WithCancel(cmdtest.Ctx(t))
	done := make(chan error, 1)
	go func() {
		done <- run(ctx, &Options{Factory: env.F, Topic: "t", Partition: -1, Acks: "all", Verbose: true})
	}()
	if _, err := pw.Write([]byte("one\ntwo\n")); err != nil {
		t.Fatal(err)
	}
	readAll(t, env, "t", 0, 2)
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("interrupted produce: %v", err)
	}
}
