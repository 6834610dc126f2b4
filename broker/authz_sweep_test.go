package broker_test

import (
	"bufio"
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"net"
	"slices"
	"sort"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/kversion"

	"github.com/ktoolhq/ktool/broker/brokertest"
	"github.com/ktoolhq/ktool/internal/batch"
)

// The sweep: every API key the broker registers (as its ApiVersions lists
// them, which is the registry) is sent, well formed, by alice, a principal
// with no ACL at all (not a super user; allow.everyone.if.no.acl.found is
// false), and must be answered with Kafka's refusal for that key (the error
// code and the fields KafkaApis sets), leaving the state as it was. A key
// without a row fails the test, so a new API cannot skip authorization
// unnoticed. The keys that need no ACL (ApiVersions, the SASL exchange,
// DescribeCluster) are answered normally, and the listings (Metadata,
// ListGroups, ListTransactions) come back filtered to nothing.

// sweepEnv is the cluster, alice's client (to the one broker) and what the
// rows check the state against.
type sweepEnv struct {
	ctx     context.Context
	c       *aclCluster
	alice   *kgo.Client
	alice28 *kgo.Client // alice with Kafka 2.8's versions
	admin   *kadm.Client
	adminCl *kgo.Client
	topicID [16]byte
	logDir  string
}

const (
	sweepTopic, sweepGroup, sweepTxn = "t", "g", "tx"
	sweepOpenTxn, sweepHidden        = "tx-open", "t-hidden"
)

// ask sends req as alice to broker 0, whatever the key.
func (e *sweepEnv) ask(t *testing.T, req kmsg.Request) kmsg.Response {
	t.Helper()
	return e.askWith(t, e.alice, req)
}

func (e *sweepEnv) askWith(t *testing.T, cl *kgo.Client, req kmsg.Request) kmsg.Response {
	t.Helper()
	resp, err := cl.Broker(0).Request(e.ctx, req)
	if err != nil {
		t.Fatalf("%s: %v", kmsg.NameForKey(req.Key()), err)
	}
	return resp
}

func wantCode(t *testing.T, what string, got int16, want error) {
	t.Helper()
	var w int16
	if want != nil {
		w = want.(*kerr.Error).Code
	}
	if got != w {
		t.Errorf("%s: %v, want %v", what, kerr.ErrorForCode(got), want)
	}
}

var (
	errTopicAuth   = kerr.TopicAuthorizationFailed
	errGroupAuth   = kerr.GroupAuthorizationFailed
	errClusterAuth = kerr.ClusterAuthorizationFailed
	errTxnAuth     = kerr.TransactionalIDAuthorizationFailed
)

// plainBatch is one record of a producer without idempotence.
func plainBatch() []byte {
	now := time.Now().UnixMilli()
	return batch.Encode(batch.Header{FirstTimestamp: now, MaxTimestamp: now, ProducerID: -1, ProducerEpoch: -1, BaseSequence: -1, NumRecords: 1},
		batch.AppendRecord(nil, 0, 0, nil, []byte("v"), nil))
}

func (e *sweepEnv) offsets(t *testing.T) (start, end int64) {
	t.Helper()
	s, err := e.admin.ListStartOffsets(e.ctx, sweepTopic)
	if err != nil {
		t.Fatal(err)
	}
	en, err := e.admin.ListEndOffsets(e.ctx, sweepTopic)
	if err != nil {
		t.Fatal(err)
	}
	so, _ := s.Lookup(sweepTopic, 0)
	eo, _ := en.Lookup(sweepTopic, 0)
	return so.Offset, eo.Offset
}

func (e *sweepEnv) partition(t *testing.T) (partitions int, leader, epoch int32) {
	t.Helper()
	// Asked of the broker itself: the client's cached metadata would hide
	// a change for seconds.
	req := kmsg.NewPtrMetadataRequest()
	mt := kmsg.NewMetadataRequestTopic()
	mt.Topic = kmsg.StringPtr(sweepTopic)
	req.Topics = append(req.Topics, mt)
	resp := e.askWith(t, e.adminCl, req).(*kmsg.MetadataResponse)
	td := resp.Topics[0]
	p := td.Partitions[0]
	return len(td.Partitions), p.Leader, p.LeaderEpoch
}

func (e *sweepEnv) committed(t *testing.T) int64 {
	t.Helper()
	offs, err := e.admin.FetchOffsets(e.ctx, sweepGroup)
	if err != nil {
		t.Fatal(err)
	}
	o, ok := offs.Lookup(sweepTopic, 0)
	if !ok {
		return -1
	}
	return o.At
}

func (e *sweepEnv) retention(t *testing.T) string {
	t.Helper()
	rc, err := e.admin.DescribeTopicConfigs(e.ctx, sweepTopic)
	if err != nil {
		t.Fatal(err)
	}
	c, err := rc.On(sweepTopic, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, kv := range c.Configs {
		if kv.Key == "retention.ms" {
			return kv.MaybeValue()
		}
	}
	return ""
}

// state is what no refused request may change.
type sweepState struct {
	start, end       int64
	partitions       int
	leader, epoch    int32
	committed        int64
	retention        string
	throttleRate     string // a broker config the alterations name
	topics, acls, qs int
	reassignments    int
	scramUsers       int
	dirOf            string
}

func (e *sweepEnv) state(t *testing.T) sweepState {
	t.Helper()
	var s sweepState
	s.start, s.end = e.offsets(t)
	s.partitions, s.leader, s.epoch = e.partition(t)
	s.committed = e.committed(t)
	s.retention = e.retention(t)
	bc, err := e.admin.DescribeBrokerConfigs(e.ctx, 0)
	if err != nil {
		t.Fatal(err)
	}
	bcs, err := bc.On("0", nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, kv := range bcs.Configs {
		if kv.Key == "leader.replication.throttled.rate" {
			s.throttleRate = kv.MaybeValue()
		}
	}
	all := kmsg.NewPtrMetadataRequest()
	all.Topics = nil
	s.topics = len(e.askWith(t, e.adminCl, all).(*kmsg.MetadataResponse).Topics)
	acls, err := e.admin.DescribeACLs(e.ctx, kadm.NewACLs().AnyResource().Allow().AllowHosts().Deny().DenyHosts().Operations(kadm.OpAny).ResourcePatternType(kadm.ACLPatternAny))
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range acls {
		s.acls += len(r.Described)
	}
	qs, err := e.admin.DescribeClientQuotas(e.ctx, false, nil)
	if err != nil {
		t.Fatal(err)
	}
	s.qs = len(qs)
	ra, err := e.admin.ListPartitionReassignments(e.ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	s.reassignments = len(ra)
	users, err := e.admin.DescribeUserSCRAMs(e.ctx)
	if err != nil {
		t.Fatal(err)
	}
	s.scramUsers = len(users)
	dirs, err := e.admin.DescribeAllLogDirs(e.ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	dirs[0].EachPartition(func(p kadm.DescribedLogDirPartition) {
		if p.Topic == sweepTopic {
			s.dirOf += p.Dir + ";"
		}
	})
	return s
}

// TestAuthorizerSweepEveryAPI: every registered API key, sent by a principal
// with no ACL, is refused as Kafka refuses it and changes nothing; then the
// documented ACL allows the keys where granting it is cheap.
func TestAuthorizerSweepEveryAPI(t *testing.T) {
	c := newACLCluster(t, 1, map[string]string{"auto.create.topics.enable": "true"})
	ctx := context.Background()
	adminCl := c.as("admin")
	admin := kadm.NewClient(adminCl)
	if _, err := admin.CreateTopic(ctx, 1, 1, nil, sweepTopic); err != nil {
		t.Fatal(err)
	}
	for range 3 {
		if err := produceErr(ctx, adminCl, sweepTopic); err != nil {
			t.Fatal(err)
		}
	}
	var os kadm.Offsets
	os.Add(kadm.Offset{Topic: sweepTopic, Partition: 0, At: 1, LeaderEpoch: -1})
	if r, err := admin.CommitOffsets(ctx, sweepGroup, os); err != nil || r.Error() != nil {
		t.Fatalf("commit: %v %v", err, r.Error())
	}
	// A finished transaction, so ListTransactions has something to hide.
	txc := c.as("admin", kgo.TransactionalID(sweepTxn))
	if err := txc.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	if err := produceErr(ctx, txc, sweepTopic); err != nil {
		t.Fatal(err)
	}
	if err := txc.EndTransaction(ctx, kgo.TryCommit); err != nil {
		t.Fatal(err)
	}
	// And one left open on a topic of its own, whose name DescribeTransactions
	// must hide from a principal that may not DESCRIBE it.
	if _, err := admin.CreateTopic(ctx, 1, 1, nil, sweepHidden); err != nil {
		t.Fatal(err)
	}
	open := c.as("admin", kgo.TransactionalID(sweepOpenTxn))
	if err := open.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	if err := produceErr(ctx, open, sweepHidden); err != nil {
		t.Fatal(err)
	}
	md, err := admin.Metadata(ctx, sweepTopic)
	if err != nil {
		t.Fatal(err)
	}
	dirs, err := admin.DescribeAllLogDirs(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	e := &sweepEnv{ctx: ctx, c: c, admin: admin, adminCl: adminCl, topicID: md.Topics[sweepTopic].ID,
		alice: c.as("alice"), alice28: c.as("alice", kgo.MaxVersions(kversion.V2_8_0()))}
	dirs[0].EachPartition(func(p kadm.DescribedLogDirPartition) { e.logDir = p.Dir })
	// The commit marker is written after EndTransaction returns: wait for it
	// (3 records, the transaction's, its marker).
	brokertest.Eventually(t, 10*time.Second, func() error {
		if _, end := e.offsets(t); end != 5 {
			return fmt.Errorf("end offset %d, want 5", end)
		}
		return nil
	})

	av := e.ask(t, kmsg.NewPtrApiVersionsRequest()).(*kmsg.ApiVersionsResponse)
	var keys []int16
	for _, k := range av.ApiKeys {
		keys = append(keys, k.ApiKey)
	}
	sort.Slice(keys, func(i, j int) bool { return keys[i] < keys[j] })
	registered := map[int16]bool{}
	before := e.state(t)
	for _, key := range keys {
		registered[key] = true
		row, ok := sweepRows[key]
		if !ok {
			t.Errorf("key %d (%s) has no row in the sweep", key, kmsg.NameForKey(key))
			continue
		}
		t.Run(fmt.Sprintf("%02d_%s", key, kmsg.NameForKey(key)), func(t *testing.T) {
			row.refused(t, e)
			if after := e.state(t); after != before {
				t.Errorf("state changed:\n before %+v\n after  %+v", before, after)
				before = after // so that only this row fails for it
			}
		})
	}
	for key := range sweepRows {
		if !registered[key] {
			t.Errorf("the sweep has a row for key %d (%s), which the broker does not serve", key, kmsg.NameForKey(key))
		}
	}
	// With the documented ACL the same requests are served.
	for _, key := range keys {
		if row := sweepRows[key]; row.granted != nil {
			t.Run(fmt.Sprintf("granted_%02d_%s", key, kmsg.NameForKey(key)), func(t *testing.T) { row.granted(t, e) })
		}
	}
}

type sweepRow struct {
	refused func(t *testing.T, e *sweepEnv)
	// granted, when set, grants alice the ACL Kafka documents for the key
	// and checks the request is served.
	granted func(t *testing.T, e *sweepEnv)
}

func (e *sweepEnv) allowAlice(b *kadm.ACLBuilder) {
	e.c.allow(e.ctx, b.Allow("User:alice").ResourcePatternType(kadm.ACLPatternLiteral))
}

func produceReq() *kmsg.ProduceRequest {
	req := kmsg.NewPtrProduceRequest()
	req.Acks, req.TimeoutMillis = -1, 5000
	rt := kmsg.NewProduceRequestTopic()
	rt.Topic = sweepTopic
	rp := kmsg.NewProduceRequestTopicPartition()
	rp.Records = plainBatch()
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	return req
}

func listOffsetsReq() *kmsg.ListOffsetsRequest {
	req := kmsg.NewPtrListOffsetsRequest()
	req.ReplicaID = -1
	rt := kmsg.NewListOffsetsRequestTopic()
	rt.Topic = sweepTopic
	rp := kmsg.NewListOffsetsRequestTopicPartition()
	rp.Timestamp = -1
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	return req
}

func describeConfigsReq() *kmsg.DescribeConfigsRequest {
	req := kmsg.NewPtrDescribeConfigsRequest()
	for _, r := range []struct {
		typ  kmsg.ConfigResourceType
		name string
	}{{kmsg.ConfigResourceTypeTopic, sweepTopic}, {kmsg.ConfigResourceTypeBroker, "0"}, {kmsg.ConfigResourceTypeBrokerLogger, "0"}} {
		rr := kmsg.NewDescribeConfigsRequestResource()
		rr.ResourceType, rr.ResourceName = r.typ, r.name
		req.Resources = append(req.Resources, rr)
	}
	return req
}

func offsetCommitReq() *kmsg.OffsetCommitRequest {
	req := kmsg.NewPtrOffsetCommitRequest()
	req.Group, req.Generation = sweepGroup, -1
	rt := kmsg.NewOffsetCommitRequestTopic()
	rt.Topic = sweepTopic
	rp := kmsg.NewOffsetCommitRequestTopicPartition()
	rp.Offset, rp.LeaderEpoch = 2, -1
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	return req
}

func offsetFetchReq() *kmsg.OffsetFetchRequest {
	req := kmsg.NewPtrOffsetFetchRequest()
	g := kmsg.NewOffsetFetchRequestGroup()
	g.Group = sweepGroup
	gt := kmsg.NewOffsetFetchRequestGroupTopic()
	gt.Topic, gt.Partitions = sweepTopic, []int32{0}
	g.Topics = append(g.Topics, gt)
	req.Groups = append(req.Groups, g)
	req.Group = sweepGroup
	ot := kmsg.NewOffsetFetchRequestTopic()
	ot.Topic, ot.Partitions = sweepTopic, []int32{0}
	req.Topics = append(req.Topics, ot)
	return req
}

func addPartitionsReq(topics ...string) *kmsg.AddPartitionsToTxnRequest {
	req := kmsg.NewPtrAddPartitionsToTxnRequest()
	req.TransactionalID, req.ProducerID, req.ProducerEpoch = sweepTxn, 1, 0
	for _, topic := range topics {
		rt := kmsg.NewAddPartitionsToTxnRequestTopic()
		rt.Topic, rt.Partitions = topic, []int32{0}
		req.Topics = append(req.Topics, rt)
	}
	return req
}

func leaderEpochReq(replica int32) *kmsg.OffsetForLeaderEpochRequest {
	req := kmsg.NewPtrOffsetForLeaderEpochRequest()
	req.ReplicaID = replica
	rt := kmsg.NewOffsetForLeaderEpochRequestTopic()
	rt.Topic = sweepTopic
	rp := kmsg.NewOffsetForLeaderEpochRequestTopicPartition()
	rp.CurrentLeaderEpoch, rp.LeaderEpoch = -1, 0
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	return req
}

func deleteRecordsReq(offset int64) *kmsg.DeleteRecordsRequest {
	req := kmsg.NewPtrDeleteRecordsRequest()
	req.TimeoutMillis = 5000
	rt := kmsg.NewDeleteRecordsRequestTopic()
	rt.Topic = sweepTopic
	rp := kmsg.NewDeleteRecordsRequestTopicPartition()
	rp.Offset = offset
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	return req
}

func createPartitionsReq() *kmsg.CreatePartitionsRequest {
	req := kmsg.NewPtrCreatePartitionsRequest()
	req.TimeoutMillis = 5000
	rt := kmsg.NewCreatePartitionsRequestTopic()
	rt.Topic, rt.Count = sweepTopic, 2
	req.Topics = append(req.Topics, rt)
	return req
}

func incrementalAlterReq() *kmsg.IncrementalAlterConfigsRequest {
	req := kmsg.NewPtrIncrementalAlterConfigsRequest()
	for _, r := range []struct {
		typ  kmsg.ConfigResourceType
		name string
		key  string
	}{{kmsg.ConfigResourceTypeTopic, sweepTopic, "retention.ms"}, {kmsg.ConfigResourceTypeBroker, "0", "leader.replication.throttled.rate"}} {
		rr := kmsg.NewIncrementalAlterConfigsRequestResource()
		rr.ResourceType, rr.ResourceName = r.typ, r.name
		rc := kmsg.NewIncrementalAlterConfigsRequestResourceConfig()
		rc.Name, rc.Value = r.key, kmsg.StringPtr("1000")
		rr.Configs = append(rr.Configs, rc)
		req.Resources = append(req.Resources, rr)
	}
	return req
}

func offsetDeleteReq() *kmsg.OffsetDeleteRequest {
	req := kmsg.NewPtrOffsetDeleteRequest()
	req.Group = sweepGroup
	rt := kmsg.NewOffsetDeleteRequestTopic()
	rt.Topic = sweepTopic
	rp := kmsg.NewOffsetDeleteRequestTopicPartition()
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	return req
}

func createTopicsReq() *kmsg.CreateTopicsRequest {
	req := kmsg.NewPtrCreateTopicsRequest()
	req.TimeoutMillis = 5000
	rt := kmsg.NewCreateTopicsRequestTopic()
	rt.Topic, rt.NumPartitions, rt.ReplicationFactor = "alice-new", 1, 1
	req.Topics = append(req.Topics, rt)
	return req
}

// saslExchange authenticates as user on a connection of its own, with the
// raw requests, and returns the two answers' error codes.
func saslExchange(t *testing.T, addr, user string) (handshake, authenticate int16) {
	t.Helper()
	conn, _, handshake, authenticate := saslConn(t, addr, user)
	conn.Close()
	return handshake, authenticate
}

// saslConn is a connection authenticated as user with raw requests, for the
// requests a client library will not send.
func saslConn(t *testing.T, addr, user string) (conn net.Conn, r *bufio.Reader, handshake, authenticate int16) {
	t.Helper()
	conn, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	_ = conn.SetDeadline(time.Now().Add(10 * time.Second))
	r = bufio.NewReader(conn)
	hs := kmsg.NewPtrSASLHandshakeRequest()
	hs.SetVersion(1)
	hs.Mechanism = "PLAIN"
	rawRequest(t, conn, hs)
	hr := kmsg.NewPtrSASLHandshakeResponse()
	hr.SetVersion(1)
	readRaw(t, r, hr)
	au := kmsg.NewPtrSASLAuthenticateRequest()
	au.SetVersion(1)
	au.SASLAuthBytes = []byte("\x00" + user + "\x00" + user + "-secret")
	rawRequest(t, conn, au)
	ar := kmsg.NewPtrSASLAuthenticateResponse()
	ar.SetVersion(1)
	readRaw(t, r, ar)
	return conn, r, hr.ErrorCode, ar.ErrorCode
}

// readRaw reads one answer into resp, skipping the response header (v1, with
// its empty tagged fields, for a flexible resp).
func readRaw(t *testing.T, r *bufio.Reader, resp kmsg.Response) {
	t.Helper()
	var size [4]byte
	if _, err := io.ReadFull(r, size[:]); err != nil {
		t.Fatal(err)
	}
	body := make([]byte, binary.BigEndian.Uint32(size[:]))
	if _, err := io.ReadFull(r, body); err != nil {
		t.Fatal(err)
	}
	skip := 4
	if resp.IsFlexible() {
		skip++
	}
	if err := resp.ReadFrom(body[skip:]); err != nil {
		t.Fatal(err)
	}
}

// rawFlexibleRequest writes req, a flexible version, with a v2 request header.
func rawFlexibleRequest(t *testing.T, conn net.Conn, req kmsg.Request) {
	t.Helper()
	buf := make([]byte, 4, 64)
	buf = binary.BigEndian.AppendUint16(buf, uint16(req.Key()))
	buf = binary.BigEndian.AppendUint16(buf, uint16(req.GetVersion()))
	buf = binary.BigEndian.AppendUint32(buf, 2)
	buf = binary.BigEndian.AppendUint16(buf, 1)
	buf = append(buf, 'x', 0)
	buf = req.AppendTo(buf)
	binary.BigEndian.PutUint32(buf, uint32(len(buf)-4))
	if _, err := conn.Write(buf); err != nil {
		t.Fatal(err)
	}
}

var sweepRows = map[int16]sweepRow{
	0: {refused: func(t *testing.T, e *sweepEnv) {
		resp := e.ask(t, produceReq()).(*kmsg.ProduceResponse)
		wantCode(t, "partition", resp.Topics[0].Partitions[0].ErrorCode, errTopicAuth)
	}, granted: func(t *testing.T, e *sweepEnv) {
		e.allowAlice(kadm.NewACLs().Topics(sweepTopic).Operations(kadm.OpWrite))
		_, end := e.offsets(t)
		resp := e.ask(t, produceReq()).(*kmsg.ProduceResponse)
		wantCode(t, "partition", resp.Topics[0].Partitions[0].ErrorCode, nil)
		if _, after := e.offsets(t); after != end+1 {
			t.Errorf("end offset %d after the produce, want %d", after, end+1)
		}
	}},
	1: {refused: func(t *testing.T, e *sweepEnv) {
		for _, replica := range []int32{-1, 0} {
			req := kmsg.NewPtrFetchRequest()
			req.ReplicaID, req.MaxBytes, req.MaxWaitMillis = replica, 1<<20, 10
			rt := kmsg.NewFetchRequestTopic()
			rt.Topic, rt.TopicID = sweepTopic, e.topicID
			rp := kmsg.NewFetchRequestTopicPartition()
			rp.PartitionMaxBytes, rp.CurrentLeaderEpoch = 1<<20, -1
			rt.Partitions = append(rt.Partitions, rp)
			req.Topics = append(req.Topics, rt)
			resp := e.ask(t, req).(*kmsg.FetchResponse)
			p := resp.Topics[0].Partitions[0]
			wantCode(t, fmt.Sprintf("replica %d", replica), p.ErrorCode, errTopicAuth)
			if len(p.RecordBatches) != 0 {
				t.Errorf("replica %d: %d bytes of records", replica, len(p.RecordBatches))
			}
		}
	}},
	2: {refused: func(t *testing.T, e *sweepEnv) {
		p := e.ask(t, listOffsetsReq()).(*kmsg.ListOffsetsResponse).Topics[0].Partitions[0]
		wantCode(t, "partition", p.ErrorCode, errTopicAuth)
		if p.Offset != -1 {
			t.Errorf("offset %d answered", p.Offset)
		}
	}, granted: func(t *testing.T, e *sweepEnv) {
		e.allowAlice(kadm.NewACLs().Topics(sweepTopic).Operations(kadm.OpDescribe))
		p := e.ask(t, listOffsetsReq()).(*kmsg.ListOffsetsResponse).Topics[0].Partitions[0]
		wantCode(t, "partition", p.ErrorCode, nil)
	}},
	3: {refused: func(t *testing.T, e *sweepEnv) {
		all := kmsg.NewPtrMetadataRequest()
		all.Topics = nil
		if resp := e.ask(t, all).(*kmsg.MetadataResponse); len(resp.Topics) != 0 {
			t.Errorf("all topics: %d listed, want none", len(resp.Topics))
		}
		named := kmsg.NewPtrMetadataRequest()
		named.AllowAutoTopicCreation = true
		for _, name := range []string{sweepTopic, "alice-auto"} {
			mt := kmsg.NewMetadataRequestTopic()
			mt.Topic = kmsg.StringPtr(name)
			named.Topics = append(named.Topics, mt)
		}
		for _, rt := range e.ask(t, named).(*kmsg.MetadataResponse).Topics {
			wantCode(t, *rt.Topic, rt.ErrorCode, errTopicAuth)
			if len(rt.Partitions) != 0 {
				t.Errorf("%s: partitions answered", *rt.Topic)
			}
		}
	}, granted: func(t *testing.T, e *sweepEnv) {
		// DESCRIBE on t (granted above) lists t alone. A missing topic named
		// is auto-created with DESCRIBE and CREATE on it: CREATE alone is
		// refused, as Kafka checks DESCRIBE first.
		all := kmsg.NewPtrMetadataRequest()
		all.Topics = nil
		var names []string
		for _, rt := range e.ask(t, all).(*kmsg.MetadataResponse).Topics {
			names = append(names, *rt.Topic)
		}
		if fmt.Sprint(names) != "["+sweepTopic+"]" {
			t.Errorf("all topics: %v, want [%s]", names, sweepTopic)
		}
		named := kmsg.NewPtrMetadataRequest()
		named.AllowAutoTopicCreation = true
		mt := kmsg.NewMetadataRequestTopic()
		mt.Topic = kmsg.StringPtr("alice-auto")
		named.Topics = append(named.Topics, mt)
		e.allowAlice(kadm.NewACLs().Topics("alice-auto").Operations(kadm.OpCreate))
		wantCode(t, "CREATE alone", e.ask(t, named).(*kmsg.MetadataResponse).Topics[0].ErrorCode, errTopicAuth)
		e.allowAlice(kadm.NewACLs().Topics("alice-auto").Operations(kadm.OpDescribe))
		if code := e.ask(t, named).(*kmsg.MetadataResponse).Topics[0].ErrorCode; code == errTopicAuth.Code {
			t.Errorf("auto-creation with DESCRIBE and CREATE: %v", kerr.ErrorForCode(code))
		}
		brokertest.Eventually(t, 10*time.Second, func() error {
			all := kmsg.NewPtrMetadataRequest()
			all.Topics = nil
			for _, rt := range e.askWith(t, e.adminCl, all).(*kmsg.MetadataResponse).Topics {
				if *rt.Topic == "alice-auto" {
					return nil
				}
			}
			return fmt.Errorf("alice-auto not created")
		})
	}},
	4: {refused: func(t *testing.T, e *sweepEnv) {
		req := kmsg.NewPtrLeaderAndISRRequest()
		req.ControllerID, req.ControllerEpoch, req.BrokerEpoch = 0, 1<<20, -1
		ts := kmsg.NewLeaderAndISRRequestTopicState()
		ts.Topic, ts.TopicID = sweepTopic, e.topicID
		ps := kmsg.NewLeaderAndISRRequestTopicPartition()
		ps.Topic, ps.Leader, ps.LeaderEpoch, ps.ISR, ps.Replicas, ps.ZKVersion = sweepTopic, 0, 1<<20, []int32{0}, []int32{0}, 1<<20
		ts.PartitionStates = append(ts.PartitionStates, ps)
		req.TopicStates = append(req.TopicStates, ts)
		req.PartitionStates = append(req.PartitionStates, ps)
		resp := e.ask(t, req).(*kmsg.LeaderAndISRResponse)
		wantCode(t, "top level", resp.ErrorCode, errClusterAuth)
		var codes []int16
		for _, rt := range resp.Topics {
			for _, p := range rt.Partitions {
				codes = append(codes, p.ErrorCode)
			}
		}
		for _, p := range resp.Partitions {
			codes = append(codes, p.ErrorCode)
		}
		if len(codes) != 1 || codes[0] != errClusterAuth.Code {
			t.Errorf("partition codes %v, want one CLUSTER_AUTHORIZATION_FAILED", codes)
		}
	}},
	5: {refused: func(t *testing.T, e *sweepEnv) {
		req := kmsg.NewPtrStopReplicaRequest()
		req.ControllerID, req.ControllerEpoch, req.BrokerEpoch, req.DeletePartitions = 0, 1<<20, -1, true
		rt := kmsg.NewStopReplicaRequestTopic()
		rt.Topic, rt.Partitions = sweepTopic, []int32{0}
		sp := kmsg.NewStopReplicaRequestTopicPartitionState()
		sp.LeaderEpoch, sp.Delete = 1<<20, true
		rt.PartitionStates = append(rt.PartitionStates, sp)
		req.Topics = append(req.Topics, rt)
		resp := e.ask(t, req).(*kmsg.StopReplicaResponse)
		wantCode(t, "top level", resp.ErrorCode, errClusterAuth)
		if len(resp.Partitions) != 1 || resp.Partitions[0].ErrorCode != errClusterAuth.Code || resp.Partitions[0].Topic != sweepTopic {
			t.Errorf("partitions %+v, want %s-0 CLUSTER_AUTHORIZATION_FAILED", resp.Partitions, sweepTopic)
		}
	}},
	6: {refused: func(t *testing.T, e *sweepEnv) {
		req := kmsg.NewPtrUpdateMetadataRequest()
		req.ControllerID, req.ControllerEpoch, req.BrokerEpoch = 0, 1<<20, -1
		ts := kmsg.NewUpdateMetadataRequestTopicState()
		ts.Topic, ts.TopicID = sweepTopic, e.topicID
		ps := kmsg.NewUpdateMetadataRequestTopicPartition()
		ps.Topic, ps.Leader, ps.LeaderEpoch, ps.ISR, ps.Replicas = sweepTopic, 7, 1<<20, []int32{7}, []int32{7}
		ts.PartitionStates = append(ts.PartitionStates, ps)
		req.TopicStates = append(req.TopicStates, ts)
		resp := e.ask(t, req).(*kmsg.UpdateMetadataResponse)
		wantCode(t, "top level", resp.ErrorCode, errClusterAuth)
	}},
	7: {refused: func(t *testing.T, e *sweepEnv) {
		req := kmsg.NewPtrControlledShutdownRequest()
		req.BrokerID, req.BrokerEpoch = 0, -1
		resp := e.ask(t, req).(*kmsg.ControlledShutdownResponse)
		wantCode(t, "top level", resp.ErrorCode, errClusterAuth)
		if len(resp.PartitionsRemaining) != 0 {
			t.Errorf("partitions remaining %v", resp.PartitionsRemaining)
		}
	}},
	8: {refused: func(t *testing.T, e *sweepEnv) {
		resp := e.ask(t, offsetCommitReq()).(*kmsg.OffsetCommitResponse)
		wantCode(t, "partition", resp.Topics[0].Partitions[0].ErrorCode, errGroupAuth)
	}, granted: func(t *testing.T, e *sweepEnv) {
		// READ on the group, not on the topic (alice may only DESCRIBE it by now).
		e.allowAlice(kadm.NewACLs().Groups(sweepGroup).Operations(kadm.OpRead))
		resp := e.ask(t, offsetCommitReq()).(*kmsg.OffsetCommitResponse)
		wantCode(t, "partition", resp.Topics[0].Partitions[0].ErrorCode, errTopicAuth)
		if o := e.committed(t); o != 1 {
			t.Errorf("committed offset %d, want 1 still", o)
		}
	}},
	9: {refused: func(t *testing.T, e *sweepEnv) {
		req := offsetFetchReq()
		resp := e.ask(t, req).(*kmsg.OffsetFetchResponse)
		if req.GetVersion() >= 8 {
			wantCode(t, "group", resp.Groups[0].ErrorCode, errGroupAuth)
			if len(resp.Groups[0].Topics) != 0 {
				t.Errorf("offsets answered: %+v", resp.Groups[0].Topics)
			}
		} else {
			wantCode(t, "top level", resp.ErrorCode, errGroupAuth)
		}
	}, granted: func(t *testing.T, e *sweepEnv) {
		// DESCRIBE on the group (READ, granted above, implies it) and the topic.
		req := offsetFetchReq()
		resp := e.ask(t, req).(*kmsg.OffsetFetchResponse)
		if req.GetVersion() < 8 {
			t.Skipf("v%d", req.GetVersion())
		}
		g := resp.Groups[0]
		wantCode(t, "group", g.ErrorCode, nil)
		if len(g.Topics) != 1 || g.Topics[0].Partitions[0].Offset != 1 {
			t.Errorf("offsets %+v, want %s-0 at 1", g.Topics, sweepTopic)
		}
	}},
	10: {refused: func(t *testing.T, e *sweepEnv) {
		for _, k := range []struct {
			typ  int8
			key  string
			want error
		}{{0, sweepGroup, errGroupAuth}, {1, sweepTxn, errTxnAuth}} {
			req := kmsg.NewPtrFindCoordinatorRequest()
			req.CoordinatorType, req.CoordinatorKey, req.CoordinatorKeys = k.typ, k.key, []string{k.key}
			resp := e.ask(t, req).(*kmsg.FindCoordinatorResponse)
			code := resp.ErrorCode
			if req.GetVersion() >= 4 {
				code = resp.Coordinators[0].ErrorCode
			}
			wantCode(t, k.key, code, k.want)
		}
	}, granted: func(t *testing.T, e *sweepEnv) {
		// READ on the group (granted above) implies DESCRIBE.
		req := kmsg.NewPtrFindCoordinatorRequest()
		req.CoordinatorKey, req.CoordinatorKeys = sweepGroup, []string{sweepGroup}
		resp := e.ask(t, req).(*kmsg.FindCoordinatorResponse)
		code, node := resp.ErrorCode, resp.NodeID
		if req.GetVersion() >= 4 {
			code, node = resp.Coordinators[0].ErrorCode, resp.Coordinators[0].NodeID
		}
		wantCode(t, sweepGroup, code, nil)
		if node != 0 {
			t.Errorf("coordinator %d, want 0", node)
		}
	}},
	11: {refused: func(t *testing.T, e *sweepEnv) {
		req := kmsg.NewPtrJoinGroupRequest()
		req.Group, req.SessionTimeoutMillis, req.RebalanceTimeoutMillis, req.ProtocolType = sweepGroup, 10000, 10000, "consumer"
		p := kmsg.NewJoinGroupRequestProtocol()
		p.Name, p.Metadata = "range", []byte{0, 0, 0, 0, 0, 0, 0, 0}
		req.Protocols = append(req.Protocols, p)
		wantCode(t, "join", e.ask(t, req).(*kmsg.JoinGroupResponse).ErrorCode, errGroupAuth)
		e.groupEmpty(t)
	}},
	12: {refused: func(t *testing.T, e *sweepEnv) {
		req := kmsg.NewPtrHeartbeatRequest()
		req.Group, req.Generation, req.MemberID = sweepGroup, 1, "m"
		wantCode(t, "heartbeat", e.ask(t, req).(*kmsg.HeartbeatResponse).ErrorCode, errGroupAuth)
	}},
	13: {refused: func(t *testing.T, e *sweepEnv) {
		req := kmsg.NewPtrLeaveGroupRequest()
		req.Group, req.MemberID = sweepGroup, "m"
		m := kmsg.NewLeaveGroupRequestMember()
		m.MemberID = "m"
		req.Members = append(req.Members, m)
		wantCode(t, "leave", e.ask(t, req).(*kmsg.LeaveGroupResponse).ErrorCode, errGroupAuth)
	}},
	14: {refused: func(t *testing.T, e *sweepEnv) {
		req := kmsg.NewPtrSyncGroupRequest()
		req.Group, req.Generation, req.MemberID = sweepGroup, 1, "m"
		req.ProtocolType, req.Protocol = kmsg.StringPtr("consumer"), kmsg.StringPtr("range")
		wantCode(t, "sync", e.ask(t, req).(*kmsg.SyncGroupResponse).ErrorCode, errGroupAuth)
	}},
	15: {refused: func(t *testing.T, e *sweepEnv) {
		req := kmsg.NewPtrDescribeGroupsRequest()
		req.Groups, req.IncludeAuthorizedOperations = []string{sweepGroup}, true
		g := e.ask(t, req).(*kmsg.DescribeGroupsResponse).Groups[0]
		wantCode(t, "group", g.ErrorCode, errGroupAuth)
		if len(g.Members) != 0 || g.AuthorizedOperations > 0 {
			t.Errorf("group described: %+v", g)
		}
	}},
	16: {refused: func(t *testing.T, e *sweepEnv) {
		resp := e.ask(t, kmsg.NewPtrListGroupsRequest()).(*kmsg.ListGroupsResponse)
		wantCode(t, "top level", resp.ErrorCode, nil)
		if len(resp.Groups) != 0 {
			t.Errorf("groups listed: %+v", resp.Groups)
		}
	}, granted: func(t *testing.T, e *sweepEnv) {
		resp := e.ask(t, kmsg.NewPtrListGroupsRequest()).(*kmsg.ListGroupsResponse)
		if len(resp.Groups) != 1 || resp.Groups[0].Group != sweepGroup {
			t.Errorf("groups listed: %+v, want %s (READ on it, granted above)", resp.Groups, sweepGroup)
		}
	}},
	17: {refused: func(t *testing.T, e *sweepEnv) {
		hs, _ := saslExchange(t, e.c.Broker(0).Addr(), "alice")
		wantCode(t, "handshake", hs, nil)
	}},
	18: {refused: func(t *testing.T, e *sweepEnv) {
		resp := e.ask(t, kmsg.NewPtrApiVersionsRequest()).(*kmsg.ApiVersionsResponse)
		wantCode(t, "top level", resp.ErrorCode, nil)
		if len(resp.ApiKeys) == 0 {
			t.Error("no keys listed")
		}
	}},
	// From v5 the answer carries the new topic's configs, which need
	// DESCRIBE_CONFIGS on it: without, TOPIC_AUTHORIZATION_FAILED in
	// topic_config_error_code and no config, whether the topic was created or not.
	19: {refused: func(t *testing.T, e *sweepEnv) {
		req := createTopicsReq()
		rt := e.ask(t, req).(*kmsg.CreateTopicsResponse).Topics[0]
		wantCode(t, rt.Topic, rt.ErrorCode, errTopicAuth)
		if req.GetVersion() >= 5 {
			wantCode(t, "configs", rt.ConfigErrorCode, errTopicAuth)
		}
	}, granted: func(t *testing.T, e *sweepEnv) {
		e.allowAlice(kadm.NewACLs().Topics("alice-new").Operations(kadm.OpCreate))
		req := createTopicsReq()
		rt := e.ask(t, req).(*kmsg.CreateTopicsResponse).Topics[0]
		wantCode(t, rt.Topic, rt.ErrorCode, nil)
		if req.GetVersion() >= 5 {
			wantCode(t, "configs", rt.ConfigErrorCode, errTopicAuth)
			if len(rt.Configs) != 0 {
				t.Errorf("%d configs answered without DESCRIBE_CONFIGS", len(rt.Configs))
			}
		}
	}},
	20: {refused: func(t *testing.T, e *sweepEnv) {
		req := kmsg.NewPtrDeleteTopicsRequest()
		req.TimeoutMillis, req.TopicNames = 5000, []string{sweepTopic}
		dt := kmsg.NewDeleteTopicsRequestTopic()
		dt.Topic = kmsg.StringPtr(sweepTopic)
		req.Topics = append(req.Topics, dt)
		wantCode(t, "topic", e.ask(t, req).(*kmsg.DeleteTopicsResponse).Topics[0].ErrorCode, errTopicAuth)
	}},
	21: {refused: func(t *testing.T, e *sweepEnv) {
		p := e.ask(t, deleteRecordsReq(2)).(*kmsg.DeleteRecordsResponse).Topics[0].Partitions[0]
		wantCode(t, "partition", p.ErrorCode, errTopicAuth)
		if p.LowWatermark != -1 {
			t.Errorf("low watermark %d answered", p.LowWatermark)
		}
	}, granted: func(t *testing.T, e *sweepEnv) {
		e.allowAlice(kadm.NewACLs().Topics(sweepTopic).Operations(kadm.OpDelete))
		p := e.ask(t, deleteRecordsReq(1)).(*kmsg.DeleteRecordsResponse).Topics[0].Partitions[0]
		wantCode(t, "partition", p.ErrorCode, nil)
		if start, _ := e.offsets(t); start != 1 {
			t.Errorf("log start offset %d after DeleteRecords to 1", start)
		}
	}},
	22: {refused: func(t *testing.T, e *sweepEnv) {
		for _, id := range []*string{nil, kmsg.StringPtr(sweepTxn)} {
			req := kmsg.NewPtrInitProducerIDRequest()
			req.TransactionalID, req.TransactionTimeoutMillis = id, 60000
			want := errClusterAuth
			if id != nil {
				want = errTxnAuth
			}
			wantCode(t, fmt.Sprint("transactional id ", id != nil), e.ask(t, req).(*kmsg.InitProducerIDResponse).ErrorCode, want)
		}
	}},
	23: {refused: func(t *testing.T, e *sweepEnv) {
		// A consumer's question and a follower's alike (KIP-320): CLUSTER_ACTION
		// or DESCRIBE on the topic, else TOPIC_AUTHORIZATION_FAILED.
		for _, replica := range []int32{-1, 0} {
			p := e.ask(t, leaderEpochReq(replica)).(*kmsg.OffsetForLeaderEpochResponse).Topics[0].Partitions[0]
			wantCode(t, fmt.Sprintf("replica %d", replica), p.ErrorCode, errTopicAuth)
			if p.EndOffset != -1 {
				t.Errorf("replica %d: end offset %d answered", replica, p.EndOffset)
			}
		}
	}, granted: func(t *testing.T, e *sweepEnv) {
		e.allowAlice(kadm.NewACLs().Topics(sweepTopic).Operations(kadm.OpDescribe))
		for _, replica := range []int32{-1, 0} {
			p := e.ask(t, leaderEpochReq(replica)).(*kmsg.OffsetForLeaderEpochResponse).Topics[0].Partitions[0]
			wantCode(t, fmt.Sprintf("replica %d", replica), p.ErrorCode, nil)
		}
	}},
	24: {refused: func(t *testing.T, e *sweepEnv) {
		resp := e.ask(t, addPartitionsReq(sweepTopic)).(*kmsg.AddPartitionsToTxnResponse)
		wantCode(t, "partition", resp.Topics[0].Partitions[0].ErrorCode, errTxnAuth)
		// v4, not advertised, is for brokers: CLUSTER_ACTION.
		conn, r, _, _ := saslConn(t, e.c.Broker(0).Addr(), "alice")
		defer conn.Close()
		v4 := kmsg.NewPtrAddPartitionsToTxnRequest()
		v4.SetVersion(4)
		tx := kmsg.NewAddPartitionsToTxnRequestTransaction()
		tx.TransactionalID, tx.ProducerID, tx.ProducerEpoch, tx.VerifyOnly = sweepTxn, 1, 0, true
		tt := kmsg.NewAddPartitionsToTxnRequestTransactionTopic()
		tt.Topic, tt.Partitions = sweepTopic, []int32{0}
		tx.Topics = append(tx.Topics, tt)
		v4.Transactions = append(v4.Transactions, tx)
		rawFlexibleRequest(t, conn, v4)
		v4resp := kmsg.NewPtrAddPartitionsToTxnResponse()
		v4resp.SetVersion(4)
		readRaw(t, r, v4resp)
		wantCode(t, "v4", v4resp.ErrorCode, errClusterAuth)
		if len(v4resp.Transactions) != 0 {
			t.Errorf("v4 transactions answered: %+v", v4resp.Transactions)
		}
	}, granted: func(t *testing.T, e *sweepEnv) {
		// WRITE on the id and on t (granted above), not on t-hidden: that
		// one is refused and the rest not attempted. Internal topics are
		// refused even to a super user.
		e.allowAlice(kadm.NewACLs().TransactionalIDs(sweepTxn).Operations(kadm.OpWrite))
		for _, c := range []struct {
			cl     *kgo.Client
			topics []string
			want   map[string]int16
		}{
			{e.alice, []string{sweepTopic, sweepHidden}, map[string]int16{
				sweepTopic: kerr.OperationNotAttempted.Code, sweepHidden: errTopicAuth.Code}},
			{e.adminCl, []string{sweepTopic, "__consumer_offsets", "__transaction_state"}, map[string]int16{
				sweepTopic: kerr.OperationNotAttempted.Code, "__consumer_offsets": errTopicAuth.Code, "__transaction_state": errTopicAuth.Code}},
		} {
			resp := e.askWith(t, c.cl, addPartitionsReq(c.topics...)).(*kmsg.AddPartitionsToTxnResponse)
			got := map[string]int16{}
			for _, rt := range resp.Topics {
				got[rt.Topic] = rt.Partitions[0].ErrorCode
			}
			if fmt.Sprint(got) != fmt.Sprint(c.want) {
				t.Errorf("%v: codes %v, want %v", c.topics, got, c.want)
			}
		}
	}},
	25: {refused: func(t *testing.T, e *sweepEnv) {
		req := kmsg.NewPtrAddOffsetsToTxnRequest()
		req.TransactionalID, req.ProducerID, req.ProducerEpoch, req.Group = sweepTxn, 1, 0, sweepGroup
		wantCode(t, "top level", e.ask(t, req).(*kmsg.AddOffsetsToTxnResponse).ErrorCode, errTxnAuth)
	}},
	26: {refused: func(t *testing.T, e *sweepEnv) {
		req := kmsg.NewPtrEndTxnRequest()
		req.TransactionalID, req.ProducerID, req.ProducerEpoch, req.Commit = sweepTxn, 1, 0, true
		wantCode(t, "top level", e.ask(t, req).(*kmsg.EndTxnResponse).ErrorCode, errTxnAuth)
	}},
	27: {refused: func(t *testing.T, e *sweepEnv) {
		req := kmsg.NewPtrWriteTxnMarkersRequest()
		m := kmsg.NewWriteTxnMarkersRequestMarker()
		m.ProducerID, m.Committed = 1, true
		mt := kmsg.NewWriteTxnMarkersRequestMarkerTopic()
		mt.Topic, mt.Partitions = sweepTopic, []int32{0}
		m.Topics = append(m.Topics, mt)
		req.Markers = append(req.Markers, m)
		resp := e.ask(t, req).(*kmsg.WriteTxnMarkersResponse)
		wantCode(t, "partition", resp.Markers[0].Topics[0].Partitions[0].ErrorCode, errClusterAuth)
	}},
	28: {refused: func(t *testing.T, e *sweepEnv) {
		req := kmsg.NewPtrTxnOffsetCommitRequest()
		req.TransactionalID, req.Group, req.ProducerID, req.Generation = sweepTxn, sweepGroup, 1, -1
		rt := kmsg.NewTxnOffsetCommitRequestTopic()
		rt.Topic = sweepTopic
		rp := kmsg.NewTxnOffsetCommitRequestTopicPartition()
		rp.Offset, rp.LeaderEpoch = 2, -1
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)
		wantCode(t, "partition", e.ask(t, req).(*kmsg.TxnOffsetCommitResponse).Topics[0].Partitions[0].ErrorCode, errTxnAuth)
	}},
	29: {refused: func(t *testing.T, e *sweepEnv) {
		req := kmsg.NewPtrDescribeACLsRequest()
		req.ResourceType, req.ResourcePatternType = kmsg.ACLResourceTypeAny, kmsg.ACLResourcePatternTypeAny
		req.Operation, req.PermissionType = kmsg.ACLOperationAny, kmsg.ACLPermissionTypeAny
		resp := e.ask(t, req).(*kmsg.DescribeACLsResponse)
		wantCode(t, "top level", resp.ErrorCode, errClusterAuth)
		if len(resp.Resources) != 0 {
			t.Errorf("ACLs answered: %+v", resp.Resources)
		}
	}},
	30: {refused: func(t *testing.T, e *sweepEnv) {
		req := kmsg.NewPtrCreateACLsRequest()
		cr := kmsg.NewCreateACLsRequestCreation()
		cr.ResourceType, cr.ResourceName, cr.ResourcePatternType = kmsg.ACLResourceTypeCluster, "kafka-cluster", kmsg.ACLResourcePatternTypeLiteral
		cr.Principal, cr.Host, cr.Operation, cr.PermissionType = "User:alice", "*", kmsg.ACLOperationAll, kmsg.ACLPermissionTypeAllow
		req.Creations = append(req.Creations, cr)
		wantCode(t, "creation", e.ask(t, req).(*kmsg.CreateACLsResponse).Results[0].ErrorCode, errClusterAuth)
	}},
	31: {refused: func(t *testing.T, e *sweepEnv) {
		req := kmsg.NewPtrDeleteACLsRequest()
		f := kmsg.NewDeleteACLsRequestFilter()
		f.ResourceType, f.ResourcePatternType = kmsg.ACLResourceTypeAny, kmsg.ACLResourcePatternTypeAny
		f.Operation, f.PermissionType = kmsg.ACLOperationAny, kmsg.ACLPermissionTypeAny
		req.Filters = append(req.Filters, f)
		r := e.ask(t, req).(*kmsg.DeleteACLsResponse).Results[0]
		wantCode(t, "filter", r.ErrorCode, errClusterAuth)
		if len(r.MatchingACLs) != 0 {
			t.Errorf("ACLs deleted: %+v", r.MatchingACLs)
		}
	}},
	32: {refused: func(t *testing.T, e *sweepEnv) {
		resp := e.ask(t, describeConfigsReq()).(*kmsg.DescribeConfigsResponse)
		for i, want := range []error{errTopicAuth, errClusterAuth, errClusterAuth} {
			r := resp.Resources[i]
			wantCode(t, fmt.Sprint(r.ResourceType, " ", r.ResourceName), r.ErrorCode, want)
			if len(r.Configs) != 0 {
				t.Errorf("%v %s: configs answered", r.ResourceType, r.ResourceName)
			}
		}
	}, granted: func(t *testing.T, e *sweepEnv) {
		e.allowAlice(kadm.NewACLs().Topics(sweepTopic).Operations(kadm.OpDescribeConfigs))
		resp := e.ask(t, describeConfigsReq()).(*kmsg.DescribeConfigsResponse)
		for i, want := range []error{nil, errClusterAuth, errClusterAuth} {
			wantCode(t, resp.Resources[i].ResourceName, resp.Resources[i].ErrorCode, want)
		}
		if len(resp.Resources[0].Configs) == 0 {
			t.Error("no config of t answered")
		}
	}},
	33: {refused: func(t *testing.T, e *sweepEnv) {
		req := kmsg.NewPtrAlterConfigsRequest()
		for _, r := range []struct {
			typ  kmsg.ConfigResourceType
			name string
			key  string
		}{{kmsg.ConfigResourceTypeTopic, sweepTopic, "retention.ms"}, {kmsg.ConfigResourceTypeBroker, "0", "leader.replication.throttled.rate"}} {
			rr := kmsg.NewAlterConfigsRequestResource()
			rr.ResourceType, rr.ResourceName = r.typ, r.name
			rc := kmsg.NewAlterConfigsRequestResourceConfig()
			rc.Name, rc.Value = r.key, kmsg.StringPtr("1000")
			rr.Configs = append(rr.Configs, rc)
			req.Resources = append(req.Resources, rr)
		}
		resp := e.ask(t, req).(*kmsg.AlterConfigsResponse)
		for i, want := range []error{errTopicAuth, errClusterAuth} {
			wantCode(t, resp.Resources[i].ResourceName, resp.Resources[i].ErrorCode, want)
		}
	}},
	34: {refused: func(t *testing.T, e *sweepEnv) {
		req := kmsg.NewPtrAlterReplicaLogDirsRequest()
		d := kmsg.NewAlterReplicaLogDirsRequestDir()
		d.Dir = e.logDir
		dt := kmsg.NewAlterReplicaLogDirsRequestDirTopic()
		dt.Topic, dt.Partitions = sweepTopic, []int32{0}
		d.Topics = append(d.Topics, dt)
		req.Dirs = append(req.Dirs, d)
		resp := e.ask(t, req).(*kmsg.AlterReplicaLogDirsResponse)
		wantCode(t, "partition", resp.Topics[0].Partitions[0].ErrorCode, errClusterAuth)
	}},
	35: {refused: func(t *testing.T, e *sweepEnv) {
		// Kafka answers no directory; from v3 on, which has the field, with
		// CLUSTER_AUTHORIZATION_FAILED.
		for _, cl := range []*kgo.Client{e.alice, e.alice28} {
			req := kmsg.NewPtrDescribeLogDirsRequest()
			resp := e.askWith(t, cl, req).(*kmsg.DescribeLogDirsResponse)
			var want error
			if req.GetVersion() >= 3 {
				want = errClusterAuth
			}
			wantCode(t, fmt.Sprint("v", req.GetVersion()), resp.ErrorCode, want)
			if len(resp.Dirs) != 0 {
				t.Errorf("v%d: %d dirs answered", req.GetVersion(), len(resp.Dirs))
			}
		}
	}, granted: func(t *testing.T, e *sweepEnv) {
		e.allowAlice(kadm.NewACLs().Clusters().Operations(kadm.OpDescribe))
		resp := e.ask(t, kmsg.NewPtrDescribeLogDirsRequest()).(*kmsg.DescribeLogDirsResponse)
		wantCode(t, "top level", resp.ErrorCode, nil)
		if len(resp.Dirs) == 0 {
			t.Error("no dir answered")
		}
	}},
	36: {refused: func(t *testing.T, e *sweepEnv) {
		_, au := saslExchange(t, e.c.Broker(0).Addr(), "alice")
		wantCode(t, "authenticate", au, nil)
	}},
	37: {refused: func(t *testing.T, e *sweepEnv) {
		wantCode(t, "topic", e.ask(t, createPartitionsReq()).(*kmsg.CreatePartitionsResponse).Topics[0].ErrorCode, errTopicAuth)
	}, granted: func(t *testing.T, e *sweepEnv) {
		e.allowAlice(kadm.NewACLs().Topics(sweepTopic).Operations(kadm.OpAlter))
		wantCode(t, "topic", e.ask(t, createPartitionsReq()).(*kmsg.CreatePartitionsResponse).Topics[0].ErrorCode, nil)
		brokertest.Eventually(t, 10*time.Second, func() error {
			if n, _, _ := e.partition(t); n != 2 {
				return fmt.Errorf("%d partitions after CreatePartitions to 2", n)
			}
			return nil
		})
	}},
	42: {refused: func(t *testing.T, e *sweepEnv) {
		req := kmsg.NewPtrDeleteGroupsRequest()
		req.Groups = []string{sweepGroup}
		wantCode(t, "group", e.ask(t, req).(*kmsg.DeleteGroupsResponse).Groups[0].ErrorCode, errGroupAuth)
	}},
	43: {refused: func(t *testing.T, e *sweepEnv) {
		req := kmsg.NewPtrElectLeadersRequest()
		req.TimeoutMillis = 5000
		rt := kmsg.NewElectLeadersRequestTopic()
		rt.Topic, rt.Partitions = sweepTopic, []int32{0}
		req.Topics = append(req.Topics, rt)
		resp := e.ask(t, req).(*kmsg.ElectLeadersResponse)
		wantCode(t, "top level", resp.ErrorCode, errClusterAuth)
		wantCode(t, "partition", resp.Topics[0].Partitions[0].ErrorCode, errClusterAuth)
	}},
	44: {refused: func(t *testing.T, e *sweepEnv) {
		resp := e.ask(t, incrementalAlterReq()).(*kmsg.IncrementalAlterConfigsResponse)
		for i, want := range []error{errTopicAuth, errClusterAuth} {
			wantCode(t, resp.Resources[i].ResourceName, resp.Resources[i].ErrorCode, want)
		}
	}, granted: func(t *testing.T, e *sweepEnv) {
		e.allowAlice(kadm.NewACLs().Topics(sweepTopic).Operations(kadm.OpAlterConfigs))
		resp := e.ask(t, incrementalAlterReq()).(*kmsg.IncrementalAlterConfigsResponse)
		for i, want := range []error{nil, errClusterAuth} {
			wantCode(t, resp.Resources[i].ResourceName, resp.Resources[i].ErrorCode, want)
		}
		if r := e.retention(t); r != "1000" {
			t.Errorf("retention.ms %q after the change", r)
		}
	}},
	45: {refused: func(t *testing.T, e *sweepEnv) {
		req := kmsg.NewPtrAlterPartitionAssignmentsRequest()
		req.TimeoutMillis = 5000
		rt := kmsg.NewAlterPartitionAssignmentsRequestTopic()
		rt.Topic = sweepTopic
		rp := kmsg.NewAlterPartitionAssignmentsRequestTopicPartition()
		rp.Replicas = []int32{0}
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)
		resp := e.ask(t, req).(*kmsg.AlterPartitionAssignmentsResponse)
		wantCode(t, "top level", resp.ErrorCode, errClusterAuth)
		if len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1 {
			t.Fatalf("topics %+v, want %s-0", resp.Topics, sweepTopic)
		}
		wantCode(t, "partition", resp.Topics[0].Partitions[0].ErrorCode, errClusterAuth)
	}},
	46: {refused: func(t *testing.T, e *sweepEnv) {
		resp := e.ask(t, kmsg.NewPtrListPartitionReassignmentsRequest()).(*kmsg.ListPartitionReassignmentsResponse)
		wantCode(t, "top level", resp.ErrorCode, errClusterAuth)
	}},
	47: {refused: func(t *testing.T, e *sweepEnv) {
		resp := e.ask(t, offsetDeleteReq()).(*kmsg.OffsetDeleteResponse)
		wantCode(t, "top level", resp.ErrorCode, errGroupAuth)
	}, granted: func(t *testing.T, e *sweepEnv) {
		e.allowAlice(kadm.NewACLs().Groups(sweepGroup).Operations(kadm.OpDelete))
		resp := e.ask(t, offsetDeleteReq()).(*kmsg.OffsetDeleteResponse)
		wantCode(t, "top level", resp.ErrorCode, nil)
		wantCode(t, "partition without READ on the topic", resp.Topics[0].Partitions[0].ErrorCode, errTopicAuth)
		e.allowAlice(kadm.NewACLs().Topics(sweepTopic).Operations(kadm.OpRead))
		resp = e.ask(t, offsetDeleteReq()).(*kmsg.OffsetDeleteResponse)
		wantCode(t, "partition", resp.Topics[0].Partitions[0].ErrorCode, nil)
		if o := e.committed(t); o != -1 {
			t.Errorf("offset %d still committed", o)
		}
	}},
	48: {refused: func(t *testing.T, e *sweepEnv) {
		resp := e.ask(t, kmsg.NewPtrDescribeClientQuotasRequest()).(*kmsg.DescribeClientQuotasResponse)
		wantCode(t, "top level", resp.ErrorCode, errClusterAuth)
	}},
	49: {refused: func(t *testing.T, e *sweepEnv) {
		req := kmsg.NewPtrAlterClientQuotasRequest()
		en := kmsg.NewAlterClientQuotasRequestEntry()
		ee := kmsg.NewAlterClientQuotasRequestEntryEntity()
		ee.Type, ee.Name = "user", kmsg.StringPtr("alice")
		en.Entity = append(en.Entity, ee)
		op := kmsg.NewAlterClientQuotasRequestEntryOp()
		op.Key, op.Value = "producer_byte_rate", 1<<20
		en.Ops = append(en.Ops, op)
		req.Entries = append(req.Entries, en)
		wantCode(t, "entry", e.ask(t, req).(*kmsg.AlterClientQuotasResponse).Entries[0].ErrorCode, errClusterAuth)
	}},
	50: {refused: func(t *testing.T, e *sweepEnv) {
		resp := e.ask(t, kmsg.NewPtrDescribeUserSCRAMCredentialsRequest()).(*kmsg.DescribeUserSCRAMCredentialsResponse)
		wantCode(t, "top level", resp.ErrorCode, errClusterAuth)
		if len(resp.Results) != 0 {
			t.Errorf("credentials answered: %+v", resp.Results)
		}
	}},
	51: {refused: func(t *testing.T, e *sweepEnv) {
		req := kmsg.NewPtrAlterUserSCRAMCredentialsRequest()
		u := kmsg.NewAlterUserSCRAMCredentialsRequestUpsertion()
		u.Name, u.Mechanism, u.Iterations, u.Salt, u.SaltedPassword = "alice", 1, 4096, []byte("salt"), make([]byte, 32)
		req.Upsertions = append(req.Upsertions, u)
		wantCode(t, "alice", e.ask(t, req).(*kmsg.AlterUserSCRAMCredentialsResponse).Results[0].ErrorCode, errClusterAuth)
	}},
	60: {refused: func(t *testing.T, e *sweepEnv) {
		req := kmsg.NewPtrDescribeClusterRequest()
		req.IncludeClusterAuthorizedOperations = true
		resp := e.ask(t, req).(*kmsg.DescribeClusterResponse)
		wantCode(t, "top level", resp.ErrorCode, nil)
		if len(resp.Brokers) != 1 || resp.ClusterAuthorizedOperations != 0 {
			t.Errorf("brokers %d, authorized operations %b", len(resp.Brokers), resp.ClusterAuthorizedOperations)
		}
	}},
	61: {refused: func(t *testing.T, e *sweepEnv) {
		// READ on the topic (Kafka's rule; DESCRIBE is not enough), for a
		// topic that exists or not.
		req := kmsg.NewPtrDescribeProducersRequest()
		req.Topics = []kmsg.DescribeProducersRequestTopic{{Topic: sweepTopic, Partitions: []int32{0}}, {Topic: "missing", Partitions: []int32{0}}}
		for _, rt := range e.ask(t, req).(*kmsg.DescribeProducersResponse).Topics {
			wantCode(t, rt.Topic, rt.Partitions[0].ErrorCode, errTopicAuth)
			if len(rt.Partitions[0].ActiveProducers) != 0 {
				t.Errorf("%s: producers answered: %+v", rt.Topic, rt.Partitions[0].ActiveProducers)
			}
		}
	}, granted: func(t *testing.T, e *sweepEnv) {
		e.allowAlice(kadm.NewACLs().Topics(sweepTopic).Operations(kadm.OpRead))
		req := kmsg.NewPtrDescribeProducersRequest()
		req.Topics = []kmsg.DescribeProducersRequestTopic{{Topic: sweepTopic, Partitions: []int32{0}}}
		wantCode(t, sweepTopic, e.ask(t, req).(*kmsg.DescribeProducersResponse).Topics[0].Partitions[0].ErrorCode, nil)
	}},
	65: {refused: func(t *testing.T, e *sweepEnv) {
		req := kmsg.NewPtrDescribeTransactionsRequest()
		req.TransactionalIDs = []string{sweepTxn, sweepOpenTxn}
		for _, st := range e.ask(t, req).(*kmsg.DescribeTransactionsResponse).TransactionStates {
			wantCode(t, st.TransactionalID, st.ErrorCode, errTxnAuth)
			if len(st.Topics) != 0 {
				t.Errorf("%s: topics answered: %+v", st.TransactionalID, st.Topics)
			}
		}
	}, granted: func(t *testing.T, e *sweepEnv) {
		// DESCRIBE on the transactional id shows the transaction, and only
		// the topics the principal may DESCRIBE.
		e.allowAlice(kadm.NewACLs().TransactionalIDs(sweepOpenTxn).Operations(kadm.OpDescribe))
		describe := func() kmsg.DescribeTransactionsResponseTransactionState {
			req := kmsg.NewPtrDescribeTransactionsRequest()
			req.TransactionalIDs = []string{sweepOpenTxn}
			return e.ask(t, req).(*kmsg.DescribeTransactionsResponse).TransactionStates[0]
		}
		st := describe()
		wantCode(t, sweepOpenTxn, st.ErrorCode, nil)
		if st.State != "Ongoing" || len(st.Topics) != 0 {
			t.Errorf("without DESCRIBE on %s: state %s, topics %+v", sweepHidden, st.State, st.Topics)
		}
		e.allowAlice(kadm.NewACLs().Topics(sweepHidden).Operations(kadm.OpDescribe))
		if st = describe(); len(st.Topics) != 1 || st.Topics[0].Topic != sweepHidden {
			t.Errorf("with DESCRIBE on %s: topics %+v", sweepHidden, st.Topics)
		}
	}},
	66: {refused: func(t *testing.T, e *sweepEnv) {
		resp := e.ask(t, kmsg.NewPtrListTransactionsRequest()).(*kmsg.ListTransactionsResponse)
		wantCode(t, "top level", resp.ErrorCode, nil)
		if len(resp.TransactionStates) != 0 {
			t.Errorf("transactions listed: %+v", resp.TransactionStates)
		}
		all, err := e.admin.ListTransactions(e.ctx, nil, nil)
		if err != nil || len(all) != 2 {
			t.Errorf("admin lists %v %v, want the two transactions", all, err)
		}
	}, granted: func(t *testing.T, e *sweepEnv) {
		e.allowAlice(kadm.NewACLs().TransactionalIDs(sweepOpenTxn).Operations(kadm.OpDescribe))
		resp := e.ask(t, kmsg.NewPtrListTransactionsRequest()).(*kmsg.ListTransactionsResponse)
		var ids []string
		for _, st := range resp.TransactionStates {
			ids = append(ids, st.TransactionalID)
		}
		if !slices.Contains(ids, sweepOpenTxn) {
			t.Errorf("transactions listed: %v, want %s among them", ids, sweepOpenTxn)
		}
	}},
}

func (e *sweepEnv) groupEmpty(t *testing.T) {
	t.Helper()
	gs, err := e.admin.DescribeGroups(e.ctx, sweepGroup)
	if err != nil {
		t.Fatal(err)
	}
	if g := gs[sweepGroup]; len(g.Members) != 0 {
		t.Errorf("group %s has members %+v", sweepGroup, g.Members)
	}
}
