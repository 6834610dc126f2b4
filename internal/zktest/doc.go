// Package zktest starts a real ZooKeeper server for tests, from the
// installation zkinstall finds, on 127.0.0.1 and a free port, with its data in
// the test's temporary directory. The server dies with the test (and with the
// test process on Linux). Without an installation the test is skipped with a
// loud message, or fails when CI=true.
package zktest
