// Package zkinstall finds a ZooKeeper server installed on this machine
// (Debian/Ubuntu package, ZOOKEEPER_HOME, Homebrew) and builds the command
// that runs one standalone server with a generated configuration. Test
// harnesses and `ktool cluster up` share it.
package zkinstall
