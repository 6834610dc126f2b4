package acl

import "testing"

func lit(rt ResourceType, name, principal, host string, op Operation, perm Permission) Binding {
	return Binding{Resource{rt, name, PatternLiteral}, Entry{principal, host, op, perm}}
}

func pre(rt ResourceType, name, principal string, op Operation, perm Permission) Binding {
	return Binding{Resource{rt, name, PatternPrefixed}, Entry{principal, "*", op, perm}}
}

func TestAuthorize(t *testing.T) {
	alice := Principal{"User", "alice"}
	cases := []struct {
		name        string
		bindings    []Binding
		super       []string
		allowIfNone bool
		p           Principal
		host        string
		op          Operation
		rt          ResourceType
		res         string
		want        bool
		reason      Reason
	}{
		{"literal allow", []Binding{lit(ResourceTopic, "t", "User:alice", "*", OpRead, PermAllow)}, nil, false, alice, "10.0.0.1", OpRead, ResourceTopic, "t", true, AllowedBy},
		{"other topic not covered", []Binding{lit(ResourceTopic, "t", "User:alice", "*", OpRead, PermAllow)}, nil, false, alice, "10.0.0.1", OpRead, ResourceTopic, "u", false, NoACLDeny},
		{"no acl, allow everyone", nil, nil, true, alice, "h", OpWrite, ResourceTopic, "t", true, NoACLAllow},
		{"acl for someone else, allow everyone does not apply", []Binding{lit(ResourceTopic, "t", "User:bob", "*", OpRead, PermAllow)}, nil, true, alice, "h", OpRead, ResourceTopic, "t", false, NoMatch},
		{"other principal", []Binding{lit(ResourceTopic, "t", "User:bob", "*", OpRead, PermAllow)}, nil, false, alice, "h", OpRead, ResourceTopic, "t", false, NoMatch},
		{"wildcard principal", []Binding{lit(ResourceTopic, "t", "User:*", "*", OpRead, PermAllow)}, nil, false, alice, "h", OpRead, ResourceTopic, "t", true, AllowedBy},
		{"wildcard principal is User only", []Binding{lit(ResourceTopic, "t", "User:*", "*", OpRead, PermAllow)}, nil, false, Principal{"Group", "x"}, "h", OpRead, ResourceTopic, "t", true, AllowedBy},
		{"host exact", []Binding{lit(ResourceTopic, "t", "User:alice", "10.0.0.1", OpRead, PermAllow)}, nil, false, alice, "10.0.0.1", OpRead, ResourceTopic, "t", true, AllowedBy},
		{"host mismatch", []Binding{lit(ResourceTopic, "t", "User:alice", "10.0.0.1", OpRead, PermAllow)}, nil, false, alice, "10.0.0.2", OpRead, ResourceTopic, "t", false, NoMatch},
		{"deny wins", []Binding{lit(ResourceTopic, "t", "User:alice", "*", OpRead, PermAllow), lit(ResourceTopic, "t", "User:alice", "*", OpRead, PermDeny)}, nil, false, alice, "h", OpRead, ResourceTopic, "t", false, DeniedBy},
		{"deny all wins over allow read", []Binding{lit(ResourceTopic, "t", "User:alice", "*", OpRead, PermAllow), lit(ResourceTopic, "*", "User:*", "*", OpAll, PermDeny)}, nil, false, alice, "h", OpRead, ResourceTopic, "t", false, DeniedBy},
		{"deny from one host only", []Binding{lit(ResourceTopic, "t", "User:alice", "*", OpRead, PermAllow), lit(ResourceTopic, "t", "User:alice", "10.9.9.9", OpRead, PermDeny)}, nil, false, alice, "10.0.0.1", OpRead, ResourceTopic, "t", true, AllowedBy},
		{"deny write does not deny read", []Binding{lit(ResourceTopic, "t", "User:alice", "*", OpRead, PermAllow), lit(ResourceTopic, "t", "User:alice", "*", OpWrite, PermDeny)}, nil, false, alice, "h", OpRead, ResourceTopic, "t", true, AllowedBy},
		{"deny read does not deny describe", []Binding{lit(ResourceTopic, "t", "User:alice", "*", OpWrite, PermAllow), lit(ResourceTopic, "t", "User:alice", "*", OpRead, PermDeny)}, nil, false, alice, "h", OpDescribe, ResourceTopic, "t", true, AllowedBy},
		{"literal star resource", []Binding{lit(ResourceTopic, "*", "User:alice", "*", OpRead, PermAllow)}, nil, false, alice, "h", OpRead, ResourceTopic, "anything", true, AllowedBy},
		{"prefixed", []Binding{pre(ResourceTopic, "orders-", "User:alice", OpWrite, PermAllow)}, nil, false, alice, "h", OpWrite, ResourceTopic, "orders-eu", true, AllowedBy},
		{"prefixed exact name", []Binding{pre(ResourceTopic, "orders-", "User:alice", OpWrite, PermAllow)}, nil, false, alice, "h", OpWrite, ResourceTopic, "orders-", true, AllowedBy},
		{"prefixed not matching", []Binding{pre(ResourceTopic, "orders-", "User:alice", OpWrite, PermAllow)}, nil, false, alice, "h", OpWrite, ResourceTopic, "order", false, NoACLDeny},
		{"prefixed star is not a wildcard", []Binding{pre(ResourceTopic, "*", "User:alice", OpWrite, PermAllow)}, nil, false, alice, "h", OpWrite, ResourceTopic, "orders", false, NoACLDeny},
		{"literal name not a prefix", []Binding{lit(ResourceTopic, "orders-", "User:alice", "*", OpWrite, PermAllow)}, nil, false, alice, "h", OpWrite, ResourceTopic, "orders-eu", false, NoACLDeny},
		{"prefixed deny over literal allow", []Binding{lit(ResourceTopic, "orders-eu", "User:alice", "*", OpWrite, PermAllow), pre(ResourceTopic, "orders-", "User:alice", OpWrite, PermDeny)}, nil, false, alice, "h", OpWrite, ResourceTopic, "orders-eu", false, DeniedBy},
		{"resource type separates", []Binding{lit(ResourceGroup, "t", "User:alice", "*", OpRead, PermAllow)}, nil, false, alice, "h", OpRead, ResourceTopic, "t", false, NoACLDeny},
		{"read implies describe", []Binding{lit(ResourceTopic, "t", "User:alice", "*", OpRead, PermAllow)}, nil, false, alice, "h", OpDescribe, ResourceTopic, "t", true, AllowedBy},
		{"write implies describe", []Binding{lit(ResourceTopic, "t", "User:alice", "*", OpWrite, PermAllow)}, nil, false, alice, "h", OpDescribe, ResourceTopic, "t", true, AllowedBy},
		{"delete implies describe", []Binding{lit(ResourceTopic, "t", "User:alice", "*", OpDelete, PermAllow)}, nil, false, alice, "h", OpDescribe, ResourceTopic, "t", true, AllowedBy},
		{"alter implies describe", []Binding{lit(ResourceTopic, "t", "User:alice", "*", OpAlter, PermAllow)}, nil, false, alice, "h", OpDescribe, ResourceTopic, "t", true, AllowedBy},
		{"create does not imply describe", []Binding{lit(ResourceTopic, "t", "User:alice", "*", OpCreate, PermAllow)}, nil, false, alice, "h", OpDescribe, ResourceTopic, "t", false, NoMatch},
		{"describe does not imply read", []Binding{lit(ResourceTopic, "t", "User:alice", "*", OpDescribe, PermAllow)}, nil, false, alice, "h", OpRead, ResourceTopic, "t", false, NoMatch},
		{"alter configs implies describe configs", []Binding{lit(ResourceTopic, "t", "User:alice", "*", OpAlterConfigs, PermAllow)}, nil, false, alice, "h", OpDescribeConfigs, ResourceTopic, "t", true, AllowedBy},
		{"describe configs does not imply alter configs", []Binding{lit(ResourceTopic, "t", "User:alice", "*", OpDescribeConfigs, PermAllow)}, nil, false, alice, "h", OpAlterConfigs, ResourceTopic, "t", false, NoMatch},
		{"all implies everything", []Binding{lit(ResourceCluster, ClusterName, "User:alice", "*", OpAll, PermAllow)}, nil, false, alice, "h", OpClusterAction, ResourceCluster, ClusterName, true, AllowedBy},
		{"super user beats deny", []Binding{lit(ResourceTopic, "t", "User:alice", "*", OpAll, PermDeny)}, []string{"User:admin", "User:alice"}, false, alice, "h", OpRead, ResourceTopic, "t", true, SuperUser},
		{"transactional id", []Binding{pre(ResourceTransactionalID, "tx-", "User:alice", OpWrite, PermAllow)}, nil, false, alice, "h", OpWrite, ResourceTransactionalID, "tx-1", true, AllowedBy},
		{"delegation token", []Binding{lit(ResourceDelegationToken, "tok", "User:alice", "*", OpDescribe, PermAllow)}, nil, false, alice, "h", OpDescribe, ResourceDelegationToken, "tok", true, AllowedBy},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ix := NewIndex(c.bindings, c.super, c.allowIfNone)
			d := ix.Authorize(c.p, c.host, c.op, c.rt, c.res)
			if d.Allowed != c.want || d.Reason != c.reason {
				t.Fatalf("got allowed=%v reason=%v (by %v), want allowed=%v reason=%v", d.Allowed, d.Reason, d.By, c.want, c.reason)
			}
			if (c.reason == AllowedBy || c.reason == DeniedBy) && d.By == nil {
				t.Fatal("no deciding binding")
			}
		})
	}
}

func TestAuthorizeAny(t *testing.T) {
	alice := Principal{"User", "alice"}
	ix := NewIndex([]Binding{pre(ResourceTopic, "orders-", "User:alice", OpWrite, PermAllow)}, nil, false)
	if d := ix.AuthorizeAny(alice, "h", OpWrite, ResourceTopic); !d.Allowed {
		t.Fatalf("WRITE on some topic: %+v", d)
	}
	if d := ix.AuthorizeAny(Principal{"User", "bob"}, "h", OpWrite, ResourceTopic); d.Allowed {
		t.Fatalf("bob allowed: %+v", d)
	}
	ix = NewIndex([]Binding{pre(ResourceTopic, "orders-", "User:alice", OpWrite, PermAllow), lit(ResourceTopic, "*", "User:alice", "*", OpWrite, PermDeny)}, nil, false)
	if d := ix.AuthorizeAny(alice, "h", OpWrite, ResourceTopic); d.Allowed || d.Reason != DeniedBy {
		t.Fatalf("denied on *: %+v", d)
	}
}

func TestFilter(t *testing.T) {
	s := func(v string) *string { return &v }
	b := []Binding{
		lit(ResourceTopic, "orders", "User:alice", "*", OpRead, PermAllow),
		lit(ResourceTopic, "*", "User:bob", "*", OpRead, PermAllow),
		pre(ResourceTopic, "ord", "User:carol", OpWrite, PermDeny),
		lit(ResourceGroup, "orders", "User:alice", "*", OpRead, PermAllow),
	}
	cases := []struct {
		name string
		f    Filter
		want []int
	}{
		{"any everything", Filter{Type: ResourceAny, Pattern: PatternAny, Operation: OpAny, Permission: PermAny}, []int{0, 1, 2, 3}},
		{"literal name exact", Filter{Type: ResourceTopic, Name: s("orders"), Pattern: PatternLiteral, Operation: OpAny, Permission: PermAny}, []int{0}},
		{"any with name is exact", Filter{Type: ResourceTopic, Name: s("ord"), Pattern: PatternAny, Operation: OpAny, Permission: PermAny}, []int{2}},
		{"match", Filter{Type: ResourceTopic, Name: s("orders"), Pattern: PatternMatch, Operation: OpAny, Permission: PermAny}, []int{0, 1, 2}},
		{"prefixed only", Filter{Type: ResourceAny, Pattern: PatternPrefixed, Operation: OpAny, Permission: PermAny}, []int{2}},
		{"principal", Filter{Type: ResourceAny, Pattern: PatternAny, Principal: s("User:alice"), Operation: OpAny, Permission: PermAny}, []int{0, 3}},
		{"operation and permission", Filter{Type: ResourceAny, Pattern: PatternAny, Operation: OpWrite, Permission: PermDeny}, []int{2}},
		{"host", Filter{Type: ResourceAny, Pattern: PatternAny, Host: s("10.0.0.1"), Operation: OpAny, Permission: PermAny}, nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var got []int
			for i, x := range b {
				if c.f.Matches(x) {
					got = append(got, i)
				}
			}
			if len(got) != len(c.want) {
				t.Fatalf("got %v, want %v", got, c.want)
			}
			for i := range got {
				if got[i] != c.want[i] {
					t.Fatalf("got %v, want %v", got, c.want)
				}
			}
		})
	}
}

func TestAuthorizeAllocatesNothing(t *testing.T) {
	var bs []Binding
	for i := 0; i < 1000; i++ {
		bs = append(bs, lit(ResourceTopic, "t"+string(rune('a'+i%26))+string(rune('a'+i/26%26)), "User:alice", "*", OpWrite, PermAllow))
	}
	bs = append(bs, pre(ResourceTopic, "orders-", "User:alice", OpWrite, PermAllow))
	ix := NewIndex(bs, []string{"User:admin"}, false)
	p := Principal{"User", "alice"}
	n := testing.AllocsPerRun(100, func() {
		if !ix.Authorize(p, "127.0.0.1", OpWrite, ResourceTopic, "orders-eu").Allowed {
			t.Fatal("denied")
		}
	})
	if n != 0 {
		t.Fatalf("%v allocations per decision", n)
	}
}

func TestParse(t *testing.T) {
	for in, want := range map[string]Operation{"read": OpRead, "IDEMPOTENT_WRITE": OpIdempotentWrite, "DescribeConfigs": OpDescribeConfigs, "cluster-action": OpClusterAction, "all": OpAll} {
		if got, err := ParseOperation(in); err != nil || got != want {
			t.Errorf("ParseOperation(%q) = %v, %v", in, got, err)
		}
	}
	if _, err := ParseOperation("fly"); err == nil {
		t.Error("ParseOperation(fly) accepted")
	}
	if rt, err := ParseResourceType("transactional_id"); err != nil || rt != ResourceTransactionalID {
		t.Errorf("ParseResourceType = %v, %v", rt, err)
	}
}

// BenchmarkAuthorize: one decision among 10,000 ACLs (100 principals on 50
// literal topics, 40 prefixes and 10 groups), as BenchmarkAuthorizerProduce
// in broker/ lays them out.
func BenchmarkAuthorize(b *testing.B) {
	var bs []Binding
	for u := 0; u < 100; u++ {
		p := "User:user-" + string(rune('a'+u%26)) + string(rune('a'+u/26))
		if u == 99 {
			p = "User:alice"
		}
		for i := 0; i < 50; i++ {
			bs = append(bs, lit(ResourceTopic, "topic-"+string(rune('a'+i%26))+string(rune('a'+i/26)), p, "*", OpWrite, PermAllow))
		}
		bs[len(bs)-50] = lit(ResourceTopic, "bench-topic", p, "*", OpWrite, PermAllow)
		for i := 0; i < 40; i++ {
			bs = append(bs, pre(ResourceTopic, "prefix-"+string(rune('a'+i%26))+string(rune('a'+i/26))+"-", p, OpWrite, PermAllow))
		}
		bs[len(bs)-40] = pre(ResourceTopic, "bench-", p, OpWrite, PermAllow)
		for i := 0; i < 10; i++ {
			bs = append(bs, lit(ResourceGroup, "group-"+string(rune('a'+i)), p, "*", OpRead, PermAllow))
		}
	}
	ix := NewIndex(bs, nil, false)
	if len(ix.Bindings()) != 10000 {
		b.Fatalf("%d bindings", len(ix.Bindings()))
	}
	p := Principal{"User", "alice"}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if !ix.Authorize(p, "127.0.0.1", OpWrite, ResourceTopic, "bench-topic").Allowed {
			b.Fatal("denied")
		}
	}
}
