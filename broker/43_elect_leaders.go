package broker

// ElectLeaders, key 43, v0-v2 (KIP-460).
//
// Preferred (type 0) or unclean (type 1) leader election for a list of partitions
// or, with a null list, every partition. The controller runs it; a broker that is
// not the controller forwards the request to it, so the request may be sent to
// any broker. Per partition: elected, ELECTION_NOT_NEEDED (already the preferred
// leader / the leader is live), PREFERRED_LEADER_NOT_AVAILABLE or
// ELIGIBLE_LEADERS_NOT_AVAILABLE.

import (
	"context"
	"sort"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/ktoolhq/ktool/broker/controller"
	"github.com/ktoolhq/ktool/broker/protocol"
)

func init() { register(43, 0, 2, handleElectLeaders) }

func handleElectLeaders(b *Broker, rc *reqCtx, r kmsg.Request, respond func(protocol.Response)) {
	req := r.(*kmsg.ElectLeadersRequest)
	go func() {
		timeout := adminTimeout(req.TimeoutMillis)
		if timeout <= 0 {
			timeout = 30 * time.Second
		}
		ctx, cancel := context.WithTimeout(rc.ctx, timeout)
		defer cancel()
		respond(protocol.Response{Msg: b.electLeaders(ctx, req)})
	}()
}

func (b *Broker) electLeaders(ctx context.Context, req *kmsg.ElectLeadersRequest) kmsg.Response {
	resp := req.ResponseKind().(*kmsg.ElectLeadersResponse)
	c := b.ctrl.active()
	if c == nil {
		fwd, err := b.forwardToController(ctx, req)
		if err == nil {
			return fwd
		}
		// Per partition too: v0 has no top-level error code.
		resp.ErrorCode = kerr.NotController.Code
		for _, t := range req.Topics {
			rt := kmsg.NewElectLeadersResponseTopic()
			rt.Topic = t.Topic
			for _, p := range t.Partitions {
				rp := kmsg.NewElectLeadersResponseTopicPartition()
				rp.Partition, rp.ErrorCode = p, kerr.NotController.Code
				rt.Partitions = append(rt.Partitions, rp)
			}
			resp.Topics = append(resp.Topics, rt)
		}
		return resp
	}
	var tps []controller.TP
	if req.Topics != nil {
		tps = []controller.TP{}
		for _, t := range req.Topics {
			for _, p := range t.Partitions {
				tps = append(tps, controller.TP{Topic: t.Topic, Partition: p})
			}
		}
	}
	results, err := c.ElectLeaders(ctx, controller.ElectionType(req.ElectionType), tps)
	if err != nil {
		resp.ErrorCode = errorCode(err)
		return resp
	}
	idx := map[string]int{}
	for _, tp := range sortedTPs(results) {
		i, ok := idx[tp.Topic]
		if !ok {
			rt := kmsg.NewElectLeadersResponseTopic()
			rt.Topic = tp.Topic
			resp.Topics = append(resp.Topics, rt)
			i = len(resp.Topics) - 1
			idx[tp.Topic] = i
		}
		rp := kmsg.NewElectLeadersResponseTopicPartition()
		rp.Partition = tp.Partition
		if e := results[tp]; e != nil {
			rp.ErrorCode = errorCode(e)
			msg := e.Error()
			rp.ErrorMessage = &msg
		}
		resp.Topics[i].Partitions = append(resp.Topics[i].Partitions, rp)
	}
	return resp
}

// forwardToController relays a request that only the controller can answer.
func (b *Broker) forwardToController(ctx context.Context, req kmsg.Request) (kmsg.Response, error) {
	id := b.meta.controllerID()
	addr, ok := b.interBrokerAddr(id)
	if !ok || id == b.id {
		return nil, kerr.NotController
	}
	cl := b.interBrokerClient(addr, "ktool-forward")
	defer cl.Close()
	return cl.Request(ctx, req)
}

func sortedTPs(m map[controller.TP]error) []controller.TP {
	out := make([]controller.TP, 0, len(m))
	for tp := range m {
		out = append(out, tp)
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Topic != out[j].Topic {
			return out[i].Topic < out[j].Topic
		}
		return out[i].Partition < out[j].Partition
	})
	return out
}
