package plugins

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/hashicorp/go-plugin"
)

// Plugin kinds.
const (
	KindAssignor = "assignor"
	KindCodec    = "codec"
)

// The handshake host and plugin must agree on before they talk. The cookie
// only tells a plugin binary it was started by ktool; a plugin built for
// another ProtocolVersion is refused with a clear error.
const (
	// ProtocolVersion 2: Decompress carries the caller's output limit.
	ProtocolVersion  = 2
	MagicCookieKey   = "KTOOL_PLUGIN"
	MagicCookieValue = "c5f1a0d2-ktool-plugin-7e94"
)

// Handshake returns the go-plugin handshake for ktool plugins.
func Handshake() plugin.HandshakeConfig {
	return plugin.HandshakeConfig{ProtocolVersion: ProtocolVersion, MagicCookieKey: MagicCookieKey, MagicCookieValue: MagicCookieValue}
}

// ServeCommand is the hidden command under which the ktool binary serves a
// built-in plugin: `ktool __plugin serve KIND NAME`.
const ServeCommand = "__plugin"

// Info describes a plugin, as it reports itself through its Info call plus
// where the catalog found it.
type Info struct {
	Name    string `json:"name" yaml:"name"`
	Kind    string `json:"kind" yaml:"kind"`
	Version string `json:"version" yaml:"version"`
	Path    string `json:"path" yaml:"path"`
	Builtin bool   `json:"builtin" yaml:"builtin"`
	// CodecID is the Kafka codec id a codec plugin implements.
	CodecID int8 `json:"codec_id,omitempty" yaml:"codec_id,omitempty"`
	// Cooperative is whether an assignor plugin speaks the cooperative protocol.
	Cooperative bool `json:"cooperative,omitempty" yaml:"cooperative,omitempty"`
	// Error says why the plugin could not be started or asked, when it could not.
	Error string `json:"error,omitempty" yaml:"error,omitempty"`
}

// ExecutableName is the file name an external plugin must have in the plugin directory.
func ExecutableName(kind, name string) string { return "ktool-" + kind + "-" + name }

// DefaultDir is the plugin directory when none is given: $KTOOL_PLUGIN_DIR,
// else <user config dir>/ktool/plugins.
func DefaultDir() string {
	if d := os.Getenv("KTOOL_PLUGIN_DIR"); d != "" {
		return d
	}
	dir, err := os.UserConfigDir()
	if err != nil {
		dir = "."
	}
	return filepath.Join(dir, "ktool", "plugins")
}

func validKind(kind string) error {
	if kind == KindAssignor || kind == KindCodec {
		return nil
	}
	return fmt.Errorf("unknown plugin kind %q (want %s or %s)", kind, KindAssignor, KindCodec)
}
