// Command ktool runs Kafka-compatible brokers and is the operator's toolbox for them.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	"github.com/ktoolhq/ktool/tools/cmdutil"
)

// Set by the linker: -X main.version=... -X main.commit=...
var (
	version = "dev"
	commit  = "none"
	date    = "unknown"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	f := cmdutil.NewFactory(cmdutil.System(), cmdutil.BuildInfo{Version: version, Commit: commit, Date: date})
	root := newRootCommand(f)
	err := root.ExecuteContext(ctx)
	os.Exit(cmdutil.ExitCode(f.IO.ErrOut, err))
}
