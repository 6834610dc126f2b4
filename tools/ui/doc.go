// Package ui is `ktool ui`: a web console served by the ktool binary. It speaks
// only the Kafka protocol (kadm and kgo through cmdutil's Factory) and, when
// given, ZooKeeper, so it works against any Kafka cluster. One server-side
// snapshot of the cluster is refreshed at a fixed interval while someone
// watches and shared by every viewer; pages are plain HTML, CSS and JavaScript
// embedded in the binary, and follow the snapshot through server-sent events.
package ui
