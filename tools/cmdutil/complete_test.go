package cmdutil

import (
	"context"
	"encoding/json"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/spf13/cobra"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
)

// completionEnv is a Factory with a private config file and cache dir.
func completionEnv(t *testing.T, brokers ...string) *Factory {
	t.Helper()
	t.Setenv("XDG_CACHE_HOME", t.TempDir())
	t.Setenv("HOME", t.TempDir())
	t.Setenv("KTOOL_BROKERS", "")
	t.Setenv("KTOOL_PROFILE", "")
	ios, _, _, _ := Test()
	f := NewFactory(ios, BuildInfo{})
	f.ConfigPath = filepath.Join(t.TempDir(), "config.yaml")
	f.BrokersFlag = brokers
	return f
}

func complete(fn CompletionFunc, args []string, toComplete string) ([]string, time.Duration) {
	start := time.Now()
	cmd := &cobra.Command{}
	cmd.SetContext(context.Background())
	names, dir := fn(cmd, args, toComplete)
	if dir != cobra.ShellCompDirectiveNoFileComp {
		panic("completions must not fall back to file names")
	}
	return names, time.Since(start)
}

func TestCompleteTopicsCachesNames(t *testing.T) {
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(1, "orders", "payments", "audit"))
	if err != nil {
		t.Fatal(err)
	}
	f := completionEnv(t, c.ListenAddrs()...)
	got, _ := complete(CompleteTopics(f), nil, "")
	if !slices.Equal(got, []string{"audit", "orders", "payments"}) {
		t.Fatalf("topics %v", got)
	}
	got, _ = complete(CompleteTopics(f), []string{"orders"}, "")
	if !slices.Equal(got, []string{"audit", "payments"}) {
		t.Fatalf("topics after orders %v", got)
	}
	got, _ = complete(CompleteTopics(f), nil, "pa")
	if !slices.Equal(got, []string{"payments"}) {
		t.Fatalf("topics with prefix %v", got)
	}
	// The cluster is gone; the cache (fresh) still answers.
	c.Close()
	got, _ = complete(CompleteTopics(f), nil, "or")
	if !slices.Equal(got, []string{"orders"}) {
		t.Fatalf("cached topics %v", got)
	}
}

func TestCompleteBrokerIDsAndGroups(t *testing.T) {
	c, err := kfake.NewCluster(kfake.NumBrokers(3), kfake.SeedTopics(1, "t"))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	f := completionEnv(t, c.ListenAddrs()...)
	ids, _ := complete(CompleteBrokerIDs(f), nil, "")
	if len(ids) != 3 || !strings.HasPrefix(ids[0], "0\t127.0.0.1:") {
		t.Fatalf("broker ids %q", ids)
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.ListenAddrs()...), kgo.ConsumerGroup("billing"), kgo.ConsumeTopics("t"))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	for {
		// Joining the group happens in the background of a poll.
		pctx, pcancel := context.WithTimeout(ctx, 100*time.Millisecond)
		cl.PollFetches(pctx)
		pcancel()
		groups, _ := complete(CompleteGroups(f), nil, "b")
		if slices.Equal(groups, []string{"billing"}) {
			return
		}
		if ctx.Err() != nil {
			t.Fatalf("groups %v", groups)
		}
		// A miss was cached; drop it so the next round asks again.
		os.RemoveAll(filepath.Join(os.Getenv("XDG_CACHE_HOME"), "ktool"))
	}
}

// A dead cluster: nothing to answer and nothing cached; the completion
// returns within its budget (bounded here far above it) with no names.
func TestCompletionDeadClusterAnswersNothing(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	f := completionEnv(t, addr)
	for _, fn := range []CompletionFunc{CompleteTopics(f), CompleteGroups(f), CompleteBrokerIDs(f)} {
		got, took := complete(fn, nil, "")
		if len(got) != 0 || took > 2*time.Second {
			t.Fatalf("dead cluster: %v after %s", got, took)
		}
	}
}

// stall accepts connections and never answers, like a hung broker.
func stall(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var conns []net.Conn
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, c)
			mu.Unlock()
		}
	}()
	t.Cleanup(func() {
		ln.Close()
		mu.Lock()
		defer mu.Unlock()
		for _, c := range conns {
			c.Close()
		}
	})
	return ln.Addr().String()
}

// A hung cluster with names cached long ago: the stale names are answered
// within the budget rather than nothing or a stalled shell.
func TestCompletionHungClusterAnswersStaleCache(t *testing.T) {
	addr := stall(t)
	f := completionEnv(t, addr)
	got, took := complete(CompleteTopics(f), nil, "")
	if len(got) != 0 || took > 2*time.Second {
		t.Fatalf("hung cluster, no cache: %v after %s", got, took)
	}
	path := completionCachePath("topics", []string{addr})
	b, err := json.Marshal(cachedNames{Time: time.Now().Add(-time.Hour), Names: []string{"old-a", "old-b"}})
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
	got, took = complete(CompleteTopics(f), nil, "old-b")
	if !slices.Equal(got, []string{"old-b"}) || took > 2*time.Second {
		t.Fatalf("hung cluster, stale cache: %v after %s", got, took)
	}
	// Another cluster's cache is not used.
	other := completionEnv(t, stall(t))
	if got, _ := complete(CompleteTopics(other), nil, ""); len(got) != 0 {
		t.Fatalf("names of another cluster: %v", got)
	}
}

func TestCompleteProfiles(t *testing.T) {
	f := completionEnv(t)
	cfg, err := f.Config()
	if err != nil {
		t.Fatal(err)
	}
	cfg.Profiles["local"] = &Profile{Brokers: []string{"127.0.0.1:9092"}}
	cfg.Profiles["prod"] = &Profile{Brokers: []string{"127.0.0.1:9093"}}
	cfg.Profiles["staging"] = &Profile{Brokers: []string{"127.0.0.1:9094"}}
	if err := cfg.Save(); err != nil {
		t.Fatal(err)
	}
	got, _ := complete(CompleteProfiles(f), nil, "")
	if !slices.Equal(got, []string{"local", "prod", "staging"}) {
		t.Fatalf("profiles %v", got)
	}
	got, _ = complete(CompleteProfiles(f), nil, "p")
	if !slices.Equal(got, []string{"prod"}) {
		t.Fatalf("profiles with prefix %v", got)
	}
}

func TestCompletePlugins(t *testing.T) {
	dir := t.TempDir()
	for _, name := range []string{"ktool-codec-brotli", "ktool-assignor-fair", "README"} {
		if err := os.WriteFile(filepath.Join(dir, name), nil, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	f := completionEnv(t)
	cmd := &cobra.Command{}
	cmd.Flags().String("plugin-dir", dir, "")
	cmd.Flags().String("kind", "", "")
	names := func(toComplete string) []string {
		got, _ := CompletePlugins(f)(cmd, nil, toComplete)
		out := make([]string, len(got))
		for i, g := range got {
			out[i], _, _ = strings.Cut(g, "\t")
		}
		return out
	}
	all := names("")
	for _, want := range []string{"brotli", "fair", "range", "cooperative-sticky", "zstd", "gzip"} {
		if !slices.Contains(all, want) {
			t.Errorf("%q missing from %v", want, all)
		}
	}
	if slices.Contains(all, "README") || slices.Contains(all, "") {
		t.Errorf("non-plugin files listed: %v", all)
	}
	if err := cmd.Flags().Set("kind", "codec"); err != nil {
		t.Fatal(err)
	}
	codecs := names("")
	if slices.Contains(codecs, "fair") || slices.Contains(codecs, "range") || !slices.Contains(codecs, "brotli") {
		t.Errorf("codecs %v", codecs)
	}
	if got := names("b"); !slices.Equal(got, []string{"brotli"}) {
		t.Errorf("prefix b: %v", got)
	}
}
