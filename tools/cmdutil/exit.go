package cmdutil

import (
	"errors"
	"fmt"
	"io"
)

// Exit codes, decided in one place.
const (
	ExitOK       = 0
	ExitError    = 1
	ExitUsage    = 2
	ExitProblems = 3 // a check ran and found problems (health, filters)
)

// ExitErr carries an exit code. A nil Err with a code means "exit quietly".
type ExitErr struct {
	Code int
	Err  error
}

func (e *ExitErr) Error() string {
	if e.Err == nil {
		return fmt.Sprintf("exit status %d", e.Code)
	}
	return e.Err.Error()
}

func (e *ExitErr) Unwrap() error { return e.Err }

// UsageError marks err as a usage mistake (exit 2).
func UsageError(err error) error { return &ExitErr{Code: ExitUsage, Err: err} }

// Usagef formats a usage error.
func Usagef(format string, a ...any) error { return UsageError(fmt.Errorf(format, a...)) }

// ProblemsFound makes the command exit 3 without printing an error: the command
// has already said what it found.
func ProblemsFound() error { return &ExitErr{Code: ExitProblems} }

// ExitCode prints err (if any) and returns the process exit code.
func ExitCode(errOut io.Writer, err error) int {
	if err == nil {
		return ExitOK
	}
	var ee *ExitErr
	if errors.As(err, &ee) {
		if ee.Err != nil {
			fmt.Fprintf(errOut, "Error: %v\n", ee.Err)
			if ee.Code == ExitUsage {
				fmt.Fprintln(errOut, "Run with --help for usage.")
			}
		}
		return ee.Code
	}
	if isCobraUsage(err) {
		fmt.Fprintf(errOut, "Error: %v\nRun with --help for usage.\n", err)
		return ExitUsage
	}
	fmt.Fprintf(errOut, "Error: %v\n", err)
	return ExitError
}
