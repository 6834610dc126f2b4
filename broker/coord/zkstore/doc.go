// Package zkstore is the coord.Store on a real ZooKeeper ensemble, through
// github.com/go-zookeeper/zk: the cluster mode, where brokers coordinate
// exactly as Kafka's ZooKeeper mode does. The connect string is Kafka's
// zookeeper.connect ("h1:2181,h2:2181/chroot"); every path is relative to
// the chroot, which is created when missing.
package zkstore
