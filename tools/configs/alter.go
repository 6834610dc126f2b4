package configs

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	"github.com/spf13/cobra"
	"github.com/twmb/franz-go/pkg/kadm"

	"github.com/ktoolhq/ktool/tools/cmdutil"
)

// AlterOptions are the inputs of `ktool config alter`.
type AlterOptions struct {
	Factory      *cmdutil.Factory
	Entity       Entity
	Set          []string
	Delete       []string
	Append       []string
	Subtract     []string
	ValidateOnly bool
}

// NewAlterCommand returns `ktool config alter`.
func NewAlterCommand(f *cmdutil.Factory, runF func(context.Context, *AlterOptions) error) *cobra.Command {
	opts := &AlterOptions{Factory: f}
	var def bool
	cmd := &cobra.Command{
		Use:               "alter (topic NAME | broker ID | user NAME | client ID | TYPE --default) --set k=v | --delete k | --append k=v | --subtract k=v",
		ValidArgsFunction: completeEntity(f),
		Short:             "Set or remove configs of a topic, broker, user or client",
		Long: `Alter changes single configs, as kafka-configs.sh --alter does
(IncrementalAlterConfigs for topics and brokers, AlterClientQuotas for users and
clients); configs not named are left as they are. --delete removes a setting so
the next one in line applies again. --append and --subtract add or remove items
of a list config.

A broker's dynamic configs (and with --default the cluster-wide default every
broker falls back to) are stored in ZooKeeper under /config/brokers and take
effect without a restart where Kafka allows it: the log.* defaults topics fall
back to and the replication throttle rates. User and client configs are quotas:
producer_byte_rate, consumer_byte_rate, request_percentage.`,
		Example: `  ktool config alter topic orders --set retention.ms=3600000
  ktool config alter broker 1 --set leader.replication.throttled.rate=10485760
  ktool config alter broker --default --set log.retention.ms=86400000
  ktool config alter broker 1 --delete leader.replication.throttled.rate
  ktool config alter user alice --set producer_byte_rate=1048576
  ktool config alter client --default --set consumer_byte_rate=2097152`,
		RunE: func(cmd *cobra.Command, args []string) error {
			e, err := ParseEntity(args, def)
			if err != nil {
				return err
			}
			opts.Entity = e
			if len(opts.Set)+len(opts.Delete)+len(opts.Append)+len(opts.Subtract) == 0 {
				return cmdutil.Usagef("nothing to change: pass --set k=v, --delete k, --append k=v or --subtract k=v")
			}
			if runF != nil {
				return runF(cmd.Context(), opts)
			}
			return RunAlter(cmd.Context(), opts)
		},
	}
	fl := cmd.Flags()
	fl.BoolVar(&def, "default", false, "the cluster-wide default of brokers, or the default quota of users or clients")
	fl.StringArrayVarP(&opts.Set, "set", "s", nil, "config key=value to set (repeatable)")
	fl.StringArrayVarP(&opts.Delete, "delete", "d", nil, "config key to remove (repeatable)")
	fl.StringArrayVar(&opts.Append, "append", nil, "key=item to add to a list config (repeatable)")
	fl.StringArrayVar(&opts.Subtract, "subtract", nil, "key=item to remove from a list config (repeatable)")
	fl.BoolVar(&opts.ValidateOnly, "validate-only", false, "ask the cluster to validate without changing anything")
	return cmd
}

// Alterations turns the flags into kadm's operations, refusing a config named twice.
func (o *AlterOptions) Alterations() ([]kadm.AlterConfig, error) {
	var out []kadm.AlterConfig
	seen := map[string]bool{}
	add := func(op kadm.IncrementalOp, name string, value *string) error {
		name = strings.TrimSpace(name)
		if name == "" {
			return cmdutil.Usagef("a config needs a name")
		}
		if seen[name] {
			return cmdutil.Usagef("config %q is named twice", name)
		}
		seen[name] = true
		out = append(out, kadm.AlterConfig{Op: op, Name: name, Value: value})
		return nil
	}
	for _, kv := range []struct {
		op   kadm.IncrementalOp
		list []string
	}{{kadm.SetConfig, o.Set}, {kadm.AppendConfig, o.Append}, {kadm.SubtractConfig, o.Subtract}} {
		for _, s := range kv.list {
			k, v, ok := strings.Cut(s, "=")
			if !ok {
				return nil, cmdutil.Usagef("%q is not key=value", s)
			}
			if err := add(kv.op, k, &v); err != nil {
				return nil, err
			}
		}
	}
	for _, k := range o.Delete {
		if err := add(kadm.DeleteConfig, k, nil); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// RunAlter is `ktool config alter`.
func RunAlter(ctx context.Context, o *AlterOptions) error {
	alts, err := o.Alterations()
	if err != nil {
		return err
	}
	adm, err := o.Factory.Admin()
	if err != nil {
		return err
	}
	defer adm.Close()
	rctx, cancel := o.Factory.RequestContext(ctx)
	defer cancel()
	if err := Alter(rctx, adm, o.Entity, alts, o.ValidateOnly); err != nil {
		return o.Factory.ClusterError("altering the configs of "+o.Entity.String(), err)
	}
	verb := "Altered"
	if o.ValidateOnly {
		verb = "Validated (not applied)"
	}
	_, err = fmt.Fprintf(o.Factory.IO.Out, "%s configs of %s.\n", verb, o.Entity)
	return err
}

// Alter applies alts to the entity.
func Alter(ctx context.Context, adm *kadm.Client, e Entity, alts []kadm.AlterConfig, validateOnly bool) error {
	if e.Type == User || e.Type == Client {
		return alterQuotas(ctx, adm, e, alts, validateOnly)
	}
	var resps kadm.AlterConfigsResponses
	var err error
	switch {
	case e.Type == Topic && validateOnly:
		resps, err = adm.ValidateAlterTopicConfigs(ctx, alts, e.Name)
	case e.Type == Topic:
		resps, err = adm.AlterTopicConfigs(ctx, alts, e.Name)
	case validateOnly && e.Default:
		resps, err = adm.ValidateAlterBrokerConfigs(ctx, alts)
	case validateOnly:
		resps, err = adm.ValidateAlterBrokerConfigs(ctx, alts, e.brokerID())
	case e.Default:
		resps, err = adm.AlterBrokerConfigs(ctx, alts)
	default:
		resps, err = adm.AlterBrokerConfigs(ctx, alts, e.brokerID())
	}
	if err != nil && len(resps) == 0 {
		return err
	}
	for _, r := range resps {
		if r.Err != nil {
			return cmdutil.WithMessage(r.Err, r.ErrMessage)
		}
	}
	return err
}

func alterQuotas(ctx context.Context, adm *kadm.Client, e Entity, alts []kadm.AlterConfig, validateOnly bool) error {
	comp := kadm.ClientQuotaEntityComponent{Type: quotaType(e.Type)}
	if !e.Default {
		name := e.Name
		comp.Name = &name
	}
	entry := kadm.AlterClientQuotaEntry{Entity: kadm.ClientQuotaEntity{comp}}
	for _, a := range alts {
		switch a.Op {
		case kadm.SetConfig:
			v, err := strconv.ParseFloat(*a.Value, 64)
			if err != nil || v < 0 {
				return cmdutil.Usagef("quota %s=%s: want a number, 0 or more", a.Name, *a.Value)
			}
			entry.Ops = append(entry.Ops, kadm.AlterClientQuotaOp{Key: a.Name, Value: v})
		case kadm.DeleteConfig:
			entry.Ops = append(entry.Ops, kadm.AlterClientQuotaOp{Key: a.Name, Remove: true})
		default:
			return cmdutil.Usagef("quotas are numbers: --append and --subtract do not apply to %s", e)
		}
	}
	call := adm.AlterClientQuotas
	if validateOnly {
		call = adm.ValidateAlterClientQuotas
	}
	resps, err := call(ctx, []kadm.AlterClientQuotaEntry{entry})
	if err != nil {
		return quotaError(err)
	}
	for _, r := range resps {
		if r.Err != nil {
			return cmdutil.WithMessage(r.Err, r.ErrMessage)
		}
	}
	return nil
}
