package broker

// Metadata, key 3, v0-v11.
//
// Answered from the broker's metadata cache, which the controller keeps current
// with UpdateMetadata: live brokers, the controller id, the cluster id, and per
// partition the leader, leader epoch, replicas (AR), ISR and offline replicas. A
// partition without a live leader reports LEADER_NOT_AVAILABLE. Unknown topics are
// created when auto.create.topics.enable is on and the client allows it (v4+),
// answered with LEADER_NOT_AVAILABLE until the controller has elected leaders.

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/ktoolhq/ktool/broker/protocol"
	"github.com/ktoolhq/ktool/internal/acl"
)

func init() { register(3, 0, 11, handleMetadata) }

const authorizedOpsUnknown = -2147483648

// handleMetadata answers when every earlier request on the connection has
// been answered (protocol.Response.Late), from the metadata cache as it is then.
func handleMetadata(b *Broker, rc *reqCtx, r kmsg.Request, respond func(protocol.Response)) {
	req := r.(*kmsg.MetadataRequest)
	respond(protocol.Response{Late: func() kmsg.Response { return b.metadata(rc, req) }})
}

func (b *Broker) metadata(rc *reqCtx, req *kmsg.MetadataRequest) *kmsg.MetadataResponse {
	resp := req.ResponseKind().(*kmsg.MetadataResponse)
	for _, be := range b.meta.liveBrokers() {
		hp, ok := be.on(rc.identity.Listener)
		if !ok {
			continue // not reachable on the listener this client uses
		}
		rb := kmsg.NewMetadataResponseBroker()
		rb.NodeID, rb.Host, rb.Port, rb.Rack = be.ID, hp.Host, hp.Port, be.Rack
		resp.Brokers = append(resp.Brokers, rb)
	}
	cid := b.clusterID
	resp.ClusterID = &cid
	resp.ControllerID = b.meta.controllerID()
	resp.AuthorizedOperations = authorizedOpsUnknown
	if req.IncludeClusterAuthorizedOperations {
		resp.AuthorizedOperations = rc.authorizedOps(b, acl.ResourceCluster, acl.ClusterName)
	}

	var names []string
	all := req.Topics == nil || (req.GetVersion() == 0 && len(req.Topics) == 0)
	if all {
		names = b.meta.topicNames()
	} else {
		seen := make(map[string]bool, min(len(req.Topics), 1<<16))
		for _, t := range req.Topics {
			// A name listed many times is answered once, as Kafka does.
			if t.Topic != nil && !seen[*t.Topic] {
				seen[*t.Topic] = true
				names = append(names, *t.Topic)
			}
		}
	}
	autoCreate := req.GetVersion() < 4 || req.AllowAutoTopicCreation
	for _, name := range names {
		// Authorization (KafkaApis.handleTopicMetadataRequest): a listing of
		// every topic leaves out those the principal may not DESCRIBE; a
		// topic asked for by name is refused; auto-creation needs CREATE on
		// the cluster or the topic.
		describe := rc.allowed(b, acl.OpDescribe, acl.ResourceTopic, name)
		if all && !describe {
			continue
		}
		rt := kmsg.NewMetadataResponseTopic()
		n := name
		rt.Topic = &n
		rt.IsInternal = internalTopic(name)
		rt.AuthorizedOperations = authorizedOpsUnknown
		if req.IncludeTopicAuthorizedOperations && describe {
			rt.AuthorizedOperations = rc.authorizedOps(b, acl.ResourceTopic, name)
		}
		ids, parts, id, ok := b.meta.topic(name)
		switch {
		case !describe:
			rt.ErrorCode = kerr.TopicAuthorizationFailed.Code
		case ok:
			rt.TopicID = id
			for _, pid := range ids {
				pm := parts[pid]
				rp := kmsg.NewMetadataResponseTopicPartition()
				rp.Partition = pid
				rp.Leader = pm.Leader
				rp.LeaderEpoch = pm.LeaderEpoch
				rp.Replicas = pm.Replicas
				rp.ISR = pm.ISR
				rp.OfflineReplicas = pm.Offline
				if rp.Replicas == nil {
					rp.Replicas = []int32{}
				}
				if rp.ISR == nil {
					rp.ISR = []int32{}
				}
				if _, live := b.meta.broker(pm.Leader); pm.Leader < 0 || !live {
					rp.ErrorCode = kerr.LeaderNotAvailable.Code
					rp.Leader = -1
				}
				rt.Partitions = append(rt.Partitions, rp)
			}
		case validateTopicName(name) != nil:
			rt.ErrorCode = kerr.InvalidTopicException.Code
		case b.topicExists(rc.ctx, name):
			// Known to the store but not yet to this broker's metadata: it is
			// being created (or this broker is catching up).
			rt.ErrorCode = kerr.LeaderNotAvailable.Code
		case autoCreate && b.cfg.Settings().AutoCreateTopics && !internalTopic(name) &&
			!rc.allowedCluster(b, acl.OpCreate) && !rc.allowed(b, acl.OpCreate, acl.ResourceTopic, name):
			rt.ErrorCode = kerr.TopicAuthorizationFailed.Code
		case autoCreate && b.cfg.Settings().AutoCreateTopics && !internalTopic(name):
			err := b.createTopic(rc.ctx, topicSpec{Name: name, Partitions: -1, ReplicationFactor: -1})
			switch {
			case err == nil, errorCode(err) == kerr.TopicAlreadyExists.Code:
				rt.ErrorCode = kerr.LeaderNotAvailable.Code
			default:
				rt.ErrorCode = errorCode(err)
			}
		default:
			rt.ErrorCode = kerr.UnknownTopicOrPartition.Code
		}
		resp.Topics = append(resp.Topics, rt)
	}
	return resp
}
