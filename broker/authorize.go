package broker

// The authorizer's place in the broker: it is built at Start when
// authorizer.class.name names it, loads every ACL before the listeners serve,
// follows the change notifications on each coordination session
// (startWatches), and answers handlers through reqCtx.allowed, which costs a
// few map lookups and allocates nothing. With no authorizer every request is
// allowed, as in Kafka.

import (
	"context"
	"fmt"
	"net"
	"strings"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/ktoolhq/ktool/broker/auth"
	"github.com/ktoolhq/ktool/broker/authz"
	"github.com/ktoolhq/ktool/broker/protocol"
	"github.com/ktoolhq/ktool/internal/acl"
	"github.com/ktoolhq/ktool/internal/jaas"
)

// setupAuthorizer builds the authorizer and loads the ACLs (nil when off).
func (b *Broker) setupAuthorizer(ctx context.Context) error {
	s := b.cfg.Settings()
	on, err := authz.Enabled(s.AuthorizerClassName)
	if err != nil || !on {
		return err
	}
	super := splitSuperUsers(s.SuperUsers)
	if p, ok := b.interBrokerPrincipal(); ok {
		super = append(super, p)
	}
	b.authz = authz.New(super, s.AllowEveryoneIfNoACLFound, b.logger.With("component", "authorizer"))
	if err := b.authz.Load(ctx, b.Store()); err != nil {
		return fmt.Errorf("loading ACLs: %w", err)
	}
	return nil
}

// splitSuperUsers reads super.users: principals separated by semicolons.
func splitSuperUsers(v string) []string {
	var out []string
	for _, p := range strings.Split(v, ";") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}

// interBrokerPrincipal is the principal this broker authenticates as to the
// others: the username of its inter-broker SASL login. Brokers are super
// users of each other through it. A PLAINTEXT or SSL inter-broker listener
// has no such name (its principal is ANONYMOUS or the certificate's), so it
// must be listed in super.users, as in Kafka.
func (b *Broker) interBrokerPrincipal() (string, bool) {
	if !auth.UsesSASL(b.interBroker.Protocol) {
		return "", false
	}
	ls, err := b.cfg.Listener(b.interBroker.Name)
	if err != nil {
		return "", false
	}
	e, err := jaas.Parse(ls.JAAS(strings.ToUpper(b.cfg.Settings().SASLMechanismInterBroker)))
	if err != nil || e.Options["username"] == "" {
		return "", false
	}
	return auth.User(e.Options["username"]).String(), true
}

// remoteHost is the IP address ACL hosts are compared with.
func remoteHost(a net.Addr) string {
	if t, ok := a.(*net.TCPAddr); ok {
		return t.IP.String()
	}
	h, _, err := net.SplitHostPort(a.String())
	if err != nil {
		return a.String()
	}
	return h
}

// allowed reports whether the request's principal may do op on the resource.
func (rc *reqCtx) allowed(b *Broker, op acl.Operation, rt acl.ResourceType, name string) bool {
	if b.authz == nil {
		return true
	}
	p := rc.identity.Principal
	return b.authz.Authorize(acl.Principal{Type: p.Type, Name: p.Name}, rc.session.host, op, rt, name)
}

// allowedCluster is allowed on the cluster resource.
func (rc *reqCtx) allowedCluster(b *Broker, op acl.Operation) bool {
	return rc.allowed(b, op, acl.ResourceCluster, acl.ClusterName)
}

// allowedAny reports whether the principal may do op on some resource of type rt (KIP-679).
func (rc *reqCtx) allowedAny(b *Broker, op acl.Operation, rt acl.ResourceType) bool {
	if b.authz == nil {
		return true
	}
	p := rc.identity.Principal
	return b.authz.AuthorizeAny(acl.Principal{Type: p.Type, Name: p.Name}, rc.session.host, op, rt)
}

// authorizedOps is the bit field (KIP-430) of the operations on resource
// (rt, name) the principal may do: none without DESCRIBE, and without an
// authorizer every operation the resource type supports, as Kafka answers.
func (rc *reqCtx) authorizedOps(b *Broker, rt acl.ResourceType, name string) int32 {
	if !rc.allowed(b, acl.OpDescribe, rt, name) {
		return 0
	}
	var ops []acl.Operation
	for _, op := range acl.SupportedOperations(rt) {
		if rc.allowed(b, op, rt, name) {
			ops = append(ops, op)
		}
	}
	return acl.OperationBits(ops)
}

// clusterGate is the authorization of an API that needs one operation on the
// cluster, with the answer that refuses it (CLUSTER_AUTHORIZATION_FAILED in
// every error field Kafka sets). Handle applies it before the handler runs.
type clusterGate struct {
	op     acl.Operation
	refuse func(req kmsg.Request) kmsg.Response
}

var clusterAuthFailed = kerr.ClusterAuthorizationFailed.Code

var clusterGates = map[int16]clusterGate{
	// Inter-broker requests (CVE-2018-1288): only brokers, by CLUSTER_ACTION.
	// LeaderAndIsr and StopReplica also refuse each partition, as Kafka's
	// error answers for them do.
	4: {acl.OpClusterAction, func(r kmsg.Request) kmsg.Response {
		req := r.(*kmsg.LeaderAndISRRequest)
		resp := req.ResponseKind().(*kmsg.LeaderAndISRResponse)
		resp.ErrorCode = clusterAuthFailed
		refuse := func(topic string, p int32) kmsg.LeaderAndISRResponseTopicPartition {
			rp := kmsg.NewLeaderAndISRResponseTopicPartition()
			rp.Topic, rp.Partition, rp.ErrorCode = topic, p, clusterAuthFailed
			return rp
		}
		for _, p := range req.PartitionStates {
			resp.Partitions = append(resp.Partitions, refuse(p.Topic, p.Partition))
		}
		for _, t := range req.TopicStates {
			if req.GetVersion() < 5 {
				for _, p := range t.PartitionStates {
					resp.Partitions = append(resp.Partitions, refuse(t.Topic, p.Partition))
				}
				continue
			}
			rt := kmsg.NewLeaderAndISRResponseTopic()
			rt.TopicID = t.TopicID
			for _, p := range t.PartitionStates {
				rt.Partitions = append(rt.Partitions, refuse(t.Topic, p.Partition))
			}
			resp.Topics = append(resp.Topics, rt)
		}
		return resp
	}},
	5: {acl.OpClusterAction, func(r kmsg.Request) kmsg.Response {
		req := r.(*kmsg.StopReplicaRequest)
		resp := req.ResponseKind().(*kmsg.StopReplicaResponse)
		resp.ErrorCode = clusterAuthFailed
		refuse := func(topic string, p int32) {
			rp := kmsg.NewStopReplicaResponsePartition()
			rp.Topic, rp.Partition, rp.ErrorCode = topic, p, clusterAuthFailed
			resp.Partitions = append(resp.Partitions, rp)
		}
		for _, t := range req.Topics {
			switch v := req.GetVersion(); {
			case v == 0:
				refuse(t.Topic, t.Partition)
			case v < 3:
				for _, p := range t.Partitions {
					refuse(t.Topic, p)
				}
			default:
				for _, ps := range t.PartitionStates {
					refuse(t.Topic, ps.Partition)
				}
			}
		}
		return resp
	}},
	6: {acl.OpClusterAction, func(r kmsg.Request) kmsg.Response {
		resp := r.ResponseKind().(*kmsg.UpdateMetadataResponse)
		resp.ErrorCode = clusterAuthFailed
		return resp
	}},
	7: {acl.OpClusterAction, func(r kmsg.Request) kmsg.Response {
		resp := r.ResponseKind().(*kmsg.ControlledShutdownResponse)
		resp.ErrorCode = clusterAuthFailed
		return resp
	}},
	27: markerGate(),
	34: {acl.OpAlter, func(r kmsg.Request) kmsg.Response {
		req := r.(*kmsg.AlterReplicaLogDirsRequest)
		resp := req.ResponseKind().(*kmsg.AlterReplicaLogDirsResponse)
		for _, d := range req.Dirs {
			for _, t := range d.Topics {
				rt := kmsg.NewAlterReplicaLogDirsResponseTopic()
				rt.Topic = t.Topic
				for _, p := range t.Partitions {
					rp := kmsg.NewAlterReplicaLogDirsResponseTopicPartition()
					rp.Partition, rp.ErrorCode = p, clusterAuthFailed
					rt.Partitions = append(rt.Partitions, rp)
				}
				resp.Topics = append(resp.Topics, rt)
			}
		}
		return resp
	}},
	// DescribeLogDirs: Kafka answers an unauthorized client with no directory
	// and, from v3 (which has the field), CLUSTER_AUTHORIZATION_FAILED.
	35: {acl.OpDescribe, func(r kmsg.Request) kmsg.Response {
		resp := r.ResponseKind().(*kmsg.DescribeLogDirsResponse)
		if r.GetVersion() >= 3 {
			resp.ErrorCode = clusterAuthFailed
		}
		return resp
	}},
	43: {acl.OpAlter, func(r kmsg.Request) kmsg.Response {
		req := r.(*kmsg.ElectLeadersRequest)
		resp := req.ResponseKind().(*kmsg.ElectLeadersResponse)
		resp.ErrorCode = clusterAuthFailed
		for _, t := range req.Topics {
			rt := kmsg.NewElectLeadersResponseTopic()
			rt.Topic = t.Topic
			for _, p := range t.Partitions {
				rp := kmsg.NewElectLeadersResponseTopicPartition()
				rp.Partition, rp.ErrorCode = p, clusterAuthFailed
				rt.Partitions = append(rt.Partitions, rp)
			}
			resp.Topics = append(resp.Topics, rt)
		}
		return resp
	}},
	// AlterPartitionReassignments: the top level and each partition.
	45: {acl.OpAlter, func(r kmsg.Request) kmsg.Response {
		req := r.(*kmsg.AlterPartitionAssignmentsRequest)
		resp := req.ResponseKind().(*kmsg.AlterPartitionAssignmentsResponse)
		resp.ErrorCode = clusterAuthFailed
		for _, t := range req.Topics {
			rt := kmsg.NewAlterPartitionAssignmentsResponseTopic()
			rt.Topic = t.Topic
			for _, p := range t.Partitions {
				rp := kmsg.NewAlterPartitionAssignmentsResponseTopicPartition()
				rp.Partition, rp.ErrorCode = p.Partition, clusterAuthFailed
				rt.Partitions = append(rt.Partitions, rp)
			}
			resp.Topics = append(resp.Topics, rt)
		}
		return resp
	}},
	46: {acl.OpDescribe, func(r kmsg.Request) kmsg.Response {
		resp := r.ResponseKind().(*kmsg.ListPartitionReassignmentsResponse)
		resp.ErrorCode = clusterAuthFailed
		return resp
	}},
	48: {acl.OpDescribeConfigs, func(r kmsg.Request) kmsg.Response {
		resp := r.ResponseKind().(*kmsg.DescribeClientQuotasResponse)
		resp.ErrorCode = clusterAuthFailed
		return resp
	}},
	49: {acl.OpAlterConfigs, func(r kmsg.Request) kmsg.Response {
		req := r.(*kmsg.AlterClientQuotasRequest)
		resp := req.ResponseKind().(*kmsg.AlterClientQuotasResponse)
		for _, e := range req.Entries {
			re := kmsg.NewAlterClientQuotasResponseEntry()
			re.ErrorCode = clusterAuthFailed
			for _, en := range e.Entity {
				ree := kmsg.NewAlterClientQuotasResponseEntryEntity()
				ree.Type, ree.Name = en.Type, en.Name
				re.Entity = append(re.Entity, ree)
			}
			resp.Entries = append(resp.Entries, re)
		}
		return resp
	}},
	50: {acl.OpDescribe, func(r kmsg.Request) kmsg.Response {
		resp := r.ResponseKind().(*kmsg.DescribeUserSCRAMCredentialsResponse)
		resp.ErrorCode = clusterAuthFailed
		return resp
	}},
	51: {acl.OpAlter, func(r kmsg.Request) kmsg.Response {
		req := r.(*kmsg.AlterUserSCRAMCredentialsRequest)
		resp := req.ResponseKind().(*kmsg.AlterUserSCRAMCredentialsResponse)
		seen := map[string]bool{}
		add := func(user string) {
			if seen[user] {
				return
			}
			seen[user] = true
			res := kmsg.NewAlterUserSCRAMCredentialsResponseResult()
			res.User, res.ErrorCode = user, clusterAuthFailed
			resp.Results = append(resp.Results, res)
		}
		for _, d := range req.Deletions {
			add(d.Name)
		}
		for _, u := range req.Upsertions {
			add(u.Name)
		}
		return resp
	}},
}

// gate applies the API's cluster gate; false means it answered the refusal.
func (b *Broker) gate(rc *reqCtx, req kmsg.Request, respond func(protocol.Response)) bool {
	if b.authz == nil {
		return true
	}
	g, ok := clusterGates[rc.header.Key]
	if !ok || rc.allowedCluster(b, g.op) {
		return true
	}
	respond(protocol.Response{Msg: g.refuse(req)})
	return false
}

// configAuthorized authorizes op (DESCRIBE_CONFIGS or ALTER_CONFIGS) on a
// config resource, as KafkaApis: a topic's on the topic, a broker's or broker
// logger's on the cluster.
func configAuthorized(b *Broker, rc *reqCtx, rt kmsg.ConfigResourceType, name string, op acl.Operation) error {
	switch rt {
	case resourceTopic:
		if !rc.allowed(b, op, acl.ResourceTopic, name) {
			return fmt.Errorf("%w: %s on topic %s is required", kerr.TopicAuthorizationFailed, op, name)
		}
	case resourceBroker, kmsg.ConfigResourceTypeBrokerLogger:
		if !rc.allowedCluster(b, op) {
			return fmt.Errorf("%w: %s on the cluster is required", kerr.ClusterAuthorizationFailed, op)
		}
	}
	return nil
}
