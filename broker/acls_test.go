package broker_test

import (
	"context"
	"errors"
	"math"
	"testing"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/ktoolhq/ktool/broker/brokertest"
	"github.com/ktoolhq/ktool/broker/protocol"
)

// TestAclsWithoutAuthorizer: the ACL APIs answer SECURITY_DISABLED, as a Kafka
// broker without an authorizer does.
func TestAclsWithoutAuthorizer(t *testing.T) {
	c := brokertest.NewCluster(t, 1)
	adm := c.Admin()
	ctx := context.Background()
	b := kadm.NewACLs().Allow("User:alice").Topics("t").Operations(kadm.OpRead).ResourcePatternType(kadm.ACLPatternLiteral)
	res, err := adm.CreateACLs(ctx, b)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range res {
		if !errors.Is(r.Err, kerr.SecurityDisabled) {
			t.Fatalf("CreateACLs: %v, want SECURITY_DISABLED", r.Err)
		}
	}
	d := kadm.NewACLs().AnyResource().Operations(kadm.OpAny).ResourcePatternType(kadm.ACLPatternAny)
	dres, err := adm.DescribeACLs(ctx, d)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range dres {
		if !errors.Is(r.Err, kerr.SecurityDisabled) {
			t.Fatalf("DescribeACLs: %v, want SECURITY_DISABLED", r.Err)
		}
	}
}

// TestAuthorizedOperationsWithoutAuthorizer: asked for them, Metadata (v10:
// topic and cluster) and DescribeCluster answer every operation the resource
// type supports, as Kafka does without an authorizer; not asked, the
// "unknown" value.
func TestAuthorizedOperationsWithoutAuthorizer(t *testing.T) {
	c := brokertest.NewCluster(t, 1)
	ctx := context.Background()
	if _, err := c.Admin().CreateTopic(ctx, 1, 1, nil, "ops"); err != nil {
		t.Fatal(err)
	}
	raw := &protocol.Client{Addr: c.Broker(0).Addr()}
	defer raw.Close()
	allTopic, allCluster := int32(1<<3|1<<4|1<<5|1<<6|1<<7|1<<8|1<<10|1<<11), int32(1<<5|1<<7|1<<8|1<<9|1<<10|1<<11|1<<12)
	for _, include := range []bool{true, false} {
		wantTopic, wantCluster := allTopic, allCluster
		if !include {
			wantTopic, wantCluster = math.MinInt32, math.MinInt32
		}
		mreq := kmsg.NewPtrMetadataRequest()
		mreq.Version = 10
		mt := kmsg.NewMetadataRequestTopic()
		mt.Topic = kmsg.StringPtr("ops")
		mreq.Topics = append(mreq.Topics, mt)
		mreq.IncludeTopicAuthorizedOperations, mreq.IncludeClusterAuthorizedOperations = include, include
		r, err := raw.Request(ctx, mreq)
		if err != nil {
			t.Fatal(err)
		}
		mresp := r.(*kmsg.MetadataResponse)
		if got := mresp.Topics[0].AuthorizedOperations; got != wantTopic {
			t.Errorf("include=%v: topic operations %b, want %b", include, got, wantTopic)
		}
		if got := mresp.AuthorizedOperations; got != wantCluster {
			t.Errorf("include=%v: cluster operations %b, want %b", include, got, wantCluster)
		}
		creq := kmsg.NewPtrDescribeClusterRequest()
		creq.IncludeClusterAuthorizedOperations = include
		cresp, err := creq.RequestWith(ctx, c.Client())
		if err != nil {
			t.Fatal(err)
		}
		if got := cresp.ClusterAuthorizedOperations; got != wantCluster {
			t.Errorf("include=%v: DescribeCluster operations %b, want %b", include, got, wantCluster)
		}
	}
}
