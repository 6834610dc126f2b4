package zk

import (
	"context"
	"errors"
	"fmt"
	"path"
	"sort"
	"strings"
	"time"

	gozk "github.com/go-zookeeper/zk"
)

// Address is a parsed ZooKeeper connect string.
type Address struct {
	Servers []string
	Chroot  string // "" or "/kafka"
}

// ParseAddress parses Kafka's zookeeper.connect syntax: host:port pairs
// separated by commas, optionally followed by a chroot path.
func ParseAddress(s string) (Address, error) {
	s = strings.TrimSpace(s)
	hosts, chroot := s, ""
	if i := strings.IndexByte(s, '/'); i >= 0 {
		hosts, chroot = s[:i], s[i:]
	}
	var a Address
	for _, h := range strings.Split(hosts, ",") {
		h = strings.TrimSpace(h)
		if h == "" {
			continue
		}
		if !strings.Contains(h, ":") {
			h += ":2181"
		}
		a.Servers = append(a.Servers, h)
	}
	if len(a.Servers) == 0 {
		return Address{}, fmt.Errorf("ZooKeeper address %q names no server (want host:port[,host:port][/chroot])", s)
	}
	if chroot != "" {
		clean := path.Clean(chroot)
		if clean != chroot && clean+"/" != chroot {
			return Address{}, fmt.Errorf("ZooKeeper chroot %q is not a clean absolute path", chroot)
		}
		if clean != "/" {
			a.Chroot = clean
		}
	}
	return a, nil
}

// Conn is a ZooKeeper session whose paths are relative to the chroot.
type Conn struct {
	zc     *gozk.Conn
	chroot string
	addr   string
}

type quietLogger struct{}

func (quietLogger) Printf(string, ...any) {}

// Dial connects to ZooKeeper and waits for a session until ctx ends.
func Dial(ctx context.Context, addr string) (*Conn, error) {
	a, err := ParseAddress(addr)
	if err != nil {
		return nil, err
	}
	zc, events, err := gozk.Connect(a.Servers, 10*time.Second, gozk.WithLogger(quietLogger{}))
	if err != nil {
		return nil, fmt.Errorf("connecting to ZooKeeper %s: %w", addr, err)
	}
	for {
		select {
		case ev := <-events:
			if ev.State == gozk.StateHasSession {
				return &Conn{zc: zc, chroot: a.Chroot, addr: addr}, nil
			}
			if ev.State == gozk.StateAuthFailed {
				zc.Close()
				return nil, fmt.Errorf("ZooKeeper %s refused authentication", addr)
			}
		case <-ctx.Done():
			zc.Close()
			return nil, fmt.Errorf("no ZooKeeper session with %s: %w (is ZooKeeper running there? check --zookeeper)", addr, ctx.Err())
		}
	}
}

// Close ends the session.
func (c *Conn) Close() { c.zc.Close() }

func (c *Conn) full(p string) string {
	if c.chroot == "" {
		return p
	}
	if p == "/" {
		return c.chroot
	}
	return c.chroot + p
}

// do runs a ZooKeeper call but gives up when ctx ends; go-zookeeper's calls
// take no context.
func do[T any](ctx context.Context, fn func() (T, error)) (T, error) {
	type res struct {
		v   T
		err error
	}
	ch := make(chan res, 1)
	go func() {
		v, err := fn()
		ch <- res{v, err}
	}()
	select {
	case r := <-ch:
		return r.v, r.err
	case <-ctx.Done():
		var zero T
		return zero, ctx.Err()
	}
}

func (c *Conn) wrap(op, p string, err error) error {
	if err == nil {
		return nil
	}
	if errors.Is(err, gozk.ErrNoNode) {
		return fmt.Errorf("%s %s: no such znode (ZooKeeper %s)", op, p, c.addr)
	}
	return fmt.Errorf("%s %s on ZooKeeper %s: %w", op, p, c.addr, err)
}

// Get reads a znode's data and stat.
func (c *Conn) Get(ctx context.Context, p string) ([]byte, *gozk.Stat, error) {
	type r struct {
		b []byte
		s *gozk.Stat
	}
	v, err := do(ctx, func() (r, error) {
		b, s, err := c.zc.Get(c.full(p))
		return r{b, s}, err
	})
	return v.b, v.s, c.wrap("reading", p, err)
}

// Children lists a znode's children, sorted.
func (c *Conn) Children(ctx context.Context, p string) ([]string, *gozk.Stat, error) {
	type r struct {
		names []string
		s     *gozk.Stat
	}
	v, err := do(ctx, func() (r, error) {
		names, s, err := c.zc.Children(c.full(p))
		return r{names, s}, err
	})
	sort.Strings(v.names)
	return v.names, v.s, c.wrap("listing", p, err)
}

// Exists reports whether a znode exists, with its stat.
func (c *Conn) Exists(ctx context.Context, p string) (bool, *gozk.Stat, error) {
	type r struct {
		ok bool
		s  *gozk.Stat
	}
	v, err := do(ctx, func() (r, error) {
		ok, s, err := c.zc.Exists(c.full(p))
		return r{ok, s}, err
	})
	return v.ok, v.s, c.wrap("checking", p, err)
}

// Delete removes a znode if its version still is version (-1: any).
func (c *Conn) Delete(ctx context.Context, p string, version int32) error {
	_, err := do(ctx, func() (struct{}, error) { return struct{}{}, c.zc.Delete(c.full(p), version) })
	return c.wrap("deleting", p, err)
}

// Create makes a znode (tests and tools that seed state use it).
func (c *Conn) Create(ctx context.Context, p string, data []byte, ephemeral bool) error {
	var flags int32
	if ephemeral {
		flags = gozk.FlagEphemeral
	}
	_, err := do(ctx, func() (string, error) {
		return c.zc.Create(c.full(p), data, flags, gozk.WorldACL(gozk.PermAll))
	})
	return c.wrap("creating", p, err)
}

// CleanPath checks a path given on the command line.
func CleanPath(p string) (string, error) {
	if p == "" {
		return "/", nil
	}
	if !strings.HasPrefix(p, "/") {
		return "", fmt.Errorf("ZooKeeper path %q must start with /", p)
	}
	if c := path.Clean(p); c != p && c+"/" != p {
		return "", fmt.Errorf("ZooKeeper path %q is not clean (did you mean %q?)", p, c)
	}
	return path.Clean(p), nil
}

// Set replaces a znode's data if its version still is version (-1: any).
func (c *Conn) Set(ctx context.Context, p string, data []byte, version int32) error {
	_, err := do(ctx, func() (*gozk.Stat, error) { return c.zc.Set(c.full(p), data, version) })
	return c.wrap("writing", p, err)
}

// CreateSequential makes a persistent sequential znode named p<seq> and
// returns its path (without the chroot).
func (c *Conn) CreateSequential(ctx context.Context, p string, data []byte) (string, error) {
	name, err := do(ctx, func() (string, error) {
		return c.zc.Create(c.full(p), data, gozk.FlagSequence, gozk.WorldACL(gozk.PermAll))
	})
	if err != nil {
		return "", c.wrap("creating", p, err)
	}
	return strings.TrimPrefix(name, c.chroot), nil
}

// EnsurePath creates p and its missing parents as empty persistent znodes,
// the chroot's included (as a broker creates its chroot).
func (c *Conn) EnsurePath(ctx context.Context, p string) error {
	cur := ""
	for _, part := range strings.Split(strings.Trim(c.full(p), "/"), "/") {
		cur += "/" + part
		_, err := do(ctx, func() (string, error) { return c.zc.Create(cur, nil, 0, gozk.WorldACL(gozk.PermAll)) })
		if err != nil && !errors.Is(err, gozk.ErrNodeExists) {
			return c.wrap("creating", cur, err)
		}
	}
	return nil
}
