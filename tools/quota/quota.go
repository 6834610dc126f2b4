package quota

import (
	"context"
	"fmt"
	"io"
	"sort"
	"strconv"

	"github.com/spf13/cobra"
	"github.com/twmb/franz-go/pkg/kadm"

	"github.com/ktoolhq/ktool/tools/cmdutil"
)

// The quota keys, as Kafka names them.
const (
	ProducerByteRate  = "producer_byte_rate"
	ConsumerByteRate  = "consumer_byte_rate"
	RequestPercentage = "request_percentage"
)

// Keys lists the quota keys in display order.
var Keys = []string{ProducerByteRate, ConsumerByteRate, RequestPercentage}

// Entity names a quota's owner. Empty User and !UserDefault: no user part.
type Entity struct {
	User          string `json:"user,omitempty" yaml:"user,omitempty"`
	UserDefault   bool   `json:"user_default,omitempty" yaml:"user_default,omitempty"`
	ClientID      string `json:"client_id,omitempty" yaml:"client_id,omitempty"`
	ClientDefault bool   `json:"client_default,omitempty" yaml:"client_default,omitempty"`
}

func (e Entity) hasUser() bool   { return e.User != "" || e.UserDefault }
func (e Entity) hasClient() bool { return e.ClientID != "" || e.ClientDefault }

func part(name string, def bool) string {
	if def {
		return "<default>"
	}
	return name
}

func (e Entity) String() string {
	switch {
	case e.hasUser() && e.hasClient():
		return "user " + part(e.User, e.UserDefault) + " client-id " + part(e.ClientID, e.ClientDefault)
	case e.hasUser():
		return "user " + part(e.User, e.UserDefault)
	}
	return "client-id " + part(e.ClientID, e.ClientDefault)
}

// components is the entity as the quota APIs carry it (a nil name is <default>).
func (e Entity) components() []kadm.ClientQuotaEntityComponent {
	var out []kadm.ClientQuotaEntityComponent
	name := func(n string, def bool) *string {
		if def {
			return nil
		}
		return &n
	}
	if e.hasUser() {
		out = append(out, kadm.ClientQuotaEntityComponent{Type: "user", Name: name(e.User, e.UserDefault)})
	}
	if e.hasClient() {
		out = append(out, kadm.ClientQuotaEntityComponent{Type: "client-id", Name: name(e.ClientID, e.ClientDefault)})
	}
	return out
}

// Quota is one entity's quotas, as listed.
type Quota struct {
	Entity `json:",inline" yaml:",inline"`
	Values map[string]float64 `json:"quotas" yaml:"quotas"`
}

// entityFlags are --user, --default-user, --client-id and --default-client-id.
type entityFlags struct {
	user, client       string
	defUser, defClient bool
}

func (f *entityFlags) register(cmd *cobra.Command, what string) {
	cmd.Flags().StringVar(&f.user, "user", "", "the user (principal name) "+what)
	cmd.Flags().BoolVar(&f.defUser, "default-user", false, "the <default> user entity "+what)
	cmd.Flags().StringVar(&f.client, "client-id", "", "the client id "+what)
	cmd.Flags().BoolVar(&f.defClient, "default-client-id", false, "the <default> client-id entity "+what)
}

// entity checks the flags name exactly one entity.
func (f *entityFlags) entity(cmd *cobra.Command) (Entity, error) {
	userSet, clientSet := cmd.Flags().Changed("user"), cmd.Flags().Changed("client-id")
	switch {
	case userSet && f.defUser:
		return Entity{}, cmdutil.Usagef("pass --user or --default-user, not both")
	case clientSet && f.defClient:
		return Entity{}, cmdutil.Usagef("pass --client-id or --default-client-id, not both")
	case userSet && f.user == "":
		return Entity{}, cmdutil.Usagef("empty --user")
	case clientSet && f.client == "":
		return Entity{}, cmdutil.Usagef("empty --client-id")
	}
	e := Entity{User: f.user, UserDefault: f.defUser, ClientID: f.client, ClientDefault: f.defClient}
	if !e.hasUser() && !e.hasClient() {
		return Entity{}, cmdutil.Usagef("name the entity: --user NAME, --default-user, --client-id ID, --default-client-id (a user and a client id together for both)")
	}
	return e, nil
}

// NewCommand returns `ktool quota`.
func NewCommand(f *cmdutil.Factory) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "quota",
		Short: "Manage client quotas (set, list, delete)",
		Long: `Manage Kafka client quotas: producer_byte_rate and consumer_byte_rate (bytes per
second) and request_percentage (percent of one request thread's time), of a
user, a client id, or a user and client id together, or their <default>
entities. The broker applies the most specific quota that is set, in Kafka's
order: user+client-id, user+<default> client-id, user, <default> user+client-id,
<default> user+<default> client-id, <default> user, client-id, <default>
client-id. A client over its quota is answered with a throttle time and not
read from for that long (KIP-219). Works against any cluster serving
DescribeClientQuotas and AlterClientQuotas (Kafka 2.6+).`,
		Example: `  ktool quota set --client-id billing --producer-byte-rate 1048576
  ktool quota set --user alice --default-client-id --consumer-byte-rate 2097152
  ktool quota set --default-user --request-percentage 50
  ktool quota list
  ktool quota list --user alice -o json
  ktool quota delete --client-id billing --quota producer_byte_rate`,
	}
	cmd.AddCommand(newSetCommand(f), newListCommand(f), newDeleteCommand(f))
	return cmd
}

func newSetCommand(f *cmdutil.Factory) *cobra.Command {
	var ef entityFlags
	var producer, consumer int64
	var request float64
	var validate bool
	cmd := &cobra.Command{
		Use:   "set (--user NAME | --default-user) (--client-id ID | --default-client-id) --producer-byte-rate N | --consumer-byte-rate N | --request-percentage P",
		Short: "Set quotas of a user, a client id or both",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			e, err := ef.entity(cmd)
			if err != nil {
				return err
			}
			var ops []kadm.AlterClientQuotaOp
			if cmd.Flags().Changed("producer-byte-rate") {
				if producer <= 0 {
					return cmdutil.Usagef("--producer-byte-rate must be positive")
				}
				ops = append(ops, kadm.AlterClientQuotaOp{Key: ProducerByteRate, Value: float64(producer)})
			}
			if cmd.Flags().Changed("consumer-byte-rate") {
				if consumer <= 0 {
					return cmdutil.Usagef("--consumer-byte-rate must be positive")
				}
				ops = append(ops, kadm.AlterClientQuotaOp{Key: ConsumerByteRate, Value: float64(consumer)})
			}
			if cmd.Flags().Changed("request-percentage") {
				if !(request > 0) {
					return cmdutil.Usagef("--request-percentage must be positive")
				}
				ops = append(ops, kadm.AlterClientQuotaOp{Key: RequestPercentage, Value: request})
			}
			if len(ops) == 0 {
				return cmdutil.Usagef("set at least one of --producer-byte-rate, --consumer-byte-rate, --request-percentage")
			}
			if err := alter(cmd.Context(), f, e, ops, validate); err != nil {
				return err
			}
			verb := "Set"
			if validate {
				verb = "Would set"
			}
			for _, op := range ops {
				fmt.Fprintf(f.IO.Out, "%s %s=%s on %s.\n", verb, op.Key, formatValue(op.Value), e)
			}
			return nil
		},
	}
	ef.register(cmd, "to set quotas of")
	cmd.Flags().Int64Var(&producer, "producer-byte-rate", 0, "bytes per second the entity's producers may append")
	cmd.Flags().Int64Var(&consumer, "consumer-byte-rate", 0, "bytes per second the entity's consumers may fetch")
	cmd.Flags().Float64Var(&request, "request-percentage", 0, "percent of one request thread's time the entity may use")
	cmd.Flags().BoolVar(&validate, "dry-run", false, "have the cluster check the change without making it (validate_only)")
	return cmd
}

func newDeleteCommand(f *cmdutil.Factory) *cobra.Command {
	var ef entityFlags
	var keys []string
	cmd := &cobra.Command{
		Use:   "delete (--user NAME | --default-user) (--client-id ID | --default-client-id) [--quota KEY]...",
		Short: "Remove quotas of a user, a client id or both (all of them without --quota)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			e, err := ef.entity(cmd)
			if err != nil {
				return err
			}
			for _, k := range keys {
				if !known(k) {
					return cmdutil.Usagef("unknown quota %q (want %s, %s or %s)", k, ProducerByteRate, ConsumerByteRate, RequestPercentage)
				}
			}
			if len(keys) == 0 {
				keys = Keys
			}
			ops := make([]kadm.AlterClientQuotaOp, len(keys))
			for i, k := range keys {
				ops[i] = kadm.AlterClientQuotaOp{Key: k, Remove: true}
			}
			if err := alter(cmd.Context(), f, e, ops, false); err != nil {
				return err
			}
			fmt.Fprintf(f.IO.Out, "Removed %v from %s.\n", keys, e)
			return nil
		},
	}
	ef.register(cmd, "to remove quotas of")
	cmd.Flags().StringSliceVar(&keys, "quota", nil, "a quota to remove: producer_byte_rate, consumer_byte_rate or request_percentage (repeatable)")
	_ = cmd.RegisterFlagCompletionFunc("quota", func(*cobra.Command, []string, string) ([]string, cobra.ShellCompDirective) {
		return Keys, cobra.ShellCompDirectiveNoFileComp
	})
	return cmd
}

func known(k string) bool {
	for _, s := range Keys {
		if s == k {
			return true
		}
	}
	return false
}

func alter(ctx context.Context, f *cmdutil.Factory, e Entity, ops []kadm.AlterClientQuotaOp, validate bool) error {
	adm, err := f.Admin()
	if err != nil {
		return err
	}
	defer adm.Close()
	rctx, cancel := f.RequestContext(ctx)
	defer cancel()
	call := adm.AlterClientQuotas
	if validate {
		call = adm.ValidateAlterClientQuotas
	}
	res, err := call(rctx, []kadm.AlterClientQuotaEntry{{Entity: e.components(), Ops: ops}})
	if err != nil {
		return f.ClusterError("changing the quotas of "+e.String(), err)
	}
	for _, r := range res {
		if r.Err != nil {
			return cmdutil.WithMessage(r.Err, r.ErrMessage)
		}
	}
	return nil
}

func newListCommand(f *cmdutil.Factory) *cobra.Command {
	var ef entityFlags
	var strict bool
	var out cmdutil.OutputFlag
	cmd := &cobra.Command{
		Use:   "list [--user NAME | --default-user] [--client-id ID | --default-client-id] [--strict]",
		Short: "List quotas (all, or those of the entities named)",
		Long: `List the quotas set, with DescribeClientQuotas. Without flags every quota is
listed; --user/--client-id (or their --default-* forms) narrow the list to
entities with that user or client id; --strict leaves out entities with a part
not named (a user's user+client-id quotas).`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := out.Validate(); err != nil {
				return err
			}
			filter, err := listFilter(cmd, &ef)
			if err != nil {
				return err
			}
			qs, err := List(cmd.Context(), f, filter, strict)
			if err != nil {
				return err
			}
			w := f.IO.Out
			return out.Print(w, qs, func() error { return writeList(w, qs) })
		},
	}
	ef.register(cmd, "whose quotas to list")
	cmd.Flags().BoolVar(&strict, "strict", false, "only entities made of exactly the parts named")
	out.Register(cmd)
	return cmd
}

func listFilter(cmd *cobra.Command, ef *entityFlags) ([]kadm.DescribeClientQuotaComponent, error) {
	var out []kadm.DescribeClientQuotaComponent
	add := func(typ, flag, name string, def bool) error {
		set := cmd.Flags().Changed(flag)
		switch {
		case set && def:
			return cmdutil.Usagef("pass --%s or --default-%s, not both", flag, flag)
		case set:
			out = append(out, kadm.DescribeClientQuotaComponent{Type: typ, MatchName: &name})
		case def:
			out = append(out, kadm.DescribeClientQuotaComponent{Type: typ, MatchType: 1})
		}
		return nil
	}
	if err := add("user", "user", ef.user, ef.defUser); err != nil {
		return nil, err
	}
	if err := add("client-id", "client-id", ef.client, ef.defClient); err != nil {
		return nil, err
	}
	return out, nil
}

// List describes the quotas the filter matches.
func List(ctx context.Context, f *cmdutil.Factory, filter []kadm.DescribeClientQuotaComponent, strict bool) ([]Quota, error) {
	adm, err := f.Admin()
	if err != nil {
		return nil, err
	}
	defer adm.Close()
	rctx, cancel := f.RequestContext(ctx)
	defer cancel()
	qs, err := adm.DescribeClientQuotas(rctx, strict, filter)
	if err != nil {
		return nil, f.ClusterError("listing client quotas", err)
	}
	out := make([]Quota, 0, len(qs))
	for _, q := range qs {
		var e Entity
		for _, c := range q.Entity {
			switch c.Type {
			case "user":
				e.UserDefault = c.Name == nil
				if c.Name != nil {
					e.User = *c.Name
				}
			case "client-id":
				e.ClientDefault = c.Name == nil
				if c.Name != nil {
					e.ClientID = *c.Name
				}
			}
		}
		v := map[string]float64{}
		for _, qv := range q.Values {
			v[qv.Key] = qv.Value
		}
		out = append(out, Quota{Entity: e, Values: v})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].String() < out[j].String() })
	return out, nil
}

func formatValue(v float64) string { return strconv.FormatFloat(v, 'f', -1, 64) }

func writeList(w io.Writer, qs []Quota) error {
	if len(qs) == 0 {
		_, err := fmt.Fprintln(w, "No quotas.")
		return err
	}
	tbl := cmdutil.NewTable(w, "User", "Client-ID", "Quota", "Value")
	for _, q := range qs {
		user, client := "", ""
		if q.hasUser() {
			user = part(q.User, q.UserDefault)
		}
		if q.hasClient() {
			client = part(q.ClientID, q.ClientDefault)
		}
		keys := make([]string, 0, len(q.Values))
		for k := range q.Values {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			tbl.Append([]string{user, client, k, formatValue(q.Values[k])})
		}
	}
	return tbl.Render()
}
