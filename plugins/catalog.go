package plugins

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/go-plugin"
	"google.golang.org/grpc"

	"github.com/ktoolhq/ktool/assignor"
	"github.com/ktoolhq/ktool/plugins/codec"
)

// Options configure a Catalog.
type Options struct {
	// Dir holds external plugins; "" means DefaultDir().
	Dir string
	// Self is the executable that serves the built-ins; "" means os.Executable().
	Self string
	// Logger receives go-plugin's debug logs; nil discards them.
	Logger *slog.Logger
	// StartTimeout bounds starting a plugin and its first Info call; 0 means 10s.
	StartTimeout time.Duration
	// CallTimeout bounds a call whose context has no deadline; 0 means 1m.
	CallTimeout time.Duration
}

// Catalog finds, starts and caches plugin processes. Each plugin process is
// started on first use and reused; one that exited is started again on the
// next call. Close stops them all.
type Catalog struct {
	opts  Options
	calls atomic.Int64

	// builtins serve codec ids in process unless an external plugin
	// overrides them; resolved caches each id's answer once it is known.
	builtins *codec.Set
	mu       sync.Mutex
	procs    map[procKey]*proc
	closed   bool
	resolved [codec.IDZstd + 1]codec.Codec
}

type procKey struct{ kind, name string }

// proc is one plugin process; ready is closed once it started or failed.
type proc struct {
	ready  chan struct{}
	err    error
	client *plugin.Client
	rpc    *rpcClient
	info   Info
	stderr *tail
}

// NewCatalog returns a catalog; it starts nothing until a plugin is asked for.
func NewCatalog(opts Options) *Catalog {
	if opts.Dir == "" {
		opts.Dir = DefaultDir()
	}
	if opts.StartTimeout <= 0 {
		opts.StartTimeout = 10 * time.Second
	}
	if opts.CallTimeout <= 0 {
		opts.CallTimeout = time.Minute
	}
	return &Catalog{opts: opts, procs: map[procKey]*proc{}, builtins: codec.NewSet(codec.Builtins()...)}
}

// Dir is the external plugin directory the catalog looks in.
func (c *Catalog) Dir() string { return c.opts.Dir }

// Calls counts the Compress and Decompress calls made to plugin processes.
func (c *Catalog) Calls() int64 { return c.calls.Load() }

// Codec returns the codec plugin name, starting it if needed. An external
// plugin named like a built-in overrides it.
func (c *Catalog) Codec(ctx context.Context, name string) (codec.Codec, error) {
	p, err := c.get(ctx, KindCodec, name)
	if err != nil {
		return nil, err
	}
	return &pluginCodec{cat: c, name: name, id: p.info.CodecID}, nil
}

// CodecByID is how ktool resolves a Kafka codec id (1 gzip, 2 snappy,
// 3 lz4, 4 zstd) everywhere: an external plugin named for the codec in the
// plugin directory wins, served by its process (started on first call);
// otherwise the built-in runs in this process, with no round trip. Each id is
// resolved once and cached, so a lookup builds nothing.
func (c *Catalog) CodecByID(_ context.Context, id int8) (codec.Codec, error) {
	if id < codec.IDGzip || id > codec.IDZstd {
		return nil, fmt.Errorf("no codec with id %d (known: 1 gzip, 2 snappy, 3 lz4, 4 zstd)", id)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if cd := c.resolved[id]; cd != nil {
		return cd, nil
	}
	name := codec.NameForID(id)
	_, _, builtin, err := c.locate(KindCodec, name)
	var cd codec.Codec
	switch {
	case err != nil:
		return nil, err
	case builtin:
		if cd, err = c.builtins.CodecByID(context.Background(), id); err != nil {
			return nil, err
		}
	default:
		cd = &pluginCodec{cat: c, name: name, id: id}
	}
	c.resolved[id] = cd
	return cd, nil
}

// Assignor returns the assignor plugin name, starting it if needed. Its
// methods carry no context, so each call is bounded by Options.CallTimeout.
func (c *Catalog) Assignor(ctx context.Context, name string) (assignor.Assignor, error) {
	p, err := c.get(ctx, KindAssignor, name)
	if err != nil {
		return nil, err
	}
	return &pluginAssignor{cat: c, name: name, cooperative: p.info.Cooperative}, nil
}

// Info starts (or reuses) plugin kind/name and returns what it reported.
func (c *Catalog) Info(ctx context.Context, kind, name string) (Info, error) {
	p, err := c.get(ctx, kind, name)
	if err != nil {
		return Info{}, err
	}
	return p.info, nil
}

// Has reports whether a plugin kind/name exists, built in or in the plugin
// directory, without starting it.
func (c *Catalog) Has(kind, name string) bool {
	_, _, _, err := c.locate(kind, name)
	return err == nil
}

// List reports every plugin in effect, built-in and external, sorted by kind
// and name, asking each for its Info. A plugin that cannot be started is
// listed with its Error set; List fails only when the directory cannot be read.
func (c *Catalog) List(ctx context.Context) ([]Info, error) {
	external, err := c.external()
	if err != nil {
		return nil, err
	}
	var keys []procKey
	for _, kind := range []string{KindAssignor, KindCodec} {
		for _, name := range builtinNames(kind) {
			keys = append(keys, procKey{kind, name})
		}
	}
	for _, k := range external {
		if !slices.Contains(keys, k) {
			keys = append(keys, k)
		}
	}
	slices.SortFunc(keys, func(a, b procKey) int {
		if a.kind != b.kind {
			return strings.Compare(a.kind, b.kind)
		}
		return strings.Compare(a.name, b.name)
	})
	out := make([]Info, 0, len(keys))
	for _, k := range keys {
		info, err := c.Info(ctx, k.kind, k.name)
		if err != nil {
			if ctx.Err() != nil {
				return nil, ctx.Err()
			}
			path, _, builtin, _ := c.locate(k.kind, k.name)
			info = Info{Name: k.name, Kind: k.kind, Path: path, Builtin: builtin, Error: err.Error()}
		}
		out = append(out, info)
	}
	return out, nil
}

// external lists the plugin executables in the plugin directory.
func (c *Catalog) external() ([]procKey, error) {
	entries, err := os.ReadDir(c.opts.Dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("reading plugin directory %s: %w", c.opts.Dir, err)
	}
	var keys []procKey
	for _, e := range entries {
		for _, kind := range []string{KindAssignor, KindCodec} {
			name, ok := strings.CutPrefix(e.Name(), ExecutableName(kind, ""))
			if ok && name != "" && !e.IsDir() {
				keys = append(keys, procKey{kind, name})
			}
		}
	}
	return keys, nil
}

// locate finds the executable for kind/name: the plugin directory first,
// then the built-ins served by Self.
func (c *Catalog) locate(kind, name string) (path string, args []string, builtin bool, err error) {
	if err := validKind(kind); err != nil {
		return "", nil, false, err
	}
	if name == "" || strings.ContainsAny(name, `/\`) || name == "." || name == ".." {
		return "", nil, false, fmt.Errorf("invalid %s plugin name %q", kind, name)
	}
	path = filepath.Join(c.opts.Dir, ExecutableName(kind, name))
	st, statErr := os.Stat(path)
	switch {
	case statErr == nil && st.IsDir():
		return path, nil, false, fmt.Errorf("%s plugin %q: %s is a directory", kind, name, path)
	case statErr == nil && st.Mode()&0o111 == 0:
		return path, nil, false, fmt.Errorf("%s plugin %q: %s is not executable", kind, name, path)
	case statErr == nil:
		return path, nil, false, nil
	case !errors.Is(statErr, fs.ErrNotExist):
		return path, nil, false, fmt.Errorf("%s plugin %q: %w", kind, name, statErr)
	}
	if !slices.Contains(builtinNames(kind), name) {
		return "", nil, false, fmt.Errorf("no %s plugin %q: not built in (built-ins: %s) and no executable %s",
			kind, name, strings.Join(builtinNames(kind), ", "), path)
	}
	self := c.opts.Self
	if self == "" {
		if self, err = os.Executable(); err != nil {
			return "", nil, true, fmt.Errorf("finding the ktool executable to serve built-in %s %q: %w", kind, name, err)
		}
	}
	return self, []string{ServeCommand, "serve", kind, name}, true, nil
}

// get returns the running process for kind/name, starting it if there is
// none or the last one exited or failed to start.
func (c *Catalog) get(ctx context.Context, kind, name string) (*proc, error) {
	k := procKey{kind, name}
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return nil, errors.New("plugin catalog is closed")
	}
	p := c.procs[k]
	var stale *plugin.Client
	if p != nil {
		select {
		case <-p.ready:
			if p.err != nil || p.client.Exited() {
				stale, p = p.client, nil
			}
		default:
		}
	}
	if p == nil {
		p = &proc{ready: make(chan struct{}), stderr: &tail{}}
		c.procs[k] = p
		go c.start(k, p)
	}
	c.mu.Unlock()
	if stale != nil {
		stale.Kill() // the process is gone; this releases go-plugin's resources for it
	}
	select {
	case <-p.ready:
		return p, p.err
	case <-ctx.Done():
		return nil, fmt.Errorf("starting %s plugin %q: %w", kind, name, ctx.Err())
	}
}

// start runs in its own goroutine so a caller's ctx can give up waiting;
// go-plugin's StartTimeout bounds it.
func (c *Catalog) start(k procKey, p *proc) {
	defer close(p.ready)
	path, args, builtin, err := c.locate(k.kind, k.name)
	if err != nil {
		p.err = err
		return
	}
	fail := func(err error) {
		p.err = fmt.Errorf("%s plugin %q (%s): %w%s", k.kind, k.name, path, err, p.lastWords())
		if p.client != nil {
			p.client.Kill()
		}
	}
	cmd := exec.Command(path, args...)
	cmd.SysProcAttr = sysProcAttr()
	p.client = plugin.NewClient(&plugin.ClientConfig{
		HandshakeConfig:  Handshake(),
		Plugins:          plugin.PluginSet{KindCodec: &codecPlugin{}, KindAssignor: &assignorPlugin{}},
		Cmd:              cmd,
		AllowedProtocols: []plugin.Protocol{plugin.ProtocolGRPC},
		StartTimeout:     c.opts.StartTimeout,
		Logger:           hclogFor(c.opts.Logger),
		Stderr:           p.stderr,
		SyncStderr:       p.stderr,
		GRPCDialOptions: []grpc.DialOption{
			grpc.WithDefaultCallOptions(grpc.MaxCallRecvMsgSize(maxMessage), grpc.MaxCallSendMsgSize(maxMessage)),
			grpc.WithInitialWindowSize(flowWindow), grpc.WithInitialConnWindowSize(flowWindow),
			grpc.WithReadBufferSize(ioBuffer), grpc.WithWriteBufferSize(ioBuffer),
		},
	})
	proto, err := p.client.Client()
	if err != nil {
		fail(err)
		return
	}
	raw, err := proto.Dispense(k.kind)
	if err != nil {
		fail(err)
		return
	}
	p.rpc = raw.(*rpcClient)
	ctx, cancel := context.WithTimeout(context.Background(), c.opts.StartTimeout)
	defer cancel()
	wi, err := p.rpc.info(ctx)
	if err != nil {
		fail(err)
		return
	}
	if err := checkInfo(k, wi); err != nil {
		fail(err)
		return
	}
	p.info = Info{Name: wi.Name, Kind: wi.Kind, Version: wi.Version, Path: path, Builtin: builtin,
		CodecID: wi.CodecID, Cooperative: wi.Cooperative}

	c.mu.Lock()
	closed := c.closed
	c.mu.Unlock()
	if closed {
		fail(errors.New("plugin catalog closed while the plugin started"))
	}
}

// checkInfo holds a plugin to what its file name promises.
func checkInfo(k procKey, wi wireInfo) error {
	if wi.Kind != k.kind {
		return fmt.Errorf("plugin says it is a %q plugin, want %q", wi.Kind, k.kind)
	}
	if wi.Name != k.name {
		return fmt.Errorf("plugin says its name is %q, want %q (its file name)", wi.Name, k.name)
	}
	if k.kind == KindCodec {
		if wi.CodecID < codec.IDGzip || wi.CodecID > codec.IDZstd {
			return fmt.Errorf("codec plugin reports codec id %d, want one of Kafka's (1..4)", wi.CodecID)
		}
		if id, ok := codec.IDForName(k.name); ok && id != wi.CodecID {
			return fmt.Errorf("codec plugin %q reports codec id %d, but Kafka's %s is %d", k.name, wi.CodecID, k.name, id)
		}
	}
	return nil
}

// lastWords is the start of what a plugin last wrote to stderr (for a
// panic, the message and the top of the stack), for errors about it.
func (p *proc) lastWords() string {
	s := p.stderr.String()
	if s == "" {
		return ""
	}
	if lines := strings.SplitN(s, "\n", 7); len(lines) == 7 {
		s = strings.Join(lines[:6], "\n") + "\n..."
	}
	return "; plugin stderr: " + s
}

// Close stops every plugin process, waiting for those still starting.
func (c *Catalog) Close() {
	c.mu.Lock()
	c.closed = true
	procs := make([]*proc, 0, len(c.procs))
	for _, p := range c.procs {
		procs = append(procs, p)
	}
	c.procs = map[procKey]*proc{}
	c.mu.Unlock()
	for _, p := range procs {
		<-p.ready
		if p.client != nil {
			p.client.Kill()
		}
	}
}

// call runs fn against the live process for kind/name, bounding it by
// CallTimeout when ctx has no deadline and naming the plugin in errors.
func (c *Catalog) call(ctx context.Context, kind, name string, fn func(ctx context.Context, rpc *rpcClient) error) error {
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, c.opts.CallTimeout)
		defer cancel()
	}
	p, err := c.get(ctx, kind, name)
	if err != nil {
		return err
	}
	err = fn(ctx, p.rpc)
	var pe *pluginError
	if err == nil {
		return nil
	}
	if errors.As(err, &pe) || ctx.Err() != nil {
		return fmt.Errorf("%s plugin %q (%s): %w", kind, name, p.info.Path, err)
	}
	// If the plugin died, say so with its last words; the exit is noticed a
	// moment after the broken connection, so wait briefly for it.
	t := time.NewTimer(200 * time.Millisecond)
	defer t.Stop()
	select {
	case <-p.rpc.exited:
		return fmt.Errorf("%s plugin %q (%s) exited: %w%s", kind, name, p.info.Path, err, p.lastWords())
	case <-t.C:
		return fmt.Errorf("%s plugin %q (%s): %w", kind, name, p.info.Path, err)
	}
}

// pluginCodec is a codec served by a plugin process; it finds the live
// process on each call, so it keeps working after the plugin is restarted.
type pluginCodec struct {
	cat  *Catalog
	name string
	id   int8
}

func (pc *pluginCodec) Name() string { return pc.name }
func (pc *pluginCodec) ID() int8     { return pc.id }

func (pc *pluginCodec) Compress(ctx context.Context, records [][]byte) ([][]byte, error) {
	return pc.do(ctx, "Compress", records, encodeSections(records))
}

// Decompress sends the limit with the sections, so the plugin process stops
// at it too, and holds the plugin to it: a larger section is refused here.
func (pc *pluginCodec) Decompress(ctx context.Context, data [][]byte, limit int) ([][]byte, error) {
	limit = codec.Limit(limit)
	out, err := pc.do(ctx, "Decompress", data, encodeDecompressRequest(limit, data))
	if err != nil {
		// Errors cross the process boundary as text; keep the one callers
		// tell apart (MESSAGE_TOO_LARGE rather than CORRUPT_MESSAGE).
		if strings.Contains(err.Error(), codec.ErrTooLarge.Error()) {
			return nil, fmt.Errorf("%w: %w", codec.ErrTooLarge, err)
		}
		return nil, err
	}
	for i, s := range out {
		if len(s) > limit {
			return nil, fmt.Errorf("codec plugin %q: section %d decompressed to %d bytes past the limit %d: %w", pc.name, i, len(s), limit, codec.ErrTooLarge)
		}
	}
	return out, nil
}

func (pc *pluginCodec) do(ctx context.Context, method string, in [][]byte, req []byte) ([][]byte, error) {
	pc.cat.calls.Add(1)
	var out [][]byte
	err := pc.cat.call(ctx, KindCodec, pc.name, func(ctx context.Context, rpc *rpcClient) (err error) {
		out, err = codecRPC(ctx, rpc, method, req, len(in))
		return err
	})
	return out, err
}

// pluginAssignor is an assignor served by a plugin process.
type pluginAssignor struct {
	cat         *Catalog
	name        string
	cooperative bool
}

func (pa *pluginAssignor) Name() string      { return pa.name }
func (pa *pluginAssignor) Cooperative() bool { return pa.cooperative }

// UserData cannot return an error by its contract; when the plugin fails,
// the member joins without user data (as a first-time member does) and the
// failure is logged.
func (pa *pluginAssignor) UserData(owned map[string][]int32, generation int32) []byte {
	var ud []byte
	err := pa.cat.call(context.Background(), KindAssignor, pa.name, func(ctx context.Context, rpc *rpcClient) (err error) {
		ud, err = userDataRPC(ctx, rpc, owned, generation)
		return err
	})
	if err != nil && pa.cat.opts.Logger != nil {
		pa.cat.opts.Logger.Warn("assignor plugin user data failed; joining without it", "assignor", pa.name, "error", err)
	}
	return ud
}

func (pa *pluginAssignor) Assign(members []assignor.Member, partitions map[string]int32) (assignor.Assignment, error) {
	var a assignor.Assignment
	err := pa.cat.call(context.Background(), KindAssignor, pa.name, func(ctx context.Context, rpc *rpcClient) (err error) {
		a, err = assignRPC(ctx, rpc, members, partitions)
		return err
	})
	return a, err
}
