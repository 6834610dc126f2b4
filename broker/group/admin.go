package group

import (
	"context"
	"sort"
	"sync/atomic"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// groupOperations is what DescribeGroups reports as authorized when asked
// (READ, DELETE and DESCRIBE, Kafka's ACL operation bits): the broker has no ACLs.
const groupOperations = 1<<3 | 1<<6 | 1<<8

// DescribeGroups handles a DescribeGroups request. An unknown group is
// described as Dead with no error, as Kafka does.
func (c *Coordinator) DescribeGroups(ctx context.Context, req *kmsg.DescribeGroupsRequest, respond func(*kmsg.DescribeGroupsResponse)) {
	resp := req.ResponseKind().(*kmsg.DescribeGroupsResponse)
	for _, id := range req.Groups {
		rg := kmsg.NewDescribeGroupsResponseGroup()
		rg.Group = id
		if req.IncludeAuthorizedOperations {
			rg.AuthorizedOperations = groupOperations
		}
		s := c.shardFor(id)
		s.run(func(*outbox) {
			if rg.ErrorCode = s.servable(); rg.ErrorCode != 0 {
				return
			}
			g := s.groups[id]
			if g == nil {
				rg.State = stateDead.String()
				return
			}
			rg.State = g.state.String()
			rg.ProtocolType = g.protocolType
			stable := g.state == stateStable
			if stable {
				rg.Protocol = g.protocol
			}
			for _, m := range g.sortedMembers() {
				rm := kmsg.NewDescribeGroupsResponseGroupMember()
				rm.MemberID, rm.InstanceID = m.id, m.instanceID
				rm.ClientID, rm.ClientHost = m.clientID, m.clientHost
				rm.ProtocolMetadata, rm.MemberAssignment = []byte{}, []byte{}
				if stable {
					rm.ProtocolMetadata = nonNil(m.metadataFor(g.protocol))
					rm.MemberAssignment = nonNil(m.assignment)
				}
				rg.Members = append(rg.Members, rm)
			}
		})
		resp.Groups = append(resp.Groups, rg)
	}
	respond(resp)
}

// ListGroups handles a ListGroups request: the groups this broker coordinates,
// filtered by state from v4. While a partition loads the error is
// COORDINATOR_LOAD_IN_PROGRESS and the loaded groups are still listed.
func (c *Coordinator) ListGroups(ctx context.Context, req *kmsg.ListGroupsRequest, respond func(*kmsg.ListGroupsResponse)) {
	resp := req.ResponseKind().(*kmsg.ListGroupsResponse)
	for _, s := range c.shards {
		s.run(func(*outbox) {
			if s.status == shardLoading {
				resp.ErrorCode = kerr.CoordinatorLoadInProgress.Code
			}
			for _, g := range s.groups {
				if !stateMatches(req.StatesFilter, g.state) {
					continue
				}
				lg := kmsg.NewListGroupsResponseGroup()
				lg.Group, lg.ProtocolType, lg.GroupState = g.id, g.protocolType, g.state.String()
				resp.Groups = append(resp.Groups, lg)
			}
		})
	}
	sort.Slice(resp.Groups, func(i, j int) bool { return resp.Groups[i].Group < resp.Groups[j].Group })
	respond(resp)
}

// DeleteGroups handles a DeleteGroups request: empty groups are removed with
// their offsets (tombstones in the log); groups with members give NON_EMPTY_GROUP.
func (c *Coordinator) DeleteGroups(ctx context.Context, req *kmsg.DeleteGroupsRequest, respond func(*kmsg.DeleteGroupsResponse)) {
	resp := req.ResponseKind().(*kmsg.DeleteGroupsResponse)
	resp.Groups = make([]kmsg.DeleteGroupsResponseGroup, len(req.Groups))
	if len(req.Groups) == 0 {
		respond(resp)
		return
	}
	// Groups on different shards complete from different writers.
	var left atomic.Int32
	left.Store(int32(len(req.Groups)))
	complete := func() {
		if left.Add(-1) == 0 {
			respond(resp)
		}
	}
	for i, id := range req.Groups {
		rg := &resp.Groups[i]
		*rg = kmsg.NewDeleteGroupsResponseGroup()
		rg.Group = id
		s := c.shardFor(id)
		s.run(func(out *outbox) {
			if rg.ErrorCode = s.servable(); rg.ErrorCode != 0 {
				out.add(complete)
				return
			}
			g := s.groups[id]
			switch {
			case g == nil || g.state == stateDead:
				rg.ErrorCode = kerr.GroupIDNotFound.Code
				out.add(complete)
				return
			case g.state != stateEmpty:
				rg.ErrorCode = kerr.NonEmptyGroup.Code
				out.add(complete)
				return
			}
			for _, t := range g.pending {
				t.Stop()
			}
			g.transition(stateDead, s.now())
			delete(s.groups, id)
			recs := make([]record, 0, len(g.offsets)+1)
			for tp := range g.offsets {
				recs = append(recs, record{key: offsetKey(id, tp)})
			}
			recs = append(recs, record{key: groupKey(id)})
			s.appendRecords(out, recs, func(out *outbox, _ bool, err error) {
				if err != nil {
					s.c.logger.Warn("group coordinator: writing group tombstones failed", "group", id, "error", err)
				}
				out.add(complete)
			})
		})
	}
}
