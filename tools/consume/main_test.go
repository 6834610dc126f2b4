package consume

import (
	"fmt"
	"os"
	"testing"

	"github.com/ktoolhq/ktool/plugins"
)

// The test binary serves the built-in assignors when the plugin catalog
// starts it with `__plugin serve KIND NAME`, as the ktool binary does, so
// --assignor goes through real plugin processes in these tests.
func TestMain(m *testing.M) {
	if len(os.Args) == 5 && os.Args[1] == plugins.ServeCommand && os.Args[2] == "serve" {
		if err := plugins.ServeBuiltin(os.Args[3], os.Args[4], "test"); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}
