package broker

// LeaderAndIsr, key 4, v0-v5 (inter-broker, sent by the controller).
//
// Makes this broker leader or follower of partitions. Requests from a controller
// with an older epoch are refused (STALE_CONTROLLER_EPOCH), as are requests meant
// for an earlier incarnation of this broker (STALE_BROKER_EPOCH, KIP-380), from
// anyone but the store's controller, and partition states the store does not
// hold (controller_check.go).

import (
	"slices"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/ktoolhq/ktool/broker/protocol"
	"github.com/ktoolhq/ktool/broker/replica"
)

func init() { register(4, 0, 5, handleLeaderAndIsr) }

func handleLeaderAndIsr(b *Broker, rc *reqCtx, r kmsg.Request, respond func(protocol.Response)) {
	req := r.(*kmsg.LeaderAndISRRequest)
	resp := req.ResponseKind().(*kmsg.LeaderAndISRResponse)
	refuse := func(err error) {
		b.refuseControllerRequest(rc, err, resp, func(c int16) { resp.ErrorCode = c }, respond)
	}
	// The newest controller epoch seen is checked with the update itself (BecomeLeaderOrFollower).
	trusted, err := b.fenceControllerRequest(rc.ctx, req.ControllerID, req.ControllerEpoch, epochIf(req.GetVersion(), 2, req.BrokerEpoch), false, &req.UnknownTags)
	if err != nil {
		refuse(err)
		return
	}
	var updates []replica.LeaderUpdate
	add := func(p kmsg.LeaderAndISRRequestTopicPartition, topic string) {
		updates = append(updates, replica.LeaderUpdate{
			TP: replica.TP{Topic: topic, Partition: p.Partition},
			State: replica.State{Leader: p.Leader, LeaderEpoch: p.LeaderEpoch, ISR: p.ISR, Replicas: p.Replicas,
				ZkVersion: p.ZKVersion, ControllerEpoch: p.ControllerEpoch},
			IsNew: p.IsNew,
		})
	}
	for _, p := range req.PartitionStates {
		add(p, p.Topic)
	}
	for _, t := range req.TopicStates {
		for _, p := range t.PartitionStates {
			add(p, t.Topic)
		}
	}
	var leaders []replica.Endpoint
	for _, l := range req.LiveLeaders {
		leaders = append(leaders, replica.Endpoint{ID: l.BrokerID, Addr: hostPort(l.Host, l.Port)})
	}
	refused, err := b.verifyLeaderAndIsr(rc.ctx, updates, trusted)
	if err != nil {
		refuse(err)
		return
	}
	valid := slices.DeleteFunc(slices.Clone(updates), func(u replica.LeaderUpdate) bool { return refused[u.TP] != nil })
	errs, err := b.replicas.BecomeLeaderOrFollower(req.ControllerEpoch, valid, leaders)
	if err != nil {
		resp.ErrorCode = errorCode(err)
		respond(protocol.Response{Msg: resp})
		return
	}
	for tp, e := range refused {
		errs[tp] = e
	}
	for _, u := range updates {
		rp := kmsg.NewLeaderAndISRResponseTopicPartition()
		rp.Topic, rp.Partition = u.TP.Topic, u.TP.Partition
		rp.ErrorCode = errorCode(errs[u.TP])
		if req.GetVersion() >= 5 {
			// v5 groups by topic id; we answer per topic in request order.
			found := false
			for i := range resp.Topics {
				if len(resp.Topics[i].Partitions) > 0 && resp.Topics[i].Partitions[0].Topic == u.TP.Topic {
					resp.Topics[i].Partitions = append(resp.Topics[i].Partitions, rp)
					found = true
				}
			}
			if !found {
				t := kmsg.NewLeaderAndISRResponseTopic()
				t.Partitions = []kmsg.LeaderAndISRResponseTopicPartition{rp}
				resp.Topics = append(resp.Topics, t)
			}
			continue
		}
		resp.Partitions = append(resp.Partitions, rp)
	}
	b.onLeadershipChange(updates, errs)
	respond(protocol.Response{Msg: resp})
}
