package acl

import (
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/ktoolhq/ktool/internal/acl"
	"github.com/ktoolhq/ktool/tools/cmdutil"
)

// Verdict is what `acl check` found.
type Verdict struct {
	Principal string   `json:"principal" yaml:"principal"`
	Operation string   `json:"operation" yaml:"operation"`
	Resource  string   `json:"resource" yaml:"resource"`
	Host      string   `json:"host" yaml:"host"`
	Allowed   bool     `json:"allowed" yaml:"allowed"`
	Reason    string   `json:"reason" yaml:"reason"`
	DecidedBy *Binding `json:"decided_by,omitempty" yaml:"decided_by,omitempty"`
}

// ParseResource reads Type:name ("Topic:orders", "Group:g",
// "TransactionalId:tx", "Cluster").
func ParseResource(s string) (acl.ResourceType, string, error) {
	t, name, ok := strings.Cut(s, ":")
	rt, err := acl.ParseResourceType(t)
	if err != nil || rt == acl.ResourceAny {
		return 0, "", cmdutil.Usagef("resource %q: want Topic:NAME, Group:NAME, TransactionalId:NAME, DelegationToken:NAME or Cluster", s)
	}
	if rt == acl.ResourceCluster {
		return rt, acl.ClusterName, nil
	}
	if !ok || name == "" {
		return 0, "", cmdutil.Usagef("resource %q has no name (want %s:NAME)", s, rt)
	}
	return rt, name, nil
}

// Check decides from bindings as the broker's authorizer does.
func Check(bindings []acl.Binding, super []string, allowIfNone bool, principal, host string, op acl.Operation, rt acl.ResourceType, name string) (Verdict, error) {
	p, err := acl.ParsePrincipal(principal)
	if err != nil {
		return Verdict{}, cmdutil.Usagef("%v", err)
	}
	d := acl.NewIndex(bindings, super, allowIfNone).Authorize(p, host, op, rt, name)
	v := Verdict{Principal: principal, Operation: op.String(), Resource: rt.String() + ":" + name, Host: host, Allowed: d.Allowed, Reason: d.Reason.String()}
	if d.By != nil {
		b := toBinding(*d.By)
		v.DecidedBy = &b
	}
	return v, nil
}

func newCheckCommand(f *cmdutil.Factory) *cobra.Command {
	var host string
	var super []string
	var allowIfNone bool
	var out cmdutil.OutputFlag
	cmd := &cobra.Command{
		Use:   "check PRINCIPAL OPERATION RESOURCE",
		Short: "Say whether a principal may do an operation on a resource, and which ACL decides",
		Long: `Compute, from the ACLs the cluster returns (DescribeAcls of the resource type),
whether PRINCIPAL (User:name) may do OPERATION (Read, Write, Describe ...) on
RESOURCE (Topic:NAME, Group:NAME, TransactionalId:NAME or Cluster), with the
broker's rules: super users first, then DENY over ALLOW, implied operations,
literal, * and prefixed patterns, and allow.everyone.if.no.acl.found when the
resource has no ACL. The broker's super.users and
allow.everyone.if.no.acl.found are not visible over the protocol here: pass
them with --super-user and --allow-everyone-if-no-acl-found. Without --host
only ACLs for every host (*) apply.`,
		Example: `  ktool acl check User:billing Read Topic:orders-eu
  ktool acl check User:orders-app Write Topic:orders-eu --host 10.0.0.7 -o json`,
		Args: cobra.ExactArgs(3),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := out.Validate(); err != nil {
				return err
			}
			op, err := acl.ParseOperation(args[1])
			if err != nil || op == acl.OpAny {
				return cmdutil.Usagef("operation %q: want All, Read, Write, Create, Delete, Alter, Describe, ClusterAction, DescribeConfigs, AlterConfigs or IdempotentWrite", args[1])
			}
			rt, name, err := ParseResource(args[2])
			if err != nil {
				return err
			}
			if _, err := acl.ParsePrincipal(args[0]); err != nil {
				return cmdutil.Usagef("%v", err)
			}
			// Every ACL of the resource type, matched here: the same answer as a
			// MATCH filter, from brokers that do not implement MATCH too.
			bs, err := describe(cmd.Context(), f, []acl.Filter{{Type: rt, Pattern: acl.PatternAny, Operation: acl.OpAny, Permission: acl.PermAny}})
			if err != nil {
				return err
			}
			v, err := Check(bs, super, allowIfNone, args[0], host, op, rt, name)
			if err != nil {
				return err
			}
			w := f.IO.Out
			return out.Print(w, v, func() error {
				verdict := "DENIED: %s may not %s %s (%s)\n"
				if v.Allowed {
					verdict = "ALLOWED: %s may %s %s (%s)\n"
				}
				fmt.Fprintf(w, verdict, v.Principal, v.Operation, v.Resource, v.Reason)
				if b := v.DecidedBy; b != nil {
					fmt.Fprintf(w, "Decided by: %s %s %s on %s:%s (%s) from host %s\n", b.Permission, b.Principal, b.Operation, b.ResourceType, b.Name, b.PatternType, b.Host)
				}
				return nil
			})
		},
	}
	cmd.Flags().StringVar(&host, "host", "", "the client's IP address (default: only ACLs for every host apply)")
	cmd.Flags().StringSliceVar(&super, "super-user", nil, "a super user of the brokers, as in super.users (repeatable)")
	cmd.Flags().BoolVar(&allowIfNone, "allow-everyone-if-no-acl-found", false, "the brokers' allow.everyone.if.no.acl.found")
	out.Register(cmd)
	return cmd
}
