// Package broker is a Kafka-compatible broker: it serves the Kafka wire protocol
// (one file per API key, named by key, each registering its version range and
// handler; ApiVersions is built from that registry), hosts partition replicas,
// registers in the coordination store (ZooKeeper or the embedded store) and takes
// part in controller election exactly as Kafka's ZooKeeper mode does.
package broker
