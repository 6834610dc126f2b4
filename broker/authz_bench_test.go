package broker_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// BenchmarkAuthorizerProduce: produce throughput (one small record per
// request, acks=1) as a non-super SASL user, with the authorizer off and with
// it on and 10,000 ACLs, side by side in one run:
//
//	go test -run '^$' -bench BenchmarkAuthorizerProduce -benchtime 5000x ./broker/
//
// The ACLs: 100 principals on each of 50 literal topics (one of them the
// benchmark's), 40 prefixes (one covering it) and 10 groups, so a decision on
// the produced topic scans about 200 entries.
func BenchmarkAuthorizerProduce(b *testing.B) {
	for _, on := range []bool{false, true} {
		name := "off"
		if on {
			name = "on-10000-acls"
		}
		b.Run(name, func(b *testing.B) { benchProduce(b, on) })
	}
}

func benchProduce(b *testing.B, on bool) {
	extra := map[string]string{"authorizer.class.name": ""}
	if on {
		extra = nil
	}
	c := newACLCluster(b, 1, extra)
	ctx := context.Background()
	admin := c.on(c.Addrs(), "admin")
	if _, err := kadm.NewClient(admin).CreateTopic(ctx, 1, 1, nil, "bench-topic"); err != nil {
		b.Fatal(err)
	}
	if on {
		req := kmsg.NewPtrCreateACLsRequest()
		add := func(rt kmsg.ACLResourceType, name string, pt kmsg.ACLResourcePatternType, principal string) {
			cr := kmsg.NewCreateACLsRequestCreation()
			cr.ResourceType, cr.ResourceName, cr.ResourcePatternType = rt, name, pt
			cr.Principal, cr.Host, cr.Operation, cr.PermissionType = principal, "*", kmsg.ACLOperationWrite, kmsg.ACLPermissionTypeAllow
			req.Creations = append(req.Creations, cr)
		}
		for u := 0; u < 100; u++ {
			p := fmt.Sprintf("User:user-%d", u)
			if u == 99 {
				p = "User:alice"
			}
			for i := 0; i < 50; i++ {
				topic := fmt.Sprintf("topic-%d", i)
				if i == 0 {
					topic = "bench-topic"
				}
				add(kmsg.ACLResourceTypeTopic, topic, kmsg.ACLResourcePatternTypeLiteral, p)
			}
			for i := 0; i < 40; i++ {
				prefix := fmt.Sprintf("prefix-%d-", i)
				if i == 0 {
					prefix = "bench-"
				}
				add(kmsg.ACLResourceTypeTopic, prefix, kmsg.ACLResourcePatternTypePrefixed, p)
			}
			for i := 0; i < 10; i++ {
				add(kmsg.ACLResourceTypeGroup, fmt.Sprintf("group-%d", i), kmsg.ACLResourcePatternTypeLiteral, p)
			}
		}
		resp, err := req.RequestWith(ctx, admin)
		if err != nil {
			b.Fatal(err)
		}
		for _, r := range resp.Results {
			if r.ErrorCode != 0 {
				b.Fatalf("CreateACLs: %d %v", r.ErrorCode, r.ErrorMessage)
			}
		}
		described, err := kadm.NewClient(admin).DescribeACLs(ctx, kadm.NewACLs().AnyResource().Allow().AllowHosts().
			Operations(kadm.OpAny).ResourcePatternType(kadm.ACLPatternAny))
		if err != nil || len(described) != 1 || len(described[0].Described) != 10000 {
			b.Fatalf("described %v, want 10000 ACLs", err)
		}
	}
	alice := c.on(c.Addrs(), "alice", kgo.DisableIdempotentWrite(), kgo.RequiredAcks(kgo.LeaderAck()))
	rec := &kgo.Record{Topic: "bench-topic", Value: make([]byte, 100)}
	if err := alice.ProduceSync(ctx, rec).FirstErr(); err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if err := alice.ProduceSync(ctx, &kgo.Record{Topic: "bench-topic", Value: rec.Value}).FirstErr(); err != nil {
			b.Fatal(err)
		}
	}
}
