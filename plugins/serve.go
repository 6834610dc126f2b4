package plugins

import (
	"errors"
	"fmt"
	"os"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/go-plugin"
	"google.golang.org/grpc"

	"github.com/ktoolhq/ktool/assignor"
	"github.com/ktoolhq/ktool/plugins/codec"
)

// ErrNotPluginHost is returned by the Serve functions when the process was
// not started by ktool as a plugin.
var ErrNotPluginHost = errors.New("not started by ktool: a plugin is served only to a ktool process that starts it, not run by hand")

// ServeCodec serves c as a codec plugin reporting version. It returns
// ErrNotPluginHost at once when ktool did not start the process; otherwise it
// serves until the host stops it, after which go-plugin ends the process.
func ServeCodec(c codec.Codec, version string) error {
	if c == nil {
		return errors.New("ServeCodec: nil codec")
	}
	return serve(KindCodec, &codecPlugin{srv: &codecServer{codec: c, version: version}})
}

// ServeAssignor serves a as an assignor plugin reporting version, like ServeCodec.
func ServeAssignor(a assignor.Assignor, version string) error {
	if a == nil {
		return errors.New("ServeAssignor: nil assignor")
	}
	return serve(KindAssignor, &assignorPlugin{srv: &assignorServer{assignor: a, version: version}})
}

// ServeBuiltin serves the built-in plugin kind/name; it is what
// `ktool __plugin serve KIND NAME` runs.
func ServeBuiltin(kind, name, version string) error {
	switch kind {
	case KindCodec:
		for _, c := range codec.Builtins() {
			if c.Name() == name {
				return ServeCodec(c, version)
			}
		}
	case KindAssignor:
		if a, ok := assignor.ByName(name); ok {
			return ServeAssignor(a, version)
		}
	default:
		return validKind(kind)
	}
	return fmt.Errorf("no built-in %s named %q (built-ins: %v)", kind, name, builtinNames(kind))
}

func serve(kind string, p plugin.Plugin) error {
	if os.Getenv(MagicCookieKey) != MagicCookieValue {
		return ErrNotPluginHost
	}
	plugin.Serve(&plugin.ServeConfig{
		HandshakeConfig: Handshake(),
		Plugins:         plugin.PluginSet{kind: p},
		GRPCServer: func(opts []grpc.ServerOption) *grpc.Server {
			return grpc.NewServer(append(opts, grpc.MaxRecvMsgSize(maxMessage), grpc.MaxSendMsgSize(maxMessage),
				grpc.InitialWindowSize(flowWindow), grpc.InitialConnWindowSize(flowWindow),
				grpc.ReadBufferSize(ioBuffer), grpc.WriteBufferSize(ioBuffer))...)
		},
		Logger: hclog.New(&hclog.LoggerOptions{Name: "ktool-plugin", Level: hclog.Warn, Output: os.Stderr}),
	})
	return nil
}

// builtinNames lists the names of the built-in plugins of a kind.
func builtinNames(kind string) []string {
	var names []string
	switch kind {
	case KindCodec:
		for id := codec.IDGzip; id <= codec.IDZstd; id++ {
			names = append(names, codec.NameForID(id))
		}
	case KindAssignor:
		for _, a := range assignor.Builtins() {
			names = append(names, a.Name())
		}
	}
	return names
}
