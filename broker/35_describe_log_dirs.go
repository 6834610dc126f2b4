package broker

// DescribeLogDirs, key 35, v0-v4.
//
// Every log directory of this broker and, per partition it hosts there, the
// size on disk and the offset lag (how far the replica's log end is behind the
// high watermark it knows, 0 on leaders). Null topics means every partition.
// A dir that failed (KIP-112) is answered with KAFKA_STORAGE_ERROR and no
// partitions. Total and usable bytes of each online directory come from
// statfs (v4 fields; -1 for a failed dir, left out at lower versions). A
// replica moving to another dir (AlterReplicaLogDirs) is listed in its
// target dir too, with is_future_key set, the future log's size, and as its
// offset lag how far the future log's end is behind the current log's.

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
	"golang.org/x/sys/unix"

	"github.com/ktoolhq/ktool/broker/protocol"
	"github.com/ktoolhq/ktool/broker/replica"
)

func init() { register(35, 0, 4, handleDescribeLogDirs) }

func handleDescribeLogDirs(b *Broker, rc *reqCtx, r kmsg.Request, respond func(protocol.Response)) {
	req := r.(*kmsg.DescribeLogDirsRequest)
	resp := req.ResponseKind().(*kmsg.DescribeLogDirsResponse)
	// A set, so a long (or repetitive) list costs its length, not its length
	// times the hosted partitions.
	wanted := map[replica.TP]bool{}
	for _, t := range req.Topics {
		for _, p := range t.Partitions {
			wanted[replica.TP{Topic: t.Topic, Partition: p}] = true
		}
	}
	want := func(tp replica.TP) bool { return req.Topics == nil || wanted[tp] }
	futures := map[string][]replica.MoveStatus{}
	for _, mv := range b.replicas.Moves() {
		if want(mv.TP) {
			futures[mv.Dir] = append(futures[mv.Dir], mv)
		}
	}
	for _, dir := range b.replicas.Dirs() {
		d := kmsg.NewDescribeLogDirsResponseDir()
		d.Dir = dir.Path
		if dir.Err != nil {
			d.ErrorCode = kerr.KafkaStorageError.Code
			resp.Dirs = append(resp.Dirs, d)
			continue
		}
		var st unix.Statfs_t
		if unix.Statfs(dir.Path, &st) == nil {
			d.TotalBytes = int64(st.Blocks) * int64(st.Bsize)
			d.UsableBytes = int64(st.Bavail) * int64(st.Bsize)
		}
		idx := map[string]int{}
		add := func(topic string, rp kmsg.DescribeLogDirsResponseDirTopicPartition) {
			i, ok := idx[topic]
			if !ok {
				t := kmsg.NewDescribeLogDirsResponseDirTopic()
				t.Topic = topic
				d.Topics = append(d.Topics, t)
				i = len(d.Topics) - 1
				idx[topic] = i
			}
			d.Topics[i].Partitions = append(d.Topics[i].Partitions, rp)
		}
		for _, p := range b.replicas.PartitionsIn(dir.Path) {
			if !want(replica.TP{Topic: p.Topic, Partition: p.ID}) {
				continue
			}
			rp := kmsg.NewDescribeLogDirsResponseDirTopicPartition()
			rp.Partition = p.ID
			rp.Size = p.Log().Size()
			rp.OffsetLag = max(0, p.HighWatermark()-p.Log().LogEndOffset())
			add(p.Topic, rp)
		}
		for _, mv := range futures[dir.Path] {
			rp := kmsg.NewDescribeLogDirsResponseDirTopicPartition()
			rp.Partition = mv.TP.Partition
			rp.Size = mv.Size
			rp.OffsetLag = mv.OffsetLag
			rp.IsFuture = true
			add(mv.TP.Topic, rp)
		}
		resp.Dirs = append(resp.Dirs, d)
	}
	respond(protocol.Response{Msg: resp})
}
