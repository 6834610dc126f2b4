package plugins_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/hashicorp/go-plugin"

	"github.com/ktoolhq/ktool/plugins"
	"github.com/ktoolhq/ktool/plugins/codec"
)

// The test binary doubles as every plugin the tests need: started with
// `__plugin serve KIND NAME` it serves a built-in, as the ktool binary does;
// started through a symlink named like an external plugin it plays that
// plugin. Whatever it plays, the test flags are never parsed.
func TestMain(m *testing.M) {
	if len(os.Args) == 5 && os.Args[1] == plugins.ServeCommand && os.Args[2] == "serve" {
		if err := plugins.ServeBuiltin(os.Args[3], os.Args[4], "test"); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	if len(os.Args) == 2 && os.Args[1] == hostRole {
		if err := runHost(); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	if role, ok := testPlugins[filepath.Base(os.Args[0])]; ok {
		if err := role(); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// hostRole makes the test binary a ktool host that starts one plugin, says
// "ready" and waits to be killed.
const hostRole = "__test_plugin_host"

func runHost() error {
	self, err := os.Executable()
	if err != nil {
		return err
	}
	dir := filepath.Join(os.TempDir(), fmt.Sprintf("ktool-test-no-plugins-%d", os.Getpid()))
	cat := plugins.NewCatalog(plugins.Options{Dir: dir, Self: self})
	defer cat.Close()
	if _, err := cat.Codec(context.Background(), "snappy"); err != nil {
		return err
	}
	fmt.Println("ready")
	time.Sleep(time.Minute)
	return nil
}

var testPlugins = map[string]func() error{
	// A codec that crashes in the middle of a call: a panic on another
	// goroutine, which no recover in the gRPC shim can catch.
	"ktool-codec-crashy": func() error {
		return plugins.ServeCodec(&fakeCodec{name: "crashy", id: codec.IDGzip, compress: func() error {
			crashed := make(chan struct{})
			go func() { panic("crashy: out of luck") }()
			<-crashed
			return nil
		}}, "v0")
	},
	// A codec whose calls fail or panic: errors, not crashes, for the host.
	"ktool-codec-failing": func() error {
		return plugins.ServeCodec(&fakeCodec{name: "failing", id: codec.IDLZ4,
			compress:   func() error { return errors.New("disk on fire") },
			decompress: func() error { panic("unexpected state") },
		}, "v0")
	},
	// A codec that never answers a Compress call.
	"ktool-codec-stuck": func() error {
		return plugins.ServeCodec(&fakeCodec{name: "stuck", id: codec.IDSnappy, compress: func() error {
			select {}
		}}, "v0")
	},
	// A plugin built for another protocol version.
	"ktool-codec-future": func() error {
		plugin.Serve(&plugin.ServeConfig{
			HandshakeConfig: plugin.HandshakeConfig{ProtocolVersion: plugins.ProtocolVersion + 1, MagicCookieKey: plugins.MagicCookieKey, MagicCookieValue: plugins.MagicCookieValue},
			Plugins:         plugin.PluginSet{},
			GRPCServer:      plugin.DefaultGRPCServer,
		})
		return nil
	},
	// A program that is not a plugin at all and never answers.
	"ktool-codec-silent": func() error {
		time.Sleep(time.Hour)
		return nil
	},
	// An external plugin overriding a built-in.
	"ktool-codec-gzip": func() error { return plugins.ServeCodec(codec.NewGzip(), "external-1") },
	// A plugin whose file name and self-reported name differ.
	"ktool-codec-liar": func() error { return plugins.ServeCodec(codec.NewZstd(), "v0") },
}

type fakeCodec struct {
	name                 string
	id                   int8
	compress, decompress func() error
}

func (f *fakeCodec) Name() string { return f.name }
func (f *fakeCodec) ID() int8     { return f.id }

func (f *fakeCodec) Compress(_ context.Context, in [][]byte) ([][]byte, error) {
	if f.compress != nil {
		if err := f.compress(); err != nil {
			return nil, err
		}
	}
	return in, nil
}

func (f *fakeCodec) Decompress(_ context.Context, in [][]byte, _ int) ([][]byte, error) {
	if f.decompress != nil {
		if err := f.decompress(); err != nil {
			return nil, err
		}
	}
	return in, nil
}

// newCatalog returns a catalog whose built-ins are served by this test
// binary and whose plugin directory holds the named test plugins.
func newCatalog(t testing.TB, external ...string) *plugins.Catalog {
	t.Helper()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	for _, name := range external {
		if err := os.Symlink(self, filepath.Join(dir, name)); err != nil {
			t.Fatal(err)
		}
	}
	c := plugins.NewCatalog(plugins.Options{Dir: dir, Self: self, StartTimeout: 5 * time.Second})
	t.Cleanup(c.Close)
	return c
}

func testContext(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}
