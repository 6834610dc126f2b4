package cmdutil

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// Completion limits: a shell waits for completions, so a slow or dead
// cluster must never stall it. A request gets CompletionBudget; names read
// from the cluster are cached for CompletionTTL and, when the cluster does
// not answer in time, the last names cached are answered however old.
const (
	CompletionBudget = 150 * time.Millisecond
	CompletionTTL    = 30 * time.Second
)

// CompletionFunc is cobra's signature for argument and flag completion.
type CompletionFunc = func(cmd *cobra.Command, args []string, toComplete string) ([]string, cobra.ShellCompDirective)

// CompleteTopics completes topic names (internal topics left out).
func CompleteTopics(f *Factory) CompletionFunc {
	return f.clusterCompletion("topics", func(ctx context.Context, adm *kadm.Client) ([]string, error) {
		tds, err := adm.ListTopics(ctx)
		if err != nil {
			return nil, err
		}
		var names []string
		for _, td := range tds {
			if td.Err == nil && !td.IsInternal {
				names = append(names, td.Topic)
			}
		}
		return names, nil
	})
}

// CompleteGroups completes consumer group names.
func CompleteGroups(f *Factory) CompletionFunc {
	return f.clusterCompletion("groups", func(ctx context.Context, adm *kadm.Client) ([]string, error) {
		groups, err := adm.ListGroups(ctx)
		if err != nil {
			return nil, err
		}
		return groups.Groups(), nil
	})
}

// CompleteBrokerIDs completes broker ids, each described by its address.
func CompleteBrokerIDs(f *Factory) CompletionFunc {
	return f.clusterCompletion("brokers", func(ctx context.Context, adm *kadm.Client) ([]string, error) {
		m, err := adm.BrokerMetadata(ctx)
		if err != nil {
			return nil, err
		}
		var ids []string
		for _, b := range m.Brokers {
			ids = append(ids, fmt.Sprintf("%d\t%s:%d", b.NodeID, b.Host, b.Port))
		}
		return ids, nil
	})
}

// CompleteProfiles completes profile names from the config file.
func CompleteProfiles(f *Factory) CompletionFunc {
	return func(_ *cobra.Command, args []string, toComplete string) ([]string, cobra.ShellCompDirective) {
		cfg, err := f.Config()
		if err != nil {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		return filterCompletions(cfg.Names(), args, toComplete), cobra.ShellCompDirectiveNoFileComp
	}
}

// clusterCompletion answers from the cache when it is fresh, else asks the
// cluster within the budget, else answers from the cache (stale) or nothing.
func (f *Factory) clusterCompletion(kind string, fetch func(context.Context, *kadm.Client) ([]string, error)) CompletionFunc {
	return func(cmd *cobra.Command, args []string, toComplete string) ([]string, cobra.ShellCompDirective) {
		ctx := context.Background()
		if cmd != nil && cmd.Context() != nil {
			ctx = cmd.Context()
		}
		names := f.completionNames(ctx, kind, fetch)
		return filterCompletions(names, args, toComplete), cobra.ShellCompDirectiveNoFileComp
	}
}

func (f *Factory) completionNames(ctx context.Context, kind string, fetch func(context.Context, *kadm.Client) ([]string, error)) []string {
	brokers, err := f.Brokers()
	if err != nil {
		return nil
	}
	cache := completionCache{path: completionCachePath(kind, brokers)}
	cached, age, ok := cache.load()
	if ok && age < CompletionTTL {
		return cached
	}
	ctx, cancel := context.WithTimeout(ctx, CompletionBudget)
	defer cancel()
	type result struct {
		names []string
		err   error
	}
	done := make(chan result, 1)
	go func() {
		cl, err := f.Client(kgo.DialTimeout(CompletionBudget), kgo.RetryTimeout(CompletionBudget), kgo.RequestTimeoutOverhead(CompletionBudget))
		if err != nil {
			done <- result{err: err}
			return
		}
		names, err := fetch(ctx, kadm.NewClient(cl))
		cl.Close()
		done <- result{names, err}
	}()
	select {
	case r := <-done:
		if r.err == nil {
			sort.Strings(r.names)
			cache.store(r.names)
			return r.names
		}
	case <-ctx.Done():
	}
	if ok {
		return cached
	}
	return nil
}

// filterCompletions keeps the names starting with toComplete that are not
// already among args.
func filterCompletions(names, args []string, toComplete string) []string {
	var out []string
	for _, n := range names {
		name, _, _ := strings.Cut(n, "\t")
		if strings.HasPrefix(name, toComplete) && !slices.Contains(args, name) {
			out = append(out, n)
		}
	}
	return out
}

// completionCache is one cached list of names, in a file under the user
// cache dir named after what it lists and which cluster it came from.
type completionCache struct{ path string }

type cachedNames struct {
	Time  time.Time `json:"time"`
	Names []string  `json:"names"`
}

func completionCachePath(kind string, brokers []string) string {
	dir, err := os.UserCacheDir()
	if err != nil {
		return ""
	}
	key := append([]string{kind}, brokers...)
	sum := sha256.Sum256([]byte(strings.Join(key, "\x00")))
	return filepath.Join(dir, "ktool", "completion", kind+"-"+hex.EncodeToString(sum[:8])+".json")
}

func (c completionCache) load() (names []string, age time.Duration, ok bool) {
	if c.path == "" {
		return nil, 0, false
	}
	b, err := os.ReadFile(c.path)
	if err != nil {
		return nil, 0, false
	}
	var cn cachedNames
	if err := json.Unmarshal(b, &cn); err != nil {
		return nil, 0, false
	}
	return cn.Names, time.Since(cn.Time), true
}

// store writes the names; a cache that cannot be written only costs speed.
func (c completionCache) store(names []string) {
	if c.path == "" {
		return
	}
	b, err := json.Marshal(cachedNames{Time: time.Now(), Names: names})
	if err != nil {
		return
	}
	if err := os.MkdirAll(filepath.Dir(c.path), 0o700); err != nil {
		return
	}
	tmp := fmt.Sprintf("%s.%d.tmp", c.path, os.Getpid())
	if err := os.WriteFile(tmp, b, 0o600); err != nil {
		return
	}
	_ = os.Rename(tmp, c.path)
}

// CompleteFirstArg completes with fn only the first argument, for commands
// that take one.
func CompleteFirstArg(fn CompletionFunc) CompletionFunc {
	return func(cmd *cobra.Command, args []string, toComplete string) ([]string, cobra.ShellCompDirective) {
		if len(args) > 0 {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		return fn(cmd, args, toComplete)
	}
}
