package disk

import (
	"os"
	"testing"

	"github.com/ktoolhq/ktool/internal/testbin"
)

var (
	ktoolBin string
	buildErr error
)

func TestMain(m *testing.M) {
	var cleanup func()
	ktoolBin, cleanup, buildErr = testbin.Build()
	code := m.Run()
	cleanup()
	os.Exit(code)
}
