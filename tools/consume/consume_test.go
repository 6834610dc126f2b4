package consume

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/ktoolhq/ktool/tools/cmdutil"
	"github.com/ktoolhq/ktool/tools/cmdutil/cmdtest"
)

func TestParseFormat(t *testing.T) {
	f, err := ParseFormat(`%t/%p@%o %k=%s [%h] %K %S %T%%\t\n`)
	if err != nil {
		t.Fatal(err)
	}
	r := &kgo.Record{Topic: "t", Partition: 2, Offset: 7, Key: []byte("k"), Value: []byte("vv"),
		Headers:   []kgo.RecordHeader{{Key: "a", Value: []byte("1")}, {Key: "b", Value: []byte("2")}},
		Timestamp: time.UnixMilli(1700000000123)}
	if got, want := string(f.Append(nil, r)), "t/2@7 k=vv [a=1,b=2] 1 2 1700000000123%\t\n"; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
	r.Key = nil
	if f, _ := ParseFormat("%K"); string(f.Append(nil, r)) != "-1" {
		t.Error("a null key's length is not -1")
	}
	for _, bad := range []string{"%x", "%", `\`, `\q`} {
		if _, err := ParseFormat(bad); err == nil {
			t.Errorf("accepted %q", bad)
		}
	}
}

func TestParseOffsetAndResolve(t *testing.T) {
	tests := []struct {
		in   string
		want int64 // for a log [10, 20), time offset 15
	}{
		{"beginning", 10}, {"end", 20}, {"12", 12}, {"3", 10}, {"99", 20}, {"-4", 16}, {"-40", 10}, {"@5", 15},
	}
	for _, tt := range tests {
		spec, err := ParseOffset(tt.in)
		if err != nil {
			t.Fatalf("%s: %v", tt.in, err)
		}
		if got := spec.Resolve(10, 20, 15); got != tt.want {
			t.Errorf("%s resolves to %d, want %d", tt.in, got, tt.want)
		}
	}
	if spec, _ := ParseOffset("@5"); spec.Resolve(10, 20, -1) != 20 {
		t.Error("a time after the last record does not resolve to the end")
	}
	for _, bad := range []string{"", "-0", "-x", "@", "@-3", "first", "1.5"} {
		if _, err := ParseOffset(bad); err == nil {
			t.Errorf("accepted %q", bad)
		}
	}
}

// seed writes values v0..v(n-1) with keys k<i>, header h=<i> and timestamps
// 1000*(i+1) to partition 0 of topic t.
func seed(t *testing.T, env *cmdtest.Env, n int) {
	t.Helper()
	cl, err := env.F.Client(kgo.DefaultProduceTopic("t"), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	for i := 0; i < n; i++ {
		r := &kgo.Record{Key: []byte(fmt.Sprintf("k%d", i)), Value: []byte(fmt.Sprintf("v%d", i)),
			Headers: []kgo.RecordHeader{{Key: "h", Value: []byte(fmt.Sprint(i))}}, Timestamp: time.UnixMilli(int64(1000 * (i + 1)))}
		if err := cl.ProduceSync(cmdtest.Ctx(t), r).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
}

func newEnv(t *testing.T) *cmdtest.Env {
	c := cmdtest.Cluster(t, kfake.NumBrokers(1), kfake.SeedTopics(2, "t"))
	env := cmdtest.NewEnv(t, c.ListenAddrs())
	seed(t, env, 5)
	return env
}

func consume(t *testing.T, env *cmdtest.Env, o *Options) string {
	t.Helper()
	env.Out.Reset()
	o.Factory, o.Topic = env.F, "t"
	if o.Format == "" {
		o.Format = `%s\n`
	}
	if o.Offset == "" {
		o.Offset = "beginning"
	}
	if o.Assignor == "" {
		o.Assignor = "range"
	}
	if o.PluginDir == "" {
		o.PluginDir = t.TempDir()
	}
	if err := run(cmdtest.Ctx(t), o); err != nil {
		t.Fatalf("consume %+v: %v", o, err)
	}
	return env.Out.String()
}

func TestConsumeToEndWithFormat(t *testing.T) {
	env := newEnv(t)
	got := consume(t, env, &Options{ExitAtEnd: true, Format: `%t %p %o %k=%s %h %T\n`})
	want := ""
	for i := 0; i < 5; i++ {
		want += fmt.Sprintf("t 0 %d k%d=v%d h=%d %d\n", i, i, i, i, 1000*(i+1))
	}
	if got != want {
		t.Errorf("got\n%s\nwant\n%s", got, want)
	}
}

func TestConsumeOffsets(t *testing.T) {
	env := newEnv(t)
	for _, tt := range []struct{ offset, want string }{
		{"-2", "v3\nv4\n"},
		{"3", "v3\nv4\n"},
		{"@2500", "v2\nv3\nv4\n"},
		{"end", ""},
	} {
		if got := consume(t, env, &Options{ExitAtEnd: true, Offset: tt.offset, Partitions: []int32{0}}); got != tt.want {
			t.Errorf("--offset %s: got %q, want %q", tt.offset, got, tt.want)
		}
	}
}

func TestConsumeCount(t *testing.T) {
	env := newEnv(t)
	if got := consume(t, env, &Options{Count: 3}); got != "v0\nv1\nv2\n" {
		t.Errorf("-c 3: %q", got)
	}
}

func TestConsumeGroupResumes(t *testing.T) {
	env := newEnv(t)
	if got := consume(t, env, &Options{Group: "g", Count: 2, Assignor: "cooperative-sticky"}); got != "v0\nv1\n" {
		t.Fatalf("first run: %q", got)
	}
	if got := consume(t, env, &Options{Group: "g", ExitAtEnd: true}); got != "v2\nv3\nv4\n" {
		t.Errorf("second run resumed at %q, want v2..v4", got)
	}
}

type brokenPipe struct{}

func (brokenPipe) Write([]byte) (int, error) { return 0, syscall.EPIPE }

func TestClosedStdoutEndsQuietly(t *testing.T) {
	env := newEnv(t)
	env.F.IO.Out = brokenPipe{}
	ctx, cancel := context.WithTimeout(cmdtest.Ctx(t), 10*time.Second)
	defer cancel()
	o := &Options{Factory: env.F, Topic: "t", Offset: "beginning", Format: `%s\n`, Assignor: "range"}
	if err := run(ctx, o); err != nil {
		t.Errorf("err = %v, want a quiet end", err)
	}
	if ctx.Err() != nil {
		t.Error("kept running after stdout closed")
	}
}

func TestConsumeErrors(t *testing.T) {
	env := newEnv(t)
	ctx := cmdtest.Ctx(t)
	base := func() *Options {
		return &Options{Factory: env.F, Topic: "t", Offset: "beginning", Format: `%s\n`, Assignor: "range"}
	}
	usage := []*Options{base(), base(), base(), base()}
	usage[0].Offset = "sideways"
	usage[1].Format = "%q"
	usage[2].Group, usage[2].Partitions = "g", []int32{0}
	usage[3].Partitions = []int32{9}
	for _, o := range usage {
		var ee *cmdutil.ExitErr
		if err := run(ctx, o); !errors.As(err, &ee) || ee.Code != cmdutil.ExitUsage {
			t.Errorf("%+v: err = %v, want a usage error", o, err)
		}
	}
	o := base()
	o.Topic = "missing"
	if err := run(ctx, o); err == nil || !strings.Contains(err.Error(), `"missing" does not exist`) {
		t.Errorf("missing topic: %v", err)
	}
}

func TestFlags(t *testing.T) {
	ios, _, _, _ := cmdutil.Test()
	f := cmdutil.NewFactory(ios, cmdutil.BuildInfo{})
	var got *Options
	cmd := NewCommand(f, func(_ context.Context, o *Options) error { got = o; return nil })
	cmd.SetArgs([]string{"t", "-o", "-5", "-p", "0,2", "-c", "9", "-g", "grp", "--assignor", "sticky", "--plugin-dir", "/p", "-f", `%k\n`, "-e"})
	if err := cmd.Execute(); err != nil {
		t.Fatal(err)
	}
	if got.Topic != "t" || got.Offset != "-5" || fmt.Sprint(got.Partitions) != "[0 2]" || got.Count != 9 ||
		got.Group != "grp" || got.Assignor != "sticky" || got.PluginDir != "/p" || got.Format != `%k\n` || !got.ExitAtEnd {
		t.Errorf("parsed %+v", got)
	}
}

// TestConsumeIsolation: read_committed prints only committed transactions and
// -e ends although the log ends with a transaction marker, in both modes.
func TestConsumeIsolation(t *testing.T) {
	c := cmdtest.Cluster(t, kfake.NumBrokers(1), kfake.SeedTopics(1, "t"))
	env := cmdtest.NewEnv(t, c.ListenAddrs())
	cl, err := env.F.Client(kgo.DefaultProduceTopic("t"), kgo.TransactionalID("consume-test"))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx := cmdtest.Ctx(t)
	for _, txn := range []struct {
		values []string
		commit bool
	}{{[]string{"c0", "c1"}, true}, {[]string{"a0"}, false}, {[]string{"c2"}, true}} {
		if err := cl.BeginTransaction(); err != nil {
			t.Fatal(err)
		}
		for _, v := range txn.values {
			if err := cl.ProduceSync(ctx, &kgo.Record{Value: []byte(v)}).FirstErr(); err != nil {
				t.Fatal(err)
			}
		}
		if err := cl.EndTransaction(ctx, kgo.TransactionEndTry(txn.commit)); err != nil {
			t.Fatal(err)
		}
	}
	if got := consume(t, env, &Options{ExitAtEnd: true, Isolation: "read_committed"}); got != "c0\nc1\nc2\n" {
		t.Errorf("read_committed: %q", got)
	}
	if got := consume(t, env, &Options{ExitAtEnd: true}); got != "c0\nc1\na0\nc2\n" {
		t.Errorf("read_uncommitted: %q", got)
	}
	o := &Options{Factory: env.F, Topic: "t", Isolation: "serializable", Offset: "beginning", Format: `%s\n`}
	if err := run(ctx, o); err == nil {
		t.Error("--isolation serializable accepted")
	}
}
