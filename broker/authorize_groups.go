package broker

// Authorization of the group APIs whose work is the group coordinator's
// (broker/group knows nothing of ACLs): requests are cut to what the principal
// may touch before the coordinator sees them, and answers for the rest are
// added or rewritten, as KafkaApis does.

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/ktoolhq/ktool/internal/acl"
)

// authorizeOffsetFetch rewrites an OffsetFetch answer: a group the principal
// may not DESCRIBE is GROUP_AUTHORIZATION_FAILED; a topic it may not DESCRIBE
// is left out of an all-topics answer and TOPIC_AUTHORIZATION_FAILED when
// asked for by name. Fetching offsets changes nothing, so rewriting the answer
// is enough.
func authorizeOffsetFetch(b *Broker, rc *reqCtx, req *kmsg.OffsetFetchRequest, resp *kmsg.OffsetFetchResponse) {
	if b.authz == nil {
		return
	}
	topicOK := func(t string) bool { return rc.allowed(b, acl.OpDescribe, acl.ResourceTopic, t) }
	if req.GetVersion() >= 8 {
		asked := map[string]bool{}
		for _, g := range req.Groups {
			asked[g.Group] = g.Topics != nil
		}
		for i := range resp.Groups {
			g := &resp.Groups[i]
			if !rc.allowed(b, acl.OpDescribe, acl.ResourceGroup, g.Group) {
				g.ErrorCode, g.Topics = kerr.GroupAuthorizationFailed.Code, nil
				continue
			}
			kept := g.Topics[:0]
			for _, t := range g.Topics {
				if !topicOK(t.Topic) {
					if !asked[g.Group] {
						continue
					}
					for j := range t.Partitions {
						t.Partitions[j].ErrorCode, t.Partitions[j].Offset, t.Partitions[j].Metadata = kerr.TopicAuthorizationFailed.Code, -1, nil
					}
				}
				kept = append(kept, t)
			}
			g.Topics = kept
		}
		return
	}
	groupDenied := !rc.allowed(b, acl.OpDescribe, acl.ResourceGroup, req.Group)
	if groupDenied && req.GetVersion() >= 2 {
		resp.ErrorCode, resp.Topics = kerr.GroupAuthorizationFailed.Code, nil
		return
	}
	kept := resp.Topics[:0]
	for _, t := range resp.Topics {
		code := int16(0)
		switch {
		case groupDenied:
			code = kerr.GroupAuthorizationFailed.Code
		case !topicOK(t.Topic):
			if req.Topics == nil {
				continue
			}
			code = kerr.TopicAuthorizationFailed.Code
		}
		if code != 0 {
			for j := range t.Partitions {
				t.Partitions[j].ErrorCode, t.Partitions[j].Offset, t.Partitions[j].Metadata = code, -1, nil
			}
		}
		kept = append(kept, t)
	}
	resp.Topics = kept
}

// splitGroups separates the groups the principal may do op on from the others.
func splitGroups(b *Broker, rc *reqCtx, op acl.Operation, groups []string) (allowed, denied []string) {
	if b.authz == nil {
		return groups, nil
	}
	for _, g := range groups {
		if rc.allowed(b, op, acl.ResourceGroup, g) {
			allowed = append(allowed, g)
		} else {
			denied = append(denied, g)
		}
	}
	return allowed, denied
}

// authorizeOffsetDelete cuts the topics the principal may not READ out of an
// OffsetDelete (their offsets stay) and returns the answers for them.
func authorizeOffsetDelete(b *Broker, rc *reqCtx, req *kmsg.OffsetDeleteRequest) []kmsg.OffsetDeleteResponseTopic {
	if b.authz == nil {
		return nil
	}
	var refused []kmsg.OffsetDeleteResponseTopic
	kept := req.Topics[:0:0]
	for _, t := range req.Topics {
		if rc.allowed(b, acl.OpRead, acl.ResourceTopic, t.Topic) {
			kept = append(kept, t)
			continue
		}
		rt := kmsg.NewOffsetDeleteResponseTopic()
		rt.Topic = t.Topic
		for _, p := range t.Partitions {
			rp := kmsg.NewOffsetDeleteResponseTopicPartition()
			rp.Partition, rp.ErrorCode = p.Partition, kerr.TopicAuthorizationFailed.Code
			rt.Partitions = append(rt.Partitions, rp)
		}
		refused = append(refused, rt)
	}
	req.Topics = kept
	return refused
}

// authorizeFindCoordinator refuses the keys the principal may not DESCRIBE:
// a group (GROUP_AUTHORIZATION_FAILED) or a transactional id
// (TRANSACTIONAL_ID_AUTHORIZATION_FAILED).
func authorizeFindCoordinator(b *Broker, rc *reqCtx, req *kmsg.FindCoordinatorRequest, resp *kmsg.FindCoordinatorResponse) {
	if b.authz == nil {
		return
	}
	rt, code := acl.ResourceGroup, kerr.GroupAuthorizationFailed.Code
	if req.CoordinatorType == 1 {
		rt, code = acl.ResourceTransactionalID, kerr.TransactionalIDAuthorizationFailed.Code
	}
	if req.GetVersion() < 4 {
		if !rc.allowed(b, acl.OpDescribe, rt, req.CoordinatorKey) {
			resp.ErrorCode, resp.ErrorMessage, resp.NodeID, resp.Host, resp.Port = code, nil, -1, "", -1
		}
		return
	}
	for i := range resp.Coordinators {
		c := &resp.Coordinators[i]
		if !rc.allowed(b, acl.OpDescribe, rt, c.Key) {
			c.ErrorCode, c.ErrorMessage, c.NodeID, c.Host, c.Port = code, nil, -1, "", -1
		}
	}
}
