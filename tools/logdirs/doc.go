// Package logdirs implements `ktool log-dirs describe`: every broker's log
// directories with the size and offset lag of each partition replica in
// them, and totals per broker, over DescribeLogDirs, as kafka-log-dirs.sh;
// and `ktool log-dirs move`: replicas moved between a broker's log dirs
// over AlterReplicaLogDirs, with their progress from DescribeLogDirs.
package logdirs
