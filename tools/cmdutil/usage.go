package cmdutil

import "strings"

// cobra reports unknown commands and argument-count problems as plain errors;
// they are usage errors all the same.
func isCobraUsage(err error) bool {
	msg := err.Error()
	for _, p := range []string{"unknown command", "unknown flag", "unknown shorthand flag",
		"accepts ", "requires at least", "requires at most", "requires exactly", "invalid argument",
		"flag needs an argument", "required flag"} {
		if strings.Contains(msg, p) {
			return true
		}
	}
	return false
}
