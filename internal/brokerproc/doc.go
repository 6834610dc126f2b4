// Package brokerproc runs `ktool broker start` as child processes, for the
// tests and benchmarks that need a real broker process: start one and wait
// until it is ready, kill it (SIGKILL), stop it (SIGTERM), freeze and thaw it
// (SIGSTOP, SIGCONT), start it again on the same port and directories, and
// keep its output to show when something fails. A Cluster is N brokers
// sharing one ZooKeeper chroot. Package proctest runs them for a test,
// with a real ZooKeeper (internal/zktest); this package imports no testing
// code, as cmd/ktool imports it for the ready line.
//
// The package owns the line a broker prints on stdout once it serves
// (ReadyLine, ParseReady): cmd/ktool prints it with ReadyLine and this
// package waits for it, so its format changes in one place.
//
// Output. A broker's stderr (its log) and its stdout lines, prefixed
// "stdout: ", go to Spec.LogFile when set (appended across restarts), else
// to memory; lines starting "=== brokerproc:" mark each start and signal, to
// line the log up with what the caller did.
package brokerproc
