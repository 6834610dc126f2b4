// Package assignortest is the conformance suite for assignor.Assignor
// implementations. Run checks the built-in assignors, and the same
// assignors served through a plugin, against one table of group shapes.
package assignortest
