package broker

// AlterReplicaLogDirs, key 34, v0-v1 (KIP-113; no flexible version in Kafka
// 2.8).
//
// Moves replicas this broker hosts to another of its log dirs: a future log
// is filled in the target dir in the background (throttled by
// replica.alter.log.dirs.io.max.bytes.per.second) and swapped in once it has
// caught up (replica.Manager.AlterLogDir, broker/replica/move.go). A replica
// the cluster has but this broker does not host yet is created in the dir
// when it comes, and answered REPLICA_NOT_AVAILABLE, as Kafka does. The dir
// must be one of log.dirs, compared as cleaned absolute paths
// (LOG_DIR_NOT_FOUND otherwise); an offline dir or replica is
// KAFKA_STORAGE_ERROR, a partition the cluster does not have
// UNKNOWN_TOPIC_OR_PARTITION. ALTER on the cluster is required
// (authorize.go).

import (
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/ktoolhq/ktool/broker/protocol"
	"github.com/ktoolhq/ktool/broker/replica"
)

func init() { register(34, 0, 1, handleAlterReplicaLogDirs) }

func handleAlterReplicaLogDirs(b *Broker, rc *reqCtx, r kmsg.Request, respond func(protocol.Response)) {
	req := r.(*kmsg.AlterReplicaLogDirsRequest)
	go func() {
		resp := req.ResponseKind().(*kmsg.AlterReplicaLogDirsResponse)
		// A partition named twice is moved once, to the last dir named (as
		// Kafka's map of the request), and answered once per topic entry.
		dest := map[replica.TP]string{}
		for _, d := range req.Dirs {
			for _, t := range d.Topics {
				for _, p := range t.Partitions {
					dest[replica.TP{Topic: t.Topic, Partition: p}] = d.Dir
				}
			}
		}
		results := make(map[replica.TP]int16, len(dest))
		for tp, dir := range dest {
			_, known := b.meta.partition(tp.Topic, tp.Partition)
			err := b.replicas.AlterLogDir(tp, dir, known)
			if err != nil {
				b.logger.Debug("AlterReplicaLogDirs refused", "partition", tp.String(), "dir", dir, "err", err)
			}
			results[tp] = errorCode(err)
		}
		idx := map[string]int{}
		seen := map[replica.TP]bool{}
		for _, d := range req.Dirs {
			for _, t := range d.Topics {
				i, ok := idx[t.Topic]
				if !ok {
					rt := kmsg.NewAlterReplicaLogDirsResponseTopic()
					rt.Topic = t.Topic
					resp.Topics = append(resp.Topics, rt)
					i = len(resp.Topics) - 1
					idx[t.Topic] = i
				}
				for _, p := range t.Partitions {
					tp := replica.TP{Topic: t.Topic, Partition: p}
					if seen[tp] {
						continue
					}
					seen[tp] = true
					rp := kmsg.NewAlterReplicaLogDirsResponseTopicPartition()
					rp.Partition, rp.ErrorCode = p, results[tp]
					resp.Topics[i].Partitions = append(resp.Topics[i].Partitions, rp)
				}
			}
		}
		respond(protocol.Response{Msg: resp})
	}()
}
