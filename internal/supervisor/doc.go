// Package supervisor runs the brokers of a local cluster inside one process,
// all on one embedded coordination store, and answers a small control
// protocol (package control: one JSON request and one JSON response per
// connection, over a unix socket) to kill, start and stop them. `ktool cluster up` uses it when
// no ZooKeeper is available, so that killing a broker (an abrupt stop whose
// session ends at once) and starting it again work as they do with processes.
// The hidden `ktool cluster __supervise` command (cmd/ktool) runs it.
package supervisor
