package acl

import (
	"context"
	"fmt"
	"io"
	"sort"
	"strings"

	"github.com/spf13/cobra"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/ktoolhq/ktool/internal/acl"
	"github.com/ktoolhq/ktool/tools/cmdutil"
)

// Binding is one ACL as listed.
type Binding struct {
	ResourceType string `json:"resource_type" yaml:"resource_type"`
	Name         string `json:"name" yaml:"name"`
	PatternType  string `json:"pattern_type" yaml:"pattern_type"`
	Principal    string `json:"principal" yaml:"principal"`
	Host         string `json:"host" yaml:"host"`
	Operation    string `json:"operation" yaml:"operation"`
	Permission   string `json:"permission" yaml:"permission"`
}

func toBinding(b acl.Binding) Binding {
	return Binding{b.Type.String(), b.Name, b.Pattern.String(), b.Principal, b.Host, b.Operation.String(), b.Permission.String()}
}

// Flags are kafka-acls.sh's resource, principal, host and operation options.
type Flags struct {
	AllowPrincipals, DenyPrincipals []string
	AllowHosts, DenyHosts           []string
	Operations                      []string
	Topics, Groups, TxnIDs          []string
	Cluster                         bool
	PatternType                     string
	Producer, Consumer, Idempotent  bool
	Principals                      []string // list only
	patternSet                      bool     // --resource-pattern-type was given
}

func (fl *Flags) registerResources(cmd *cobra.Command) {
	cmd.Flags().StringSliceVar(&fl.Topics, "topic", nil, "topic (repeatable; * for every topic)")
	cmd.Flags().StringSliceVar(&fl.Groups, "group", nil, "consumer group (repeatable; * for every group)")
	cmd.Flags().StringSliceVar(&fl.TxnIDs, "transactional-id", nil, "transactional id (repeatable; * for every one)")
	cmd.Flags().BoolVar(&fl.Cluster, "cluster", false, "the cluster resource")
	cmd.Flags().StringVar(&fl.PatternType, "resource-pattern-type", "literal", "literal or prefixed; to list or delete also match (every pattern applying to the names) or any (exact names, any pattern type)")
}

func (fl *Flags) registerEntries(cmd *cobra.Command) {
	cmd.Flags().StringSliceVar(&fl.AllowPrincipals, "allow-principal", nil, "principal to allow, as User:name (repeatable; User:* for everyone)")
	cmd.Flags().StringSliceVar(&fl.DenyPrincipals, "deny-principal", nil, "principal to deny, as User:name (repeatable)")
	cmd.Flags().StringSliceVar(&fl.AllowHosts, "allow-host", nil, "host (IP address) the allow principals may connect from (repeatable; default *)")
	cmd.Flags().StringSliceVar(&fl.DenyHosts, "deny-host", nil, "host (IP address) the deny principals are denied from (repeatable; default *)")
	cmd.Flags().StringSliceVar(&fl.Operations, "operation", nil, "operation: All, Read, Write, Create, Delete, Alter, Describe, ClusterAction, DescribeConfigs, AlterConfigs, IdempotentWrite (repeatable; default All)")
	cmd.Flags().BoolVar(&fl.Producer, "producer", false, "the producer convenience: WRITE, DESCRIBE and CREATE on the topics (WRITE and DESCRIBE on --transactional-id, IDEMPOTENT_WRITE on the cluster with --idempotent)")
	cmd.Flags().BoolVar(&fl.Consumer, "consumer", false, "the consumer convenience: READ and DESCRIBE on the topics, READ on the --group")
	cmd.Flags().BoolVar(&fl.Idempotent, "idempotent", false, "with --producer: IDEMPOTENT_WRITE on the cluster")
}

// resources lists the resources named, with the pattern type.
func (fl *Flags) resources(pt acl.PatternType) []acl.Resource {
	var out []acl.Resource
	add := func(rt acl.ResourceType, names []string) {
		for _, n := range names {
			out = append(out, acl.Resource{Type: rt, Name: n, Pattern: pt})
		}
	}
	add(acl.ResourceTopic, fl.Topics)
	add(acl.ResourceGroup, fl.Groups)
	add(acl.ResourceTransactionalID, fl.TxnIDs)
	if fl.Cluster {
		out = append(out, acl.Resource{Type: acl.ResourceCluster, Name: acl.ClusterName, Pattern: pt})
	}
	return out
}

func parseOps(names []string) ([]acl.Operation, error) {
	var out []acl.Operation
	for _, n := range names {
		op, err := acl.ParseOperation(n)
		if err != nil {
			return nil, cmdutil.Usagef("--operation: %v", err)
		}
		out = append(out, op)
	}
	return out, nil
}

func orStar(hosts []string) []string {
	if len(hosts) == 0 {
		return []string{acl.Wildcard}
	}
	return hosts
}

// Bindings builds what create adds (or what delete removes, exactly).
func (fl *Flags) Bindings() ([]acl.Binding, error) {
	pt, err := acl.ParsePatternType(fl.PatternType)
	if err != nil {
		return nil, cmdutil.Usagef("--resource-pattern-type: %v", err)
	}
	if pt != acl.PatternLiteral && pt != acl.PatternPrefixed {
		return nil, cmdutil.Usagef("--resource-pattern-type must be literal or prefixed to create ACLs")
	}
	if len(fl.AllowPrincipals)+len(fl.DenyPrincipals) == 0 {
		return nil, cmdutil.Usagef("name a principal: --allow-principal or --deny-principal")
	}
	for _, p := range append(append([]string(nil), fl.AllowPrincipals...), fl.DenyPrincipals...) {
		if _, err := acl.ParsePrincipal(p); err != nil {
			return nil, cmdutil.Usagef("%v", err)
		}
	}
	type grant struct {
		r   acl.Resource
		ops []acl.Operation
	}
	var grants []grant
	switch {
	case fl.Producer && fl.Consumer:
		return nil, cmdutil.Usagef("pass --producer or --consumer, not both (run twice)")
	case fl.Producer:
		if len(fl.Topics) == 0 {
			return nil, cmdutil.Usagef("--producer needs --topic")
		}
		for _, t := range fl.Topics {
			grants = append(grants, grant{acl.Resource{Type: acl.ResourceTopic, Name: t, Pattern: pt}, []acl.Operation{acl.OpWrite, acl.OpDescribe, acl.OpCreate}})
		}
		for _, x := range fl.TxnIDs {
			grants = append(grants, grant{acl.Resource{Type: acl.ResourceTransactionalID, Name: x, Pattern: pt}, []acl.Operation{acl.OpWrite, acl.OpDescribe}})
		}
		if fl.Idempotent {
			grants = append(grants, grant{acl.Resource{Type: acl.ResourceCluster, Name: acl.ClusterName, Pattern: acl.PatternLiteral}, []acl.Operation{acl.OpIdempotentWrite}})
		}
	case fl.Consumer:
		if len(fl.Topics) == 0 || len(fl.Groups) == 0 {
			return nil, cmdutil.Usagef("--consumer needs --topic and --group")
		}
		for _, t := range fl.Topics {
			grants = append(grants, grant{acl.Resource{Type: acl.ResourceTopic, Name: t, Pattern: pt}, []acl.Operation{acl.OpRead, acl.OpDescribe}})
		}
		for _, g := range fl.Groups {
			grants = append(grants, grant{acl.Resource{Type: acl.ResourceGroup, Name: g, Pattern: pt}, []acl.Operation{acl.OpRead}})
		}
	default:
		ops, err := parseOps(fl.Operations)
		if err != nil {
			return nil, err
		}
		if len(ops) == 0 {
			ops = []acl.Operation{acl.OpAll}
		}
		rs := fl.resources(pt)
		if len(rs) == 0 {
			return nil, cmdutil.Usagef("name a resource: --topic, --group, --transactional-id or --cluster")
		}
		for _, r := range rs {
			grants = append(grants, grant{r, ops})
		}
	}
	var out []acl.Binding
	for _, g := range grants {
		for _, op := range g.ops {
			for _, p := range fl.AllowPrincipals {
				for _, h := range orStar(fl.AllowHosts) {
					out = append(out, acl.Binding{Resource: g.r, Entry: acl.Entry{Principal: p, Host: h, Operation: op, Permission: acl.PermAllow}})
				}
			}
			for _, p := range fl.DenyPrincipals {
				for _, h := range orStar(fl.DenyHosts) {
					out = append(out, acl.Binding{Resource: g.r, Entry: acl.Entry{Principal: p, Host: h, Operation: op, Permission: acl.PermDeny}})
				}
			}
		}
	}
	for _, b := range out {
		if err := b.Validate(); err != nil {
			return nil, cmdutil.Usagef("%v", err)
		}
	}
	return out, nil
}

// Filters builds what list (and delete) select: each named resource (or
// every resource), each principal (or any), each operation (or any).
func (fl *Flags) Filters(defaultAny bool) ([]acl.Filter, error) {
	pt, err := acl.ParsePatternType(fl.PatternType)
	if err != nil {
		return nil, cmdutil.Usagef("--resource-pattern-type: %v", err)
	}
	rs := fl.resources(pt)
	var base []acl.Filter
	for _, r := range rs {
		name := r.Name
		base = append(base, acl.Filter{Type: r.Type, Name: &name, Pattern: pt, Operation: acl.OpAny, Permission: acl.PermAny})
	}
	if len(rs) == 0 {
		if !defaultAny {
			return nil, cmdutil.Usagef("name a resource: --topic, --group, --transactional-id or --cluster")
		}
		if !cmdChanged(fl) {
			pt = acl.PatternAny
		}
		base = []acl.Filter{{Type: acl.ResourceAny, Pattern: pt, Operation: acl.OpAny, Permission: acl.PermAny}}
	}
	ops, err := parseOps(fl.Operations)
	if err != nil {
		return nil, err
	}
	type who struct {
		p    *string
		perm acl.Permission
	}
	var whos []who
	for _, p := range fl.Principals {
		whos = append(whos, who{ptr(p), acl.PermAny})
	}
	for _, p := range fl.AllowPrincipals {
		whos = append(whos, who{ptr(p), acl.PermAllow})
	}
	for _, p := range fl.DenyPrincipals {
		whos = append(whos, who{ptr(p), acl.PermDeny})
	}
	if len(whos) == 0 {
		whos = []who{{nil, acl.PermAny}}
	}
	var out []acl.Filter
	for _, f := range base {
		for _, w := range whos {
			g := f
			g.Principal, g.Permission = w.p, w.perm
			if len(ops) == 0 {
				out = append(out, g)
			}
			for _, op := range ops {
				h := g
				h.Operation = op
				out = append(out, h)
			}
		}
	}
	return out, nil
}

// cmdChanged reports whether the pattern type was given (it is literal by
// default, but a listing of everything is over any pattern type).
func cmdChanged(fl *Flags) bool { return fl.patternSet }

func ptr(s string) *string { return &s }

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

// NewCommand returns `ktool acl`.
func NewCommand(f *cmdutil.Factory) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "acl",
		Short: "Manage ACLs (create, list, delete) and check what a principal may do",
		Long: `Manage the ACLs of a cluster whose brokers run an authorizer
(authorizer.class.name=kafka.security.authorizer.AclAuthorizer), with
kafka-acls.sh's options, over the Kafka protocol: works against any Kafka
cluster. An ACL allows or denies a principal (User:name, User:* for all) an
operation on a resource (a topic, group, transactional id or the cluster) named
literally or by prefix, from a host (* for all). DENY wins over ALLOW; READ,
WRITE, DELETE and ALTER imply DESCRIBE; ALTER_CONFIGS implies DESCRIBE_CONFIGS.`,
		Example: `  ktool acl create --allow-principal User:orders-app --producer --topic orders- --resource-pattern-type prefixed
  ktool acl create --allow-principal User:billing --consumer --topic orders- --resource-pattern-type prefixed --group billing
  ktool acl create --deny-principal User:mallory --operation Read --topic payments
  ktool acl list --topic orders-eu --resource-pattern-type match
  ktool acl delete --allow-principal User:billing --topic orders- --resource-pattern-type prefixed --dry-run
  ktool acl check User:billing Read Topic:orders-eu`,
	}
	cmd.AddCommand(newCreateCommand(f), newListCommand(f), newDeleteCommand(f), newCheckCommand(f))
	return cmd
}

func describe(ctx context.Context, f *cmdutil.Factory, fs []acl.Filter) ([]acl.Binding, error) {
	cl, err := f.Client()
	if err != nil {
		return nil, err
	}
	defer cl.Close()
	rctx, cancel := f.RequestContext(ctx)
	defer cancel()
	seen := map[acl.Binding]bool{}
	var out []acl.Binding
	for _, flt := range fs {
		req := kmsg.NewPtrDescribeACLsRequest()
		req.ResourceType, req.ResourceName, req.ResourcePatternType = kmsg.ACLResourceType(flt.Type), flt.Name, kmsg.ACLResourcePatternType(flt.Pattern)
		req.Principal, req.Host, req.Operation, req.PermissionType = flt.Principal, flt.Host, kmsg.ACLOperation(flt.Operation), kmsg.ACLPermissionType(flt.Permission)
		resp, err := req.RequestWith(rctx, cl)
		if err != nil {
			return nil, f.ClusterError("describing ACLs", err)
		}
		if e := kerr.ErrorForCode(resp.ErrorCode); e != nil {
			return nil, cmdutil.WithMessage(e, deref(resp.ErrorMessage))
		}
		for _, r := range resp.Resources {
			for _, a := range r.ACLs {
				b := acl.Binding{Resource: acl.Resource{Type: acl.ResourceType(r.ResourceType), Name: r.ResourceName, Pattern: acl.PatternType(r.ResourcePatternType)},
					Entry: acl.Entry{Principal: a.Principal, Host: a.Host, Operation: acl.Operation(a.Operation), Permission: acl.Permission(a.PermissionType)}}
				if !seen[b] {
					seen[b] = true
					out = append(out, b)
				}
			}
		}
	}
	sortBindings(out)
	return out, nil
}

func sortBindings(bs []acl.Binding) {
	sort.Slice(bs, func(i, j int) bool { return toBinding(bs[i]).key() < toBinding(bs[j]).key() })
}

func (b Binding) key() string {
	return strings.Join([]string{b.ResourceType, b.PatternType, b.Name, b.Principal, b.Host, b.Operation, b.Permission}, "\x00")
}

func rows(bs []acl.Binding) []Binding {
	out := make([]Binding, 0, len(bs))
	for _, b := range bs {
		out = append(out, toBinding(b))
	}
	return out
}

func writeTable(w io.Writer, bs []Binding, none string) error {
	if len(bs) == 0 {
		_, err := fmt.Fprintln(w, none)
		return err
	}
	tbl := cmdutil.NewTable(w, "Resource", "Name", "Pattern", "Principal", "Host", "Operation", "Permission")
	for _, b := range bs {
		tbl.Append([]string{b.ResourceType, b.Name, b.PatternType, b.Principal, b.Host, b.Operation, b.Permission})
	}
	return tbl.Render()
}
