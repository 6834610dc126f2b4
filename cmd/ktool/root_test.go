package main

import (
	"strings"
	"testing"

	"github.com/ktoolhq/ktool/tools/cmdutil"
)

// run executes the real command tree and returns stdout, stderr and the exit code.
func run(t *testing.T, args ...string) (string, string, int) {
	t.Helper()
	ios, _, out, errOut := cmdutil.Test()
	f := cmdutil.NewFactory(ios, cmdutil.BuildInfo{Version: "test"})
	root := newRootCommand(f)
	root.SetArgs(args)
	code := cmdutil.ExitCode(errOut, root.Execute())
	return out.String(), errOut.String(), code
}

func TestGroupCommandsNeedASubcommand(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"topic"}, `"ktool topic" needs a sub-command`},
		{[]string{"topic", "reassign"}, `unknown command "reassign" for "ktool topic"`},
		{[]string{"group", "bogus"}, `unknown command "bogus" for "ktool group"`},
		{[]string{"topic", "lst"}, "did you mean list?"},
		{[]string{"cluster"}, `"ktool cluster" needs a sub-command`},
	} {
		out, errOut, code := run(t, tc.args...)
		if code != cmdutil.ExitUsage {
			t.Errorf("ktool %s: exit %d, want %d", strings.Join(tc.args, " "), code, cmdutil.ExitUsage)
		}
		if out != "" {
			t.Errorf("ktool %s: wrote to stdout: %q", strings.Join(tc.args, " "), out)
		}
		if !strings.Contains(errOut, tc.want) || !strings.Contains(errOut, "Usage:") {
			t.Errorf("ktool %s: stderr lacks %q or the usage:\n%s", strings.Join(tc.args, " "), tc.want, errOut)
		}
	}
	out, _, code := run(t, "topic", "--help")
	if code != 0 || !strings.Contains(out, "Usage:") {
		t.Errorf("ktool topic --help: exit %d, stdout %q", code, out)
	}
}
