package authz

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ktoolhq/ktool/broker/coord"
	"github.com/ktoolhq/ktool/internal/acl"
)

// ClassName is Kafka's authorizer class, accepted as an alias of "acl".
const ClassName = "kafka.security.authorizer.AclAuthorizer"

// Enabled reports whether authorizer.class.name turns the authorizer on, and
// rejects a class ktool does not have.
func Enabled(className string) (bool, error) {
	switch strings.TrimSpace(className) {
	case "":
		return false, nil
	case ClassName, "kafka.security.auth.SimpleAclAuthorizer", "acl":
		return true, nil
	}
	return false, fmt.Errorf("authorizer.class.name %q is not supported (empty, acl or %s)", className, ClassName)
}

// ErrInvalid marks a binding Create refuses for what it says (not for the store).
var ErrInvalid = errors.New("invalid ACL binding")

// Authorizer decides with the cached ACLs and writes ACLs to the store.
type Authorizer struct {
	super       []string
	allowIfNone bool
	logger      *slog.Logger

	mu        sync.Mutex // guards resources and rebuilding the index
	resources map[acl.Resource][]acl.Entry
	index     atomic.Pointer[acl.Index]
}

// New makes an authorizer with super.users (principals) and
// allow.everyone.if.no.acl.found; it holds no ACL until Load.
func New(superUsers []string, allowIfNone bool, logger *slog.Logger) *Authorizer {
	a := &Authorizer{super: superUsers, allowIfNone: allowIfNone, logger: logger, resources: map[acl.Resource][]acl.Entry{}}
	a.index.Store(acl.NewIndex(nil, superUsers, allowIfNone))
	return a
}

// Index is the current cache (immutable).
func (a *Authorizer) Index() *acl.Index { return a.index.Load() }

// Authorize decides with the cache; it takes no lock and allocates nothing.
func (a *Authorizer) Authorize(p acl.Principal, host string, op acl.Operation, rt acl.ResourceType, name string) bool {
	return a.index.Load().Authorize(p, host, op, rt, name).Allowed
}

// AuthorizeAny is acl.Index.AuthorizeAny on the cache.
func (a *Authorizer) AuthorizeAny(p acl.Principal, host string, op acl.Operation, rt acl.ResourceType) bool {
	return a.index.Load().AuthorizeAny(p, host, op, rt).Allowed
}

func (a *Authorizer) rebuildLocked() {
	var all []acl.Binding
	for r, es := range a.resources {
		for _, e := range es {
			all = append(all, acl.Binding{Resource: r, Entry: e})
		}
	}
	sort.Slice(all, func(i, j int) bool { return bindingLess(all[i], all[j]) })
	a.index.Store(acl.NewIndex(all, a.super, a.allowIfNone))
}

func bindingLess(x, y acl.Binding) bool {
	if x.Type != y.Type {
		return x.Type < y.Type
	}
	if x.Pattern != y.Pattern {
		return x.Pattern < y.Pattern
	}
	if x.Name != y.Name {
		return x.Name < y.Name
	}
	if x.Principal != y.Principal {
		return x.Principal < y.Principal
	}
	if x.Host != y.Host {
		return x.Host < y.Host
	}
	if x.Operation != y.Operation {
		return x.Operation < y.Operation
	}
	return x.Permission < y.Permission
}

// Load reads every stored ACL and replaces the cache.
func (a *Authorizer) Load(ctx context.Context, s coord.Store) error {
	res := map[acl.Resource][]acl.Entry{}
	for _, pt := range []acl.PatternType{acl.PatternLiteral, acl.PatternPrefixed} {
		for _, rt := range acl.StoredResourceTypes {
			dir := ResourcePath(acl.Resource{Type: rt, Pattern: pt})
			dir = strings.TrimSuffix(dir, "/")
			names, _, err := s.Children(ctx, dir)
			if errors.Is(err, coord.ErrNoNode) {
				continue
			}
			if err != nil {
				return err
			}
			for _, n := range names {
				r := acl.Resource{Type: rt, Name: n, Pattern: pt}
				es, err := a.read(ctx, s, r)
				if err != nil {
					return err
				}
				if len(es) > 0 {
					res[r] = es
				}
			}
		}
	}
	a.mu.Lock()
	a.resources = res
	a.rebuildLocked()
	a.mu.Unlock()
	return nil
}

func (a *Authorizer) read(ctx context.Context, s coord.Store, r acl.Resource) ([]acl.Entry, error) {
	data, _, err := s.Get(ctx, ResourcePath(r))
	if errors.Is(err, coord.ErrNoNode) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	es, err := DecodeEntries(data)
	if err != nil {
		a.logger.Warn("ignoring an unreadable ACL znode", "path", ResourcePath(r), "err", err)
		return nil, nil
	}
	return es, nil
}

// reload re-reads resources into the cache and rebuilds it once.
func (a *Authorizer) reload(ctx context.Context, s coord.Store, rs []acl.Resource) error {
	got := make([][]acl.Entry, len(rs))
	for i, r := range rs {
		es, err := a.read(ctx, s, r)
		if err != nil {
			return err
		}
		got[i] = es
	}
	a.mu.Lock()
	for i, r := range rs {
		if len(got[i]) == 0 {
			delete(a.resources, r)
		} else {
			a.resources[r] = got[i]
		}
	}
	a.rebuildLocked()
	a.mu.Unlock()
	return nil
}

// Run loads every ACL, then follows both change notification directories
// until ctx ends or the session dies.
func (a *Authorizer) Run(ctx context.Context, s coord.Store) {
	for _, p := range []string{LiteralChangesPath, ExtendedChangePath} {
		if _, err := s.CreateAll(ctx, p, nil, coord.Persistent); err != nil && !errors.Is(err, coord.ErrNodeExists) {
			a.logger.Warn("ACL change notifications unavailable", "err", err)
			return
		}
	}
	last := map[string]string{}
	for _, p := range []string{LiteralChangesPath, ExtendedChangePath} {
		names, _, err := s.Children(ctx, p)
		if err != nil {
			return
		}
		for _, n := range names {
			last[p] = max(last[p], n)
		}
	}
	for ctx.Err() == nil {
		if err := a.Load(ctx, s); err == nil {
			break
		}
		select {
		case <-ctx.Done():
			return
		case <-s.Expired():
			return
		case <-time.After(time.Second):
		}
	}
	var wg sync.WaitGroup
	for _, p := range []string{LiteralChangesPath, ExtendedChangePath} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			a.follow(ctx, s, p, last[p])
		}()
	}
	wg.Wait()
}

func (a *Authorizer) follow(ctx context.Context, s coord.Store, dir, last string) {
	coord.Follow(ctx, s, dir, last, func(n string, data []byte) {
		r, err := DecodeChange(dir, data)
		if err != nil {
			a.logger.Warn("ignoring an unreadable ACL change notification", "path", dir+"/"+n, "err", err)
			return
		}
		if err := a.reload(ctx, s, []acl.Resource{r}); err != nil {
			a.logger.Warn("reloading ACLs after a change failed", "err", err)
		}
	})
}

// validName rejects resource names that cannot be one znode.
func validName(r acl.Resource) error {
	if strings.ContainsRune(r.Name, '/') || r.Name == "." || r.Name == ".." || strings.ContainsRune(r.Name, 0) {
		return fmt.Errorf("resource name %q cannot be stored (it contains / or NUL, or is . or ..)", r.Name)
	}
	return nil
}

// update applies f to the entries stored for r with an optimistic
// read-modify-write, then notifies the other brokers; it reports whether the
// znode changed (the caller then refreshes the cache).
func (a *Authorizer) update(ctx context.Context, s coord.Store, r acl.Resource, f func([]acl.Entry) []acl.Entry) (bool, error) {
	path := ResourcePath(r)
	for {
		if err := ctx.Err(); err != nil {
			return false, err
		}
		data, st, err := s.Get(ctx, path)
		exists := err == nil
		if err != nil && !errors.Is(err, coord.ErrNoNode) {
			return false, err
		}
		var cur []acl.Entry
		if exists {
			if cur, err = DecodeEntries(data); err != nil {
				return false, err
			}
		}
		next := f(cur)
		if sameEntries(cur, next) {
			return false, nil
		}
		switch {
		case len(next) == 0 && exists:
			err = s.Delete(ctx, path, st.Version)
		case exists:
			_, err = s.Set(ctx, path, EncodeEntries(next), st.Version)
		default:
			_, err = s.CreateAll(ctx, path, EncodeEntries(next), coord.Persistent)
		}
		if errors.Is(err, coord.ErrBadVersion) || errors.Is(err, coord.ErrNodeExists) || errors.Is(err, coord.ErrNoNode) {
			continue
		}
		if err != nil {
			return false, err
		}
		break
	}
	dir, data := EncodeChange(r)
	if _, err := s.CreateAll(ctx, dir+"/"+ChangePrefix, data, coord.PersistentSequential); err != nil {
		return true, fmt.Errorf("notifying the ACL change: %w", err)
	}
	return true, nil
}

func sameEntries(a, b []acl.Entry) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// Create stores bindings; the result has one error (or nil) per binding.
func (a *Authorizer) Create(ctx context.Context, s coord.Store, bs []acl.Binding) []error {
	errs := make([]error, len(bs))
	byRes := map[acl.Resource][]int{}
	var order []acl.Resource
	for i, b := range bs {
		if err := b.Validate(); err != nil {
			errs[i] = fmt.Errorf("%w: %v", ErrInvalid, err)
			continue
		}
		if err := validName(b.Resource); err != nil {
			errs[i] = fmt.Errorf("%w: %v", ErrInvalid, err)
			continue
		}
		if _, ok := byRes[b.Resource]; !ok {
			order = append(order, b.Resource)
		}
		byRes[b.Resource] = append(byRes[b.Resource], i)
	}
	var changed []acl.Resource
	for _, r := range order {
		idx := byRes[r]
		ch, err := a.update(ctx, s, r, func(cur []acl.Entry) []acl.Entry {
			next := append([]acl.Entry(nil), cur...)
			for _, i := range idx {
				if !containsEntry(next, bs[i].Entry) {
					next = append(next, bs[i].Entry)
				}
			}
			return next
		})
		if ch {
			changed = append(changed, r)
		}
		for _, i := range idx {
			errs[i] = err
		}
	}
	if err := a.reload(ctx, s, changed); err != nil {
		a.logger.Warn("refreshing the ACL cache failed", "err", err)
	}
	return errs
}

func containsEntry(es []acl.Entry, e acl.Entry) bool {
	for _, x := range es {
		if x == e {
			return true
		}
	}
	return false
}

// Describe returns the cached bindings a filter selects.
func (a *Authorizer) Describe(f acl.Filter) []acl.Binding {
	var out []acl.Binding
	for _, b := range a.index.Load().Bindings() {
		if f.Matches(b) {
			out = append(out, b)
		}
	}
	return out
}

// DeleteResult is what one filter of Delete removed.
type DeleteResult struct {
	Deleted []acl.Binding
	Err     error
}

// Delete removes the bindings each filter selects (as stored now, not only
// as cached).
func (a *Authorizer) Delete(ctx context.Context, s coord.Store, fs []acl.Filter) []DeleteResult {
	out := make([]DeleteResult, len(fs))
	if err := a.Load(ctx, s); err != nil {
		for i := range out {
			out[i].Err = err
		}
		return out
	}
	a.mu.Lock()
	var resources []acl.Resource
	for r := range a.resources {
		resources = append(resources, r)
	}
	a.mu.Unlock()
	sort.Slice(resources, func(i, j int) bool {
		return bindingLess(acl.Binding{Resource: resources[i]}, acl.Binding{Resource: resources[j]})
	})
	var changed []acl.Resource
	for fi, f := range fs {
		for _, r := range resources {
			if !f.MatchesResource(r) {
				continue
			}
			var removed []acl.Entry
			ch, err := a.update(ctx, s, r, func(cur []acl.Entry) []acl.Entry {
				removed = removed[:0]
				var keep []acl.Entry
				for _, e := range cur {
					if f.MatchesEntry(e) {
						removed = append(removed, e)
					} else {
						keep = append(keep, e)
					}
				}
				return keep
			})
			if ch {
				changed = append(changed, r)
			}
			if err != nil {
				out[fi].Err = err
				break
			}
			for _, e := range removed {
				out[fi].Deleted = append(out[fi].Deleted, acl.Binding{Resource: r, Entry: e})
			}
		}
	}
	if err := a.reload(ctx, s, changed); err != nil {
		a.logger.Warn("refreshing the ACL cache failed", "err", err)
	}
	return out
}
