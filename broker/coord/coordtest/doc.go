// Package coordtest is the conformance suite every coord.Store
// implementation passes: the embedded store and the ZooKeeper store run the
// same tests, so the broker can rely on one behaviour.
package coordtest
