// Package reassign moves partition replicas between brokers over
// AlterPartitionReassignments and ListPartitionReassignments, as
// kafka-reassign-partitions.sh does and with its plan files: `ktool partition
// move` (--generate, --execute with --throttle, --verify, --cancel), `ktool
// broker decommission` and `ktool cluster balance`. Plans are made here
// (generate.go): balanced replicas and leaders, rack-aware, as few moves as
// possible.
package reassign
