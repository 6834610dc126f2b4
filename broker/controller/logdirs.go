package controller

import (
	"slices"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/ktoolhq/ktool/internal/zkdata"
)

// Failed log dirs (KIP-112), as Kafka's controller handles them. A broker
// whose log dir failed leaves /log_dir_event_notification/log_dir_event_<seq>;
// the controller sends that broker a LeaderAndIsr for every partition it
// hosts, and the partitions it answers with KAFKA_STORAGE_ERROR are offline
// replicas: they are treated like replicas of a dead broker (other ISR
// members lead, they leave the ISR) and listed in offline_replicas, until the
// broker restarts and answers again.

func (c *Controller) watchLogDirEvents() {
	names, _, ch, err := c.store.ChildrenW(c.ctx, zkdata.LogDirEventNotificationPath)
	if err != nil {
		c.log.Error("watching log dir event notifications", "err", err)
		return
	}
	go c.rearm(ch, c.watchLogDirEvents)
	var ids []int32
	for _, n := range names {
		path := zkdata.LogDirEventNotificationPath + "/" + n
		data, _, err := c.store.Get(c.ctx, path)
		if err == nil {
			if id, derr := zkdata.DecodeLogDirEvent(data); derr == nil {
				ids = append(ids, id)
			} else {
				c.log.Warn("ignoring unreadable log dir event notification", "znode", n, "err", derr)
			}
		}
		_ = c.store.Delete(c.ctx, path, -1)
	}
	slices.Sort(ids)
	for _, id := range slices.Compact(ids) {
		c.onLogDirFailure(id)
	}
}

// onLogDirFailure asks broker id about every partition it hosts; its answers
// say which are offline (storageErrors).
func (c *Controller) onLogDirFailure(id int32) {
	if !c.isLive(id) {
		return
	}
	var theirs []TP
	for _, tp := range c.allPartitions() {
		if slices.Contains(c.states[tp].Replicas, id) && !c.deleting[tp.Topic] {
			theirs = append(theirs, tp)
		}
	}
	c.log.Warn("a log dir failed on a broker: asking it which replicas are offline", "broker", id, "partitions", len(theirs))
	c.sendLeaderAndIsr(theirs, []int32{id})
}

// storageErrors is called by broker id's sender with its answer to a
// LeaderAndIsr (v4, which names partitions by topic) sent at broker epoch
// epoch.
func (c *Controller) storageErrors(id int32, epoch int64, resp *kmsg.LeaderAndISRResponse) {
	var tps []TP
	for _, p := range resp.Partitions {
		if p.ErrorCode == kerr.KafkaStorageError.Code {
			tps = append(tps, TP{p.Topic, p.Partition})
		}
	}
	if len(tps) > 0 {
		c.enqueue(func() { c.onReplicasOffline(id, epoch, tps) })
	}
}

// onReplicasOffline takes broker id's replicas of tps out of service: other
// ISR members lead the partitions it led, and it leaves their ISRs.
func (c *Controller) onReplicasOffline(id int32, epoch int64, tps []TP) {
	if info, ok := c.brokers[id]; !ok || info.Epoch != epoch {
		return // an answer of an earlier incarnation
	}
	var fresh []TP
	for _, tp := range tps {
		if _, ok := c.states[tp]; !ok || c.offlineReplicas[id][tp] {
			continue
		}
		if c.offlineReplicas[id] == nil {
			c.offlineReplicas[id] = map[TP]bool{}
		}
		c.offlineReplicas[id][tp] = true
		fresh = append(fresh, tp)
	}
	if len(fresh) == 0 {
		return
	}
	c.log.Warn("replicas offline: their log dir failed", "broker", id, "partitions", len(fresh))
	c.sendLeaderAndIsr(c.electOffline(fresh, false), nil)
	c.sendUpdateMetadata()
	c.sendLeaderAndIsr(c.removeDeadFromIsr(fresh), nil)
	c.sendUpdateMetadata()
	c.publish()
}
