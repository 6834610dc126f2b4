package plugins

import (
	"bytes"
	"context"
	"log/slog"
	"sync"

	"github.com/hashicorp/go-hclog"
)

// hclogFor gives go-plugin, which logs through hclog, a logger that writes
// into slog at debug level; nil means discard.
func hclogFor(l *slog.Logger) hclog.Logger {
	if l == nil {
		return hclog.NewNullLogger()
	}
	return hclog.New(&hclog.LoggerOptions{
		Name:        "plugin",
		Level:       hclog.Debug,
		Output:      slogWriter{l},
		DisableTime: true,
	})
}

type slogWriter struct{ l *slog.Logger }

func (w slogWriter) Write(p []byte) (int, error) {
	w.l.Log(context.Background(), slog.LevelDebug, string(bytes.TrimRight(p, "\n")))
	return len(p), nil
}

// tail keeps the last bytes a plugin wrote to stderr, to put a crashed
// plugin's last words into the error the host sees.
type tail struct {
	mu  sync.Mutex
	buf []byte
}

const tailSize = 2048

func (t *tail) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.buf = append(t.buf, p...)
	if over := len(t.buf) - tailSize; over > 0 {
		t.buf = append(t.buf[:0], t.buf[over:]...)
	}
	return len(p), nil
}

func (t *tail) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return string(bytes.TrimSpace(t.buf))
}
