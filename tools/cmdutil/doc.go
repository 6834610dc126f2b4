// Package cmdutil holds what every ktool command shares: the Factory (IO streams,
// connection settings and profiles, Kafka clients), output formatting
// (table|json|yaml from the same tagged structs) and the mapping of errors to exit codes.
package cmdutil
