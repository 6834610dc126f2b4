package cmdutil

import (
	"bytes"
	"io"
	"os"

	"golang.org/x/term"
)

// IOStreams are the streams a command reads and writes. Commands never touch
// os.Stdin/os.Stdout directly, so tests can run them with buffers.
type IOStreams struct {
	In     io.Reader
	Out    io.Writer
	ErrOut io.Writer

	stdinTTY  bool
	stdoutTTY bool
	noColor   bool
}

// System returns the process's standard streams.
func System() *IOStreams {
	return &IOStreams{
		In: os.Stdin, Out: os.Stdout, ErrOut: os.Stderr,
		stdinTTY:  term.IsTerminal(int(os.Stdin.Fd())),
		stdoutTTY: term.IsTerminal(int(os.Stdout.Fd())),
		noColor:   os.Getenv("NO_COLOR") != "" || os.Getenv("TERM") == "dumb",
	}
}

// Test returns streams backed by buffers, none of them a terminal.
func Test() (ios *IOStreams, in, out, errOut *bytes.Buffer) {
	in, out, errOut = &bytes.Buffer{}, &bytes.Buffer{}, &bytes.Buffer{}
	return &IOStreams{In: in, Out: out, ErrOut: errOut, noColor: true}, in, out, errOut
}

// SetTTY marks the streams as terminals or not (tests use it).
func (s *IOStreams) SetTTY(stdin, stdout bool) { s.stdinTTY, s.stdoutTTY = stdin, stdout }

// IsStdoutTTY reports whether output goes to a terminal.
func (s *IOStreams) IsStdoutTTY() bool { return s.stdoutTTY }

// CanPrompt reports whether interactive prompts may be shown: both input and
// output are terminals and we are not in CI.
func (s *IOStreams) CanPrompt() bool {
	return s.stdinTTY && s.stdoutTTY && os.Getenv("CI") == ""
}

// ColorEnabled reports whether output may carry ANSI colours (off with NO_COLOR).
func (s *IOStreams) ColorEnabled() bool { return s.stdoutTTY && !s.noColor }
