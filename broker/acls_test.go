package broker_test

import (
	"context"
	"errors"
	"testing"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/ktoolhq/ktool/broker/brokertest"
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
