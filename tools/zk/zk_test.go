package zk

import (
	"context"
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	gozk "github.com/go-zookeeper/zk"

	"github.com/ktoolhq/ktool/internal/zktest"
	"github.com/ktoolhq/ktool/tools/cmdutil"
	"github.com/ktoolhq/ktool/tools/cmdutil/cmdtest"
)

func TestParseAddress(t *testing.T) {
	tests := []struct {
		in   string
		want Address
	}{
		{"localhost:2181", Address{Servers: []string{"localhost:2181"}}},
		{"a:1,b:2/kafka", Address{Servers: []string{"a:1", "b:2"}, Chroot: "/kafka"}},
		{"a/kafka/prod/", Address{Servers: []string{"a:2181"}, Chroot: "/kafka/prod"}},
		{"a:1/", Address{Servers: []string{"a:1"}}},
	}
	for _, tt := range tests {
		got, err := ParseAddress(tt.in)
		if err != nil || !reflect.DeepEqual(got, tt.want) {
			t.Errorf("ParseAddress(%q) = %+v, %v; want %+v", tt.in, got, err, tt.want)
		}
	}
	for _, bad := range []string{"", "/kafka", "a:1/kafka/../x", "a:1//x"} {
		if _, err := ParseAddress(bad); err == nil {
			t.Errorf("ParseAddress(%q) accepted", bad)
		}
	}
}

func TestCleanPath(t *testing.T) {
	for in, want := range map[string]string{"": "/", "/": "/", "/brokers/ids": "/brokers/ids", "/brokers/": "/brokers"} {
		if got, err := CleanPath(in); err != nil || got != want {
			t.Errorf("CleanPath(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	for _, bad := range []string{"brokers", "/a//b", "/a/../b"} {
		if _, err := CleanPath(bad); err == nil {
			t.Errorf("CleanPath(%q) accepted", bad)
		}
	}
}

func TestDecodeData(t *testing.T) {
	got := DecodeData([]byte(`{"version":1,"brokerid":3,"timestamp":"1700000000000","isr":[1,2]}`))
	want := map[string]any{"version": int64(1), "brokerid": int64(3), "timestamp": "1700000000000", "isr": []any{int64(1), int64(2)}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got %#v", got)
	}
	if got := DecodeData([]byte(`"7"`)); got != "7" {
		t.Errorf("controller_epoch-style data: %#v", got)
	}
	if got := DecodeData([]byte(`12`)); got != int64(12) {
		t.Errorf("number: %#v", got)
	}
	if got := DecodeData([]byte("not json {")); got != "not json {" {
		t.Errorf("plain: %#v", got)
	}
	if got := DecodeData(nil); got != nil {
		t.Errorf("empty: %#v", got)
	}
}

func TestMakeStatAndWriteNode(t *testing.T) {
	st := MakeStat(&gozk.Stat{Version: 2, EphemeralOwner: 0x1000abc, Ctime: 1700000000000, Mtime: 1700000001500,
		Czxid: 0x1a, Mzxid: 0x1b, DataLength: 54})
	if st.EphemeralOwner != "0x1000abc" || !st.Ephemeral() || st.Czxid != "0x1a" ||
		!st.Mtime.Equal(time.UnixMilli(1700000001500)) || st.Mtime.Location() != time.UTC {
		t.Errorf("stat %+v", st)
	}
	var b strings.Builder
	n := Node{Path: "/controller", Data: DecodeData([]byte(`{"version":1,"brokerid":3,"timestamp":"1700000000000"}`)), Stat: st}
	if err := writeNode(&b, n); err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{`"brokerid": 3`, "(timestamp 1700000000000 is 2023-11-14T22:13:20Z)",
		"ephemeral owner: 0x1000abc (ephemeral", "modified:        2023-11-14T22:13:21.5Z (mzxid 0x1b)", "data length:     54"} {
		if !strings.Contains(b.String(), s) {
			t.Errorf("output lacks %q:\n%s", s, b.String())
		}
	}
}

// TestAgainstZooKeeper seeds a Kafka-like layout under a chroot in a real
// ZooKeeper and browses it.
func TestAgainstZooKeeper(t *testing.T) {
	srv := zktest.Start(t)
	ctx := cmdtest.Ctx(t)
	root, err := Dial(ctx, srv.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer root.Close()
	for _, p := range []string{"/kafka", "/kafka/brokers", "/kafka/brokers/ids", "/kafka/brokers/topics", "/kafka/brokers/topics/orders"} {
		if err := root.Create(ctx, p, nil, false); err != nil {
			t.Fatal(err)
		}
	}
	if err := root.Create(ctx, "/kafka/brokers/ids/1", []byte(`{"version":5,"host":"127.0.0.1","port":9092}`), true); err != nil {
		t.Fatal(err)
	}
	if err := root.Create(ctx, "/kafka/controller", []byte(`{"version":1,"brokerid":1,"timestamp":"1700000000000"}`), true); err != nil {
		t.Fatal(err)
	}
	addr := srv.Addr() + "/kafka"
	env := cmdtest.NewEnv(t, nil)
	dial := func(ctx context.Context) (*Conn, error) { return Dial(ctx, addr) }

	t.Run("get", func(t *testing.T) {
		env.Out.Reset()
		o := &GetOptions{Factory: env.F, Dial: dial, Path: "/controller"}
		o.Output.Format = "json"
		if err := runGet(ctx, o); err != nil {
			t.Fatal(err)
		}
		var n Node
		if err := json.Unmarshal(env.Out.Bytes(), &n); err != nil {
			t.Fatal(err)
		}
		d := n.Data.(map[string]any)
		if d["brokerid"] != float64(1) || !n.Stat.Ephemeral() || n.Stat.DataLength != 54 || n.Path != "/controller" {
			t.Errorf("node %+v", n)
		}
	})
	t.Run("get missing", func(t *testing.T) {
		err := runGet(ctx, &GetOptions{Factory: env.F, Dial: dial, Path: "/nope"})
		if err == nil || !strings.Contains(err.Error(), "/nope: no such znode") {
			t.Errorf("err = %v", err)
		}
	})
	t.Run("ls", func(t *testing.T) {
		env.Out.Reset()
		if err := runLs(ctx, &LsOptions{Factory: env.F, Dial: dial, Path: "/"}); err != nil {
			t.Fatal(err)
		}
		if got := env.Out.String(); got != "brokers\ncontroller\n" {
			t.Errorf("ls / under the chroot = %q", got)
		}
		env.Out.Reset()
		if err := runLs(ctx, &LsOptions{Factory: env.F, Dial: dial, Path: "/brokers/ids", Long: true}); err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(env.Out.String(), "0x") {
			t.Errorf("ls -l lacks the ephemeral owner:\n%s", env.Out)
		}
	})
	t.Run("tree", func(t *testing.T) {
		env.Out.Reset()
		if err := runTree(ctx, &TreeOptions{Factory: env.F, Dial: dial, Path: "/"}); err != nil {
			t.Fatal(err)
		}
		want := "/\n├── brokers\n│   ├── ids\n│   │   └── 1 [ephemeral]\n│   └── topics\n│       └── orders\n└── controller [ephemeral]\n"
		if got := env.Out.String(); got != want {
			t.Errorf("tree:\n%s\nwant:\n%s", got, want)
		}
		env.Out.Reset()
		o := &TreeOptions{Factory: env.F, Dial: dial, Path: "/brokers", Depth: 1}
		o.Output.Format = "json"
		if err := runTree(ctx, o); err != nil {
			t.Fatal(err)
		}
		var n TreeNode
		if err := json.Unmarshal(env.Out.Bytes(), &n); err != nil {
			t.Fatal(err)
		}
		if len(n.Children) != 2 || !n.Children[0].Truncated || len(n.Children[0].Children) != 0 {
			t.Errorf("depth 1 tree %+v", n)
		}
	})
}

func TestDialFailsClearly(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	_, err := Dial(ctx, "127.0.0.1:1")
	if err == nil || !strings.Contains(err.Error(), "127.0.0.1:1") || !strings.Contains(err.Error(), "--zookeeper") {
		t.Errorf("err = %v", err)
	}
}

func TestZookeeperAddressRequired(t *testing.T) {
	t.Setenv("KTOOL_ZOOKEEPER", "")
	env := cmdtest.NewEnv(t, nil)
	cmd := NewCommand(env.F)
	cmd.SetArgs([]string{"ls", "/"})
	cmd.SilenceErrors, cmd.SilenceUsage = true, true
	var ee *cmdutil.ExitErr
	if err := cmd.ExecuteContext(cmdtest.Ctx(t)); !errors.As(err, &ee) || ee.Code != cmdutil.ExitUsage {
		t.Errorf("err = %v, want a usage error naming --zookeeper", err)
	}
}
