package broker_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/sasl/plain"

	"github.com/ktoolhq/ktool/broker/brokertest"
)

// aclCluster is an authorizing cluster on one SASL_PLAINTEXT listener: PLAIN
// users admin (a super user), alice, bob and broker (the inter-broker login,
// a super user through it without being listed).
type aclCluster struct {
	*brokertest.Cluster
	t testing.TB
}

func newACLCluster(t testing.TB, n int, extra map[string]string, opts ...brokertest.Option) *aclCluster {
	t.Helper()
	props := map[string]string{
		"listeners":                            "SASL_PLAINTEXT://127.0.0.1:0",
		"inter.broker.listener.name":           "SASL_PLAINTEXT",
		"sasl.enabled.mechanisms":              "PLAIN",
		"sasl.mechanism.inter.broker.protocol": "PLAIN",
		"sasl.jaas.config": `org.apache.kafka.common.security.plain.PlainLoginModule required username="broker" password="broker-secret" ` +
			`user_broker="broker-secret" user_admin="admin-secret" user_alice="alice-secret" user_bob="bob-secret";`,
		"authorizer.class.name": "kafka.security.authorizer.AclAuthorizer",
		"super.users":           "User:admin",
	}
	for k, v := range extra {
		props[k] = v
	}
	return &aclCluster{brokertest.NewCluster(t, n, append(opts, brokertest.WithProps(props))...), t}
}

// as is a client of one broker (or all) authenticated as user.
func (c *aclCluster) as(user string, opts ...kgo.Opt) *kgo.Client {
	c.t.Helper()
	return c.on(c.Addrs(), user, opts...)
}

func (c *aclCluster) on(addrs []string, user string, opts ...kgo.Opt) *kgo.Client {
	c.t.Helper()
	o := append([]kgo.Opt{kgo.SeedBrokers(addrs...), kgo.SASL(plain.Auth{User: user, Pass: user + "-secret"}.AsMechanism()),
		kgo.RetryTimeout(3 * time.Second), kgo.RequestRetries(2)}, opts...)
	cl, err := kgo.NewClient(o...)
	if err != nil {
		c.t.Fatal(err)
	}
	c.t.Cleanup(cl.Close)
	return cl
}

func (c *aclCluster) allow(ctx context.Context, b *kadm.ACLBuilder) {
	c.t.Helper()
	res, err := kadm.NewClient(c.as("admin")).CreateACLs(ctx, b)
	if err != nil {
		c.t.Fatal(err)
	}
	for _, r := range res {
		if r.Err != nil {
			c.t.Fatalf("CreateACLs: %v (%s)", r.Err, r.ErrMessage)
		}
	}
}

func produceErr(ctx context.Context, cl *kgo.Client, topic string) error {
	return cl.ProduceSync(ctx, &kgo.Record{Topic: topic, Value: []byte("v")}).FirstErr()
}

func TestAuthorizerProduceFetchPrefixedLiteralDeny(t *testing.T) {
	c := newACLCluster(t, 1, nil)
	ctx := context.Background()
	admin := kadm.NewClient(c.as("admin"))
	for _, topic := range []string{"orders-eu", "orders-us", "payments"} {
		if _, err := admin.CreateTopic(ctx, 1, 1, nil, topic); err != nil {
			t.Fatal(err)
		}
	}
	// Nobody but the super user may do anything yet.
	alice := c.as("alice", kgo.DisableIdempotentWrite())
	if err := produceErr(ctx, alice, "orders-eu"); !errors.Is(err, kerr.TopicAuthorizationFailed) {
		t.Fatalf("produce without ACL: %v, want TOPIC_AUTHORIZATION_FAILED", err)
	}
	// alice may write orders-* (prefixed) and bob read payments (literal).
	c.allow(ctx, kadm.NewACLs().Allow("User:alice").Topics("orders-").ResourcePatternType(kadm.ACLPatternPrefixed).Operations(kadm.OpWrite))
	c.allow(ctx, kadm.NewACLs().Allow("User:bob").Topics("payments").ResourcePatternType(kadm.ACLPatternLiteral).Operations(kadm.OpRead))
	if err := produceErr(ctx, alice, "orders-eu"); err != nil {
		t.Fatalf("produce to orders-eu: %v", err)
	}
	if err := produceErr(ctx, alice, "payments"); !errors.Is(err, kerr.TopicAuthorizationFailed) {
		t.Fatalf("produce to payments: %v, want TOPIC_AUTHORIZATION_FAILED", err)
	}
	// An idempotent producer needs nothing more than WRITE on its topic (KIP-679).
	idem := c.as("alice")
	if err := produceErr(ctx, idem, "orders-us"); err != nil {
		t.Fatalf("idempotent produce to orders-us: %v", err)
	}
	// DENY wins over the prefixed ALLOW.
	c.allow(ctx, kadm.NewACLs().Deny("User:alice").Topics("orders-us").ResourcePatternType(kadm.ACLPatternLiteral).Operations(kadm.OpWrite))
	if err := produceErr(ctx, alice, "orders-us"); !errors.Is(err, kerr.TopicAuthorizationFailed) {
		t.Fatalf("produce to denied orders-us: %v, want TOPIC_AUTHORIZATION_FAILED", err)
	}
	// Nothing was appended by the refused produces.
	offs, err := admin.ListEndOffsets(ctx, "orders-us", "payments")
	if err != nil {
		t.Fatal(err)
	}
	if o, _ := offs.Lookup("orders-us", 0); o.Offset != 1 {
		t.Fatalf("orders-us end offset %d, want 1", o.Offset)
	}
	if o, _ := offs.Lookup("payments", 0); o.Offset != 0 {
		t.Fatalf("payments end offset %d, want 0", o.Offset)
	}

	// Fetch: bob reads payments, not orders-eu.
	bob := c.as("bob")
	req := kmsg.NewPtrFetchRequest()
	req.ReplicaID, req.MaxBytes, req.MaxWaitMillis = -1, 1<<20, 10
	for _, topic := range []string{"payments", "orders-eu"} {
		rt := kmsg.NewFetchRequestTopic()
		rt.Topic = topic
		rp := kmsg.NewFetchRequestTopicPartition()
		rp.PartitionMaxBytes = 1 << 20
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)
	}
	resp, err := req.RequestWith(ctx, bob)
	if err != nil {
		t.Fatal(err)
	}
	codes := map[string]int16{}
	for _, rt := range resp.Topics {
		codes[rt.Topic] = rt.Partitions[0].ErrorCode
	}
	if codes["payments"] != 0 || codes["orders-eu"] != kerr.TopicAuthorizationFailed.Code {
		t.Fatalf("fetch codes %v", codes)
	}

	// Metadata: bob sees only payments in a listing; a named topic is refused.
	md, err := kadm.NewClient(bob).Metadata(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if names := md.Topics.Names(); len(names) != 1 || names[0] != "payments" {
		t.Fatalf("bob lists %v, want [payments]", names)
	}
	md, err = kadm.NewClient(bob).Metadata(ctx, "orders-eu")
	if err == nil {
		err = md.Topics["orders-eu"].Err
	}
	if !errors.Is(err, kerr.TopicAuthorizationFailed) {
		t.Fatalf("bob describes orders-eu: %v", err)
	}
}

func TestAuthorizerGroupsAndAdmin(t *testing.T) {
	c := newACLCluster(t, 1, nil)
	ctx := context.Background()
	admin := kadm.NewClient(c.as("admin"))
	if _, err := admin.CreateTopic(ctx, 1, 1, nil, "orders-eu"); err != nil {
		t.Fatal(err)
	}
	if err := produceErr(ctx, c.as("admin"), "orders-eu"); err != nil {
		t.Fatal(err)
	}
	c.allow(ctx, kadm.NewACLs().Allow("User:bob").Topics("orders-").ResourcePatternType(kadm.ACLPatternPrefixed).Operations(kadm.OpRead))

	// bob may read the topic but not join group g: GROUP_AUTHORIZATION_FAILED, no offsets.
	consume := func() error {
		cl := c.as("bob", kgo.ConsumerGroup("g"), kgo.ConsumeTopics("orders-eu"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
		cctx, cancel := context.WithTimeout(ctx, 15*time.Second)
		defer cancel()
		for {
			fs := cl.PollFetches(cctx)
			if err := cctx.Err(); err != nil {
				return err
			}
			var ferr error
			fs.EachError(func(_ string, _ int32, err error) { ferr = err })
			if ferr != nil {
				return ferr
			}
			if fs.NumRecords() > 0 {
				return cl.CommitUncommittedOffsets(cctx)
			}
		}
	}
	if err := consume(); !errors.Is(err, kerr.GroupAuthorizationFailed) {
		t.Fatalf("consume without group ACL: %v, want GROUP_AUTHORIZATION_FAILED", err)
	}
	c.allow(ctx, kadm.NewACLs().Allow("User:bob").Groups("g").ResourcePatternType(kadm.ACLPatternLiteral).Operations(kadm.OpRead))
	if err := consume(); err != nil {
		t.Fatalf("consume with ACLs: %v", err)
	}
	offs, err := admin.FetchOffsets(ctx, "g")
	if err != nil {
		t.Fatal(err)
	}
	if o, ok := offs.Lookup("orders-eu", 0); !ok || o.At != 1 {
		t.Fatalf("committed %+v", o)
	}

	// Admin APIs as alice, who has no ACL: refused, nothing changed.
	alice := kadm.NewClient(c.as("alice"))
	cr, err := alice.CreateTopic(ctx, 1, 1, nil, "alice-topic")
	if !errors.Is(err, kerr.TopicAuthorizationFailed) && !errors.Is(cr.Err, kerr.TopicAuthorizationFailed) {
		t.Fatalf("create topic: %v %v", err, cr.Err)
	}
	dr, err := alice.DeleteTopics(ctx, "orders-eu")
	if err != nil {
		t.Fatal(err)
	}
	if !errors.Is(dr["orders-eu"].Err, kerr.TopicAuthorizationFailed) {
		t.Fatalf("delete topic: %v", dr["orders-eu"].Err)
	}
	ac, err := alice.AlterTopicConfigs(ctx, []kadm.AlterConfig{{Name: "retention.ms", Value: kadm.StringPtr("1000")}}, "orders-eu")
	if err != nil {
		t.Fatal(err)
	}
	if !errors.Is(ac[0].Err, kerr.TopicAuthorizationFailed) {
		t.Fatalf("alter configs: %v", ac[0].Err)
	}
	bc, err := alice.DescribeBrokerConfigs(ctx)
	if err == nil {
		err = bc[0].Err
	}
	if !errors.Is(err, kerr.ClusterAuthorizationFailed) {
		t.Fatalf("describe broker configs: %v", err)
	}
	da, err := alice.DescribeACLs(ctx, kadm.NewACLs().AnyResource().Allow().AllowHosts().Deny().DenyHosts().Operations(kadm.OpAny).ResourcePatternType(kadm.ACLPatternAny))
	if err == nil && len(da) > 0 {
		err = da[0].Err
	}
	if !errors.Is(err, kerr.ClusterAuthorizationFailed) {
		t.Fatalf("describe ACLs: %v", err)
	}
	dg, err := alice.DeleteGroups(ctx, "g")
	if err == nil {
		err = dg["g"].Err
	}
	if !errors.Is(err, kerr.GroupAuthorizationFailed) {
		t.Fatalf("delete group: %v", err)
	}
	// bob's authorized operations on g are READ and its implied DESCRIBE.
	dreq := kmsg.NewPtrDescribeGroupsRequest()
	dreq.Groups, dreq.IncludeAuthorizedOperations = []string{"g"}, true
	dresp, err := dreq.RequestWith(ctx, c.as("bob"))
	if err != nil {
		t.Fatal(err)
	}
	if ops := dresp.Groups[0].AuthorizedOperations; ops != 1<<3|1<<8 {
		t.Fatalf("bob's authorized operations on g: %b", ops)
	}
	// On the prefixed topic: READ and DESCRIBE; on the cluster: nothing for
	// bob, everything for admin, a super user.
	mreq := kmsg.NewPtrMetadataRequest()
	mt := kmsg.NewMetadataRequestTopic()
	mt.Topic = kmsg.StringPtr("orders-eu")
	mreq.Topics = append(mreq.Topics, mt)
	mreq.IncludeTopicAuthorizedOperations = true
	mresp, err := mreq.RequestWith(ctx, c.as("bob"))
	if err != nil {
		t.Fatal(err)
	}
	if ops := mresp.Topics[0].AuthorizedOperations; ops != 1<<3|1<<8 {
		t.Fatalf("bob's authorized operations on orders-eu: %b", ops)
	}
	for user, want := range map[string]int32{"bob": 0, "admin": 1<<5 | 1<<7 | 1<<8 | 1<<9 | 1<<10 | 1<<11 | 1<<12} {
		creq := kmsg.NewPtrDescribeClusterRequest()
		creq.IncludeClusterAuthorizedOperations = true
		cresp, err := creq.RequestWith(ctx, c.as(user))
		if err != nil {
			t.Fatal(err)
		}
		if ops := cresp.ClusterAuthorizedOperations; ops != want {
			t.Fatalf("%s's authorized operations on the cluster: %b, want %b", user, ops, want)
		}
	}
	if lg, err := alice.ListGroups(ctx); err != nil || len(lg) != 0 {
		t.Fatalf("alice lists groups %v %v", lg, err)
	}
	// Still there for admin.
	md, err := admin.Metadata(ctx, "orders-eu")
	if err != nil || md.Topics["orders-eu"].Err != nil {
		t.Fatalf("orders-eu after refused deletes: %v %v", err, md.Topics["orders-eu"].Err)
	}
	if lg, err := admin.ListGroups(ctx); err != nil || len(lg) != 1 {
		t.Fatalf("admin lists groups %v %v", lg, err)
	}
	// An idempotent producer without WRITE anywhere is refused at InitProducerId.
	if err := produceErr(ctx, c.as("alice"), "orders-eu"); !errors.Is(err, kerr.ClusterAuthorizationFailed) && !errors.Is(err, kerr.TopicAuthorizationFailed) {
		t.Fatalf("idempotent produce without ACL: %v", err)
	}
}

// TestAuthorizerInterBrokerAPIs: controller and replication requests sent by a
// client (not a broker) are refused with CLUSTER_AUTHORIZATION_FAILED.
func TestAuthorizerInterBrokerAPIs(t *testing.T) {
	c := newACLCluster(t, 1, nil)
	ctx := context.Background()
	if _, err := kadm.NewClient(c.as("admin")).CreateTopic(ctx, 1, 1, nil, "t"); err != nil {
		t.Fatal(err)
	}
	// Even ALL on every topic and group does not make bob a broker.
	c.allow(ctx, kadm.NewACLs().Allow("User:bob").Topics("*").Groups("*").ResourcePatternType(kadm.ACLPatternLiteral).Operations(kadm.OpAll))
	bob := c.as("bob")
	reqs := []kmsg.Request{kmsg.NewPtrLeaderAndISRRequest(), kmsg.NewPtrStopReplicaRequest(), kmsg.NewPtrUpdateMetadataRequest(), kmsg.NewPtrControlledShutdownRequest()}
	for _, r := range reqs {
		resp, err := bob.Request(ctx, r)
		if err != nil {
			t.Fatalf("%s: %v", kmsg.NameForKey(r.Key()), err)
		}
		if got := respCode(resp); got != kerr.ClusterAuthorizationFailed.Code {
			t.Fatalf("%s answered %v, want CLUSTER_AUTHORIZATION_FAILED", kmsg.NameForKey(r.Key()), kerr.ErrorForCode(got))
		}
	}
	// A follower fetch from a client.
	f := kmsg.NewPtrFetchRequest()
	f.ReplicaID, f.MaxBytes = 0, 1<<20
	ft := kmsg.NewFetchRequestTopic()
	ft.Topic = "t"
	fp := kmsg.NewFetchRequestTopicPartition()
	fp.PartitionMaxBytes = 1 << 20
	ft.Partitions = append(ft.Partitions, fp)
	f.Topics = append(f.Topics, ft)
	fr, err := f.RequestWith(ctx, bob)
	if err != nil {
		t.Fatal(err)
	}
	if code := fr.Topics[0].Partitions[0].ErrorCode; code != kerr.TopicAuthorizationFailed.Code {
		t.Fatalf("follower fetch from a client: %v", kerr.ErrorForCode(code))
	}
	// Transaction markers come only from brokers.
	wm := kmsg.NewPtrWriteTxnMarkersRequest()
	wm.Markers = []kmsg.WriteTxnMarkersRequestMarker{{ProducerID: 1, Committed: true, Topics: []kmsg.WriteTxnMarkersRequestMarkerTopic{{Topic: "t", Partitions: []int32{0}}}}}
	wr, err := wm.RequestWith(ctx, bob)
	if err != nil {
		t.Fatal(err)
	}
	if code := wr.Markers[0].Topics[0].Partitions[0].ErrorCode; code != kerr.ClusterAuthorizationFailed.Code {
		t.Fatalf("WriteTxnMarkers from a client: %v", kerr.ErrorForCode(code))
	}
	// A transactional offset commit needs WRITE on the transactional id.
	tc := kmsg.NewPtrTxnOffsetCommitRequest()
	tc.TransactionalID, tc.Group, tc.ProducerID, tc.Generation = "tx", "g", 1, -1
	tc.Topics = []kmsg.TxnOffsetCommitRequestTopic{{Topic: "t", Partitions: []kmsg.TxnOffsetCommitRequestTopicPartition{{Partition: 0, Offset: 1}}}}
	tr, err := tc.RequestWith(ctx, bob)
	if err != nil {
		t.Fatal(err)
	}
	if code := tr.Topics[0].Partitions[0].ErrorCode; code != kerr.TransactionalIDAuthorizationFailed.Code {
		t.Fatalf("TxnOffsetCommit without WRITE on the transactional id: %v", kerr.ErrorForCode(code))
	}
	// Elections and reassignments need ALTER on the cluster.
	el := kmsg.NewPtrElectLeadersRequest()
	er, err := el.RequestWith(ctx, bob)
	if err != nil {
		t.Fatal(err)
	}
	if er.ErrorCode != kerr.ClusterAuthorizationFailed.Code {
		t.Fatalf("ElectLeaders: %v", kerr.ErrorForCode(er.ErrorCode))
	}
}

func respCode(r kmsg.Response) int16 {
	switch r := r.(type) {
	case *kmsg.LeaderAndISRResponse:
		return r.ErrorCode
	case *kmsg.StopReplicaResponse:
		return r.ErrorCode
	case *kmsg.UpdateMetadataResponse:
		return r.ErrorCode
	case *kmsg.ControlledShutdownResponse:
		return r.ErrorCode
	}
	return -1
}

// TestAuthorizerPropagation: an ACL created through one broker applies on
// another within a second, and so does its deletion.
func TestAuthorizerPropagation(t *testing.T) { testPropagation(t, brokertest.Embedded) }

// TestAuthorizerPropagationZooKeeper: the same through a real ZooKeeper.
func TestAuthorizerPropagationZooKeeper(t *testing.T) { testPropagation(t, brokertest.ZooKeeper) }

func testPropagation(t *testing.T, store brokertest.Store) {
	c := newACLCluster(t, 2, nil, brokertest.WithStore(store))
	ctx := context.Background()
	b0, b1 := c.Broker(0).Addr(), c.Broker(1).Addr()
	admin0 := kadm.NewClient(c.on([]string{b0}, "admin"))
	if _, err := admin0.CreateTopic(ctx, 1, 2, nil, "t"); err != nil {
		t.Fatal(err)
	}
	// Ask broker 1 directly, whatever it leads.
	alice1 := c.on([]string{b1}, "alice")
	describeOn1 := func() int16 {
		req := kmsg.NewPtrListOffsetsRequest()
		req.ReplicaID = -1
		rt := kmsg.NewListOffsetsRequestTopic()
		rt.Topic = "t"
		rp := kmsg.NewListOffsetsRequestTopicPartition()
		rp.Timestamp = -1
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)
		resp, err := req.RequestWith(ctx, alice1.Broker(1))
		if err != nil {
			t.Fatal(err)
		}
		return resp.Topics[0].Partitions[0].ErrorCode
	}
	if code := describeOn1(); code != kerr.TopicAuthorizationFailed.Code {
		t.Fatalf("before the ACL: %v", kerr.ErrorForCode(code))
	}
	start := time.Now()
	res, err := admin0.CreateACLs(ctx, kadm.NewACLs().Allow("User:alice").Topics("t").ResourcePatternType(kadm.ACLPatternLiteral).Operations(kadm.OpDescribe))
	if err != nil || res[0].Err != nil {
		t.Fatalf("CreateACLs: %v %v", err, res)
	}
	waitCode := func(want int16) time.Duration {
		deadline := time.Now().Add(10 * time.Second)
		for {
			code := describeOn1()
			if code != kerr.TopicAuthorizationFailed.Code && want == 0 || code == want {
				return time.Since(start)
			}
			if time.Now().After(deadline) {
				t.Fatalf("broker 1 still answers %v", kerr.ErrorForCode(code))
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	took := waitCode(0)
	// Reported, not asserted: a loaded machine must not fail the test; the
	// deadline above bounds it.
	t.Logf("ACL applied on the other broker after %v", took)
	start = time.Now()
	dres, err := admin0.DeleteACLs(ctx, kadm.NewACLs().Allow("User:alice").AllowHosts().Topics("t").ResourcePatternType(kadm.ACLPatternLiteral).Operations(kadm.OpDescribe))
	if err != nil || len(dres) != 1 || dres[0].Err != nil {
		t.Fatalf("DeleteACLs: %v %+v", err, dres)
	}
	waitCode(kerr.TopicAuthorizationFailed.Code)
}

// TestAclAPIs: Describe and Delete filters, as Kafka's.
func TestAclAPIs(t *testing.T) {
	c := newACLCluster(t, 1, nil)
	ctx := context.Background()
	admin := kadm.NewClient(c.as("admin"))
	c.allow(ctx, kadm.NewACLs().Allow("User:alice", "User:bob").Topics("orders-").ResourcePatternType(kadm.ACLPatternPrefixed).Operations(kadm.OpRead, kadm.OpWrite))
	c.allow(ctx, kadm.NewACLs().Allow("User:alice").Topics("orders-eu", "*").Groups("g").ResourcePatternType(kadm.ACLPatternLiteral).Operations(kadm.OpRead))
	count := func(b *kadm.ACLBuilder) int {
		t.Helper()
		res, err := admin.DescribeACLs(ctx, b)
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		for _, r := range res {
			if r.Err != nil {
				t.Fatal(r.Err)
			}
			n += len(r.Described)
		}
		return n
	}
	any := func() *kadm.ACLBuilder {
		return kadm.NewACLs().Allow().AllowHosts().Deny().DenyHosts().Operations(kadm.OpAny).ResourcePatternType(kadm.ACLPatternAny)
	}
	if n := count(any().AnyResource()); n != 7 {
		t.Fatalf("all: %d, want 7", n)
	}
	if n := count(any().Topics("orders-eu").ResourcePatternType(kadm.ACLPatternMatch)); n != 6 {
		t.Fatalf("MATCH orders-eu: %d, want 6 (4 prefixed, literal, *)", n)
	}
	if n := count(any().Topics("orders-eu").ResourcePatternType(kadm.ACLPatternLiteral)); n != 1 {
		t.Fatalf("LITERAL orders-eu: %d, want 1", n)
	}
	if n := count(kadm.NewACLs().AnyResource().Allow("User:bob").AllowHosts().Operations(kadm.OpAny).ResourcePatternType(kadm.ACLPatternAny)); n != 2 {
		t.Fatalf("bob: %d, want 2", n)
	}
	del, err := admin.DeleteACLs(ctx, kadm.NewACLs().Allow("User:alice").AllowHosts().Topics("orders-").ResourcePatternType(kadm.ACLPatternPrefixed).Operations(kadm.OpWrite))
	if err != nil {
		t.Fatal(err)
	}
	if len(del) != 1 || len(del[0].Deleted) != 1 {
		t.Fatalf("deleted %+v", del)
	}
	if n := count(any().AnyResource()); n != 6 {
		t.Fatalf("after delete: %d, want 6", n)
	}
	// Invalid bindings are refused one by one.
	req := kmsg.NewPtrCreateACLsRequest()
	for _, name := range []string{"good", "a/b"} {
		cr := kmsg.NewCreateACLsRequestCreation()
		cr.ResourceType, cr.ResourceName, cr.ResourcePatternType = kmsg.ACLResourceTypeTopic, name, kmsg.ACLResourcePatternTypeLiteral
		cr.Principal, cr.Host, cr.Operation, cr.PermissionType = "User:carol", "*", kmsg.ACLOperationRead, kmsg.ACLPermissionTypeAllow
		req.Creations = append(req.Creations, cr)
	}
	bad := kmsg.NewCreateACLsRequestCreation()
	bad.ResourceType, bad.ResourceName, bad.ResourcePatternType = kmsg.ACLResourceTypeTopic, "x", kmsg.ACLResourcePatternTypeMatch
	bad.Principal, bad.Host, bad.Operation, bad.PermissionType = "carol", "*", kmsg.ACLOperationRead, kmsg.ACLPermissionTypeAllow
	req.Creations = append(req.Creations, bad)
	resp, err := req.RequestWith(ctx, c.as("admin"))
	if err != nil {
		t.Fatal(err)
	}
	var codes []string
	for _, r := range resp.Results {
		codes = append(codes, fmt.Sprint(r.ErrorCode))
	}
	if strings.Join(codes, ",") != fmt.Sprintf("0,%d,%d", kerr.InvalidRequest.Code, kerr.InvalidRequest.Code) {
		t.Fatalf("create codes %v", codes)
	}
}

// TestAuthorizerQuotaAPIs: client quotas need DESCRIBE_CONFIGS / ALTER_CONFIGS
// on the cluster; a refused alteration changes nothing.
func TestAuthorizerQuotaAPIs(t *testing.T) {
	c := newACLCluster(t, 1, nil)
	ctx := context.Background()
	alice := kadm.NewClient(c.as("alice"))
	rate := kadm.AlterClientQuotaOp{Key: "producer_byte_rate", Value: 1024}
	entry := kadm.AlterClientQuotaEntry{Entity: kadm.ClientQuotaEntity{{Type: "user", Name: kadm.StringPtr("alice")}}, Ops: []kadm.AlterClientQuotaOp{rate}}
	res, err := alice.AlterClientQuotas(ctx, []kadm.AlterClientQuotaEntry{entry})
	if err == nil && len(res) > 0 {
		err = res[0].Err
	}
	if !errors.Is(err, kerr.ClusterAuthorizationFailed) {
		t.Fatalf("alter quotas: %v", err)
	}
	if _, err := alice.DescribeClientQuotas(ctx, false, nil); !errors.Is(err, kerr.ClusterAuthorizationFailed) {
		t.Fatalf("describe quotas: %v", err)
	}
	got, err := kadm.NewClient(c.as("admin")).DescribeClientQuotas(ctx, false, nil)
	if err != nil || len(got) != 0 {
		t.Fatalf("quotas after the refused change: %v %v", got, err)
	}
}
