package netns

import (
	"os"
	"testing"

	"github.com/ktoolhq/ktool/internal/testbin"
)

// ktoolBin is the binary built once by TestMain; buildErr says why there is
// none.
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
