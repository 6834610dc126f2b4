package acl

import (
	"fmt"

	"github.com/spf13/cobra"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/ktoolhq/ktool/internal/acl"
	"github.com/ktoolhq/ktool/tools/cmdutil"
)

func newCreateCommand(f *cmdutil.Factory) *cobra.Command {
	var fl Flags
	var dry bool
	var out cmdutil.OutputFlag
	cmd := &cobra.Command{
		Use:   "create (--allow-principal P | --deny-principal P)... (--topic T | --group G | --transactional-id X | --cluster)... [--operation OP]... [--producer | --consumer]",
		Short: "Create ACLs (CreateAcls)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := out.Validate(); err != nil {
				return err
			}
			bs, err := fl.Bindings()
			if err != nil {
				return err
			}
			w := f.IO.Out
			if dry {
				return out.Print(w, rows(bs), func() error {
					fmt.Fprintf(w, "Would create %d ACLs:\n", len(bs))
					return writeTable(w, rows(bs), "")
				})
			}
			if err := create(cmd, f, bs); err != nil {
				return err
			}
			return out.Print(w, rows(bs), func() error {
				fmt.Fprintf(w, "Created %d ACLs:\n", len(bs))
				return writeTable(w, rows(bs), "")
			})
		},
	}
	fl.registerEntries(cmd)
	fl.registerResources(cmd)
	cmd.Flags().BoolVar(&dry, "dry-run", false, "print the ACLs that would be created and create nothing")
	out.Register(cmd)
	return cmd
}

func create(cmd *cobra.Command, f *cmdutil.Factory, bs []acl.Binding) error {
	cl, err := f.Client()
	if err != nil {
		return err
	}
	defer cl.Close()
	rctx, cancel := f.RequestContext(cmd.Context())
	defer cancel()
	req := kmsg.NewPtrCreateACLsRequest()
	for _, b := range bs {
		c := kmsg.NewCreateACLsRequestCreation()
		c.ResourceType, c.ResourceName, c.ResourcePatternType = kmsg.ACLResourceType(b.Type), b.Name, kmsg.ACLResourcePatternType(b.Pattern)
		c.Principal, c.Host, c.Operation, c.PermissionType = b.Principal, b.Host, kmsg.ACLOperation(b.Operation), kmsg.ACLPermissionType(b.Permission)
		req.Creations = append(req.Creations, c)
	}
	resp, err := req.RequestWith(rctx, cl)
	if err != nil {
		return f.ClusterError("creating ACLs", err)
	}
	for i, r := range resp.Results {
		if e := kerr.ErrorForCode(r.ErrorCode); e != nil {
			what := ""
			if i < len(bs) {
				what = bs[i].String() + ": "
			}
			return fmt.Errorf("%s%w", what, cmdutil.WithMessage(e, deref(r.ErrorMessage)))
		}
	}
	return nil
}

func newListCommand(f *cmdutil.Factory) *cobra.Command {
	var fl Flags
	var out cmdutil.OutputFlag
	cmd := &cobra.Command{
		Use:   "list [--topic T | --group G | --transactional-id X | --cluster]... [--principal P]... [--resource-pattern-type literal|prefixed|match|any]",
		Short: "List ACLs (DescribeAcls): all, or those of the resources and principals named",
		Long: `List ACLs. Without a resource every ACL is listed. With resources, the
pattern type selects as kafka-acls.sh: literal or prefixed patterns of exactly
those names (default literal), any (exact names, any pattern type), or match
(every ACL that applies to those names: the literal name, the literal *, and
every prefix).`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := out.Validate(); err != nil {
				return err
			}
			fl.patternSet = cmd.Flags().Changed("resource-pattern-type")
			fs, err := fl.Filters(true)
			if err != nil {
				return err
			}
			bs, err := describe(cmd.Context(), f, fs)
			if err != nil {
				return err
			}
			w := f.IO.Out
			return out.Print(w, rows(bs), func() error { return writeTable(w, rows(bs), "No ACLs.") })
		},
	}
	fl.registerResources(cmd)
	cmd.Flags().StringSliceVar(&fl.Principals, "principal", nil, "only ACLs of this principal (repeatable)")
	cmd.Flags().StringSliceVar(&fl.Operations, "operation", nil, "only ACLs of this operation (repeatable)")
	out.Register(cmd)
	return cmd
}

func newDeleteCommand(f *cmdutil.Factory) *cobra.Command {
	var fl Flags
	var dry bool
	var out cmdutil.OutputFlag
	cmd := &cobra.Command{
		Use:   "delete (--topic T | --group G | --transactional-id X | --cluster)... [--allow-principal P | --deny-principal P]... [--operation OP]...",
		Short: "Delete the ACLs the options select (DeleteAcls)",
		Long: `Delete ACLs of the resources named, narrowed by principal (allow or deny)
and operation when given; --resource-pattern-type as for list (match deletes
every ACL that applies to the names: use --dry-run first).`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := out.Validate(); err != nil {
				return err
			}
			fl.patternSet = true
			fs, err := fl.Filters(false)
			if err != nil {
				return err
			}
			w := f.IO.Out
			if dry {
				bs, err := describe(cmd.Context(), f, fs)
				if err != nil {
					return err
				}
				return out.Print(w, rows(bs), func() error {
					fmt.Fprintf(w, "Would delete %d ACLs:\n", len(bs))
					return writeTable(w, rows(bs), "")
				})
			}
			bs, err := remove(cmd, f, fs)
			if err != nil {
				return err
			}
			return out.Print(w, rows(bs), func() error {
				fmt.Fprintf(w, "Deleted %d ACLs:\n", len(bs))
				return writeTable(w, rows(bs), "")
			})
		},
	}
	fl.registerResources(cmd)
	cmd.Flags().StringSliceVar(&fl.AllowPrincipals, "allow-principal", nil, "only ALLOW ACLs of this principal (repeatable)")
	cmd.Flags().StringSliceVar(&fl.DenyPrincipals, "deny-principal", nil, "only DENY ACLs of this principal (repeatable)")
	cmd.Flags().StringSliceVar(&fl.Operations, "operation", nil, "only ACLs of this operation (repeatable)")
	cmd.Flags().BoolVar(&dry, "dry-run", false, "print the ACLs that would be deleted and delete nothing")
	out.Register(cmd)
	return cmd
}

func remove(cmd *cobra.Command, f *cmdutil.Factory, fs []acl.Filter) ([]acl.Binding, error) {
	cl, err := f.Client()
	if err != nil {
		return nil, err
	}
	defer cl.Close()
	rctx, cancel := f.RequestContext(cmd.Context())
	defer cancel()
	req := kmsg.NewPtrDeleteACLsRequest()
	for _, flt := range fs {
		d := kmsg.NewDeleteACLsRequestFilter()
		d.ResourceType, d.ResourceName, d.ResourcePatternType = kmsg.ACLResourceType(flt.Type), flt.Name, kmsg.ACLResourcePatternType(flt.Pattern)
		d.Principal, d.Host, d.Operation, d.PermissionType = flt.Principal, flt.Host, kmsg.ACLOperation(flt.Operation), kmsg.ACLPermissionType(flt.Permission)
		req.Filters = append(req.Filters, d)
	}
	resp, err := req.RequestWith(rctx, cl)
	if err != nil {
		return nil, f.ClusterError("deleting ACLs", err)
	}
	var out []acl.Binding
	for _, r := range resp.Results {
		if e := kerr.ErrorForCode(r.ErrorCode); e != nil {
			return nil, cmdutil.WithMessage(e, deref(r.ErrorMessage))
		}
		for _, m := range r.MatchingACLs {
			out = append(out, acl.Binding{Resource: acl.Resource{Type: acl.ResourceType(m.ResourceType), Name: m.ResourceName, Pattern: acl.PatternType(m.ResourcePatternType)},
				Entry: acl.Entry{Principal: m.Principal, Host: m.Host, Operation: acl.Operation(m.Operation), Permission: acl.Permission(m.PermissionType)}})
		}
	}
	sortBindings(out)
	return out, nil
}
