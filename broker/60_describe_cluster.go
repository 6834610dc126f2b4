package broker

// DescribeCluster, key 60, v0-v1 (KIP-700).
//
// The cluster id, the active controller and the live brokers, from the metadata cache.
// Any authenticated client may ask, as on Kafka's brokers (Metadata says as much);
// the cluster's authorized operations, when asked for, are none without DESCRIBE on
// the cluster.

import (
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/ktoolhq/ktool/broker/protocol"
	"github.com/ktoolhq/ktool/internal/acl"
)

func init() { register(60, 0, 1, handleDescribeCluster) }

func handleDescribeCluster(b *Broker, rc *reqCtx, r kmsg.Request, respond func(protocol.Response)) {
	req := r.(*kmsg.DescribeClusterRequest)
	resp := req.ResponseKind().(*kmsg.DescribeClusterResponse)
	resp.ClusterID = b.clusterID
	resp.ControllerID = b.meta.controllerID()
	resp.ClusterAuthorizedOperations = authorizedOpsUnknown
	if req.IncludeClusterAuthorizedOperations {
		resp.ClusterAuthorizedOperations = rc.authorizedOps(b, acl.ResourceCluster, acl.ClusterName)
	}
	resp.EndpointType = 1
	for _, be := range b.meta.liveBrokers() {
		hp, ok := be.on(rc.identity.Listener)
		if !ok {
			continue
		}
		rb := kmsg.NewDescribeClusterResponseBroker()
		rb.NodeID, rb.Host, rb.Port, rb.Rack = be.ID, hp.Host, hp.Port, be.Rack
		resp.Brokers = append(resp.Brokers, rb)
	}
	respond(protocol.Response{Msg: resp})
}
