package configs

import (
	"context"
	"fmt"
	"io"
	"sort"
	"strconv"
	"strings"

	"github.com/spf13/cobra"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/ktoolhq/ktool/tools/cmdutil"
)

// Entry is one config of an entity.
type Entry struct {
	Name      string `json:"name" yaml:"name"`
	Value     string `json:"value" yaml:"value"`
	Null      bool   `json:"null,omitempty" yaml:"null,omitempty"`
	Sensitive bool   `json:"sensitive" yaml:"sensitive"`
	// Source is where the value comes from, in Kafka's names:
	// DYNAMIC_TOPIC_CONFIG, DYNAMIC_BROKER_CONFIG,
	// DYNAMIC_DEFAULT_BROKER_CONFIG, STATIC_BROKER_CONFIG, DEFAULT_CONFIG;
	// QUOTA for user and client quotas.
	Source string `json:"source" yaml:"source"`
	// Synonyms are the settings the value falls back to, most preferred first
	// (with --all).
	Synonyms []Synonym `json:"synonyms,omitempty" yaml:"synonyms,omitempty"`
}

// Synonym is one fallback of a config.
type Synonym struct {
	Name   string `json:"name" yaml:"name"`
	Value  string `json:"value" yaml:"value"`
	Source string `json:"source" yaml:"source"`
}

// Described is an entity's configs.
type Described struct {
	Entity  Entity  `json:"entity" yaml:"entity"`
	All     bool    `json:"all" yaml:"all"`
	Configs []Entry `json:"configs" yaml:"configs"`
}

// DescribeOptions are the inputs of `ktool config describe`.
type DescribeOptions struct {
	Factory *cmdutil.Factory
	Output  cmdutil.OutputFlag
	Entity  Entity
	All     bool
}

// NewDescribeCommand returns `ktool config describe`.
func NewDescribeCommand(f *cmdutil.Factory, runF func(context.Context, *DescribeOptions) error) *cobra.Command {
	opts := &DescribeOptions{Factory: f}
	var def bool
	cmd := &cobra.Command{
		Use:               "describe (topic NAME | broker ID | user NAME | client ID | TYPE --default)",
		ValidArgsFunction: completeEntity(f),
		Short:             "Show the configs set on a topic, broker, user or client",
		Long: `Describe shows what kafka-configs.sh --describe shows: a topic's overrides,
a broker's dynamic configs (per broker, and the cluster-wide dynamic default
with --default), a user's or client's quotas. --all adds every other config of
a topic or broker with the source of its value (DYNAMIC_TOPIC_CONFIG,
DYNAMIC_BROKER_CONFIG, DYNAMIC_DEFAULT_BROKER_CONFIG, STATIC_BROKER_CONFIG,
DEFAULT_CONFIG) and its synonyms: the settings it falls back to.`,
		Example: `  ktool config describe topic orders
  ktool config describe topic orders --all
  ktool config describe broker 1 --all
  ktool config describe broker --default
  ktool config describe user alice
  ktool config describe client billing-app -o json`,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := opts.Output.Validate(); err != nil {
				return err
			}
			e, err := ParseEntity(args, def)
			if err != nil {
				return err
			}
			opts.Entity = e
			if runF != nil {
				return runF(cmd.Context(), opts)
			}
			return RunDescribe(cmd.Context(), opts)
		},
	}
	cmd.Flags().BoolVar(&def, "default", false, "the cluster-wide default of brokers, or the default quota of users or clients")
	cmd.Flags().BoolVar(&opts.All, "all", false, "every config of a topic or broker, with sources and synonyms")
	opts.Output.Register(cmd)
	return cmd
}

// Describe reads an entity's configs.
func Describe(ctx context.Context, adm *kadm.Client, e Entity, all bool) (Described, error) {
	d := Described{Entity: e, All: all, Configs: []Entry{}}
	switch e.Type {
	case User, Client:
		return describeQuotas(ctx, adm, e, all)
	}
	var rcs kadm.ResourceConfigs
	var err error
	if e.Type == Topic {
		rcs, err = adm.DescribeTopicConfigs(ctx, e.Name)
	} else if e.Default {
		rcs, err = adm.DescribeBrokerConfigs(ctx)
	} else {
		rcs, err = adm.DescribeBrokerConfigs(ctx, e.brokerID())
	}
	if err != nil && len(rcs) == 0 {
		return d, err
	}
	if len(rcs) != 1 {
		return d, fmt.Errorf("the cluster answered for %d resources", len(rcs))
	}
	rc := rcs[0]
	if rc.Err != nil {
		return d, cmdutil.WithMessage(rc.Err, rc.ErrMessage)
	}
	for _, c := range rc.Configs {
		if !all && !shown(e, c.Source) {
			continue
		}
		en := Entry{Name: c.Key, Value: c.MaybeValue(), Null: c.Value == nil && !c.Sensitive, Sensitive: c.Sensitive, Source: c.Source.String()}
		if all {
			for _, s := range c.Synonyms {
				sv := ""
				if s.Value != nil {
					sv = *s.Value
				}
				en.Synonyms = append(en.Synonyms, Synonym{Name: s.Key, Value: sv, Source: s.Source.String()})
			}
		}
		d.Configs = append(d.Configs, en)
	}
	sort.Slice(d.Configs, func(i, j int) bool { return d.Configs[i].Name < d.Configs[j].Name })
	return d, nil
}

// shown says which configs kafka-configs.sh --describe lists without --all:
// what is set on the entity itself.
func shown(e Entity, src kmsg.ConfigSource) bool {
	switch {
	case e.Type == Topic:
		return src == kmsg.ConfigSourceDynamicTopicConfig
	case e.Default:
		return src == kmsg.ConfigSourceDynamicDefaultBrokerConfig
	}
	return src == kmsg.ConfigSourceDynamicBrokerConfig || src == kmsg.ConfigSourceDynamicDefaultBrokerConfig
}

// quotaComponent matches exactly the entity (or its default).
func quotaComponent(e Entity) kadm.DescribeClientQuotaComponent {
	c := kadm.DescribeClientQuotaComponent{Type: quotaType(e.Type)}
	if e.Default {
		c.MatchType = 1
	} else {
		name := e.Name
		c.MatchName = &name
	}
	return c
}

func describeQuotas(ctx context.Context, adm *kadm.Client, e Entity, all bool) (Described, error) {
	d := Described{Entity: e, All: all, Configs: []Entry{}}
	qs, err := adm.DescribeClientQuotas(ctx, true, []kadm.DescribeClientQuotaComponent{quotaComponent(e)})
	if err != nil {
		return d, quotaError(err)
	}
	for _, q := range qs {
		for _, v := range q.Values {
			d.Configs = append(d.Configs, Entry{Name: v.Key, Value: formatQuota(v.Value), Source: "QUOTA"})
		}
	}
	sort.Slice(d.Configs, func(i, j int) bool { return d.Configs[i].Name < d.Configs[j].Name })
	return d, nil
}

// quotaError explains a cluster that does not serve the quota APIs.
func quotaError(err error) error {
	// kgo's words when the broker did not list the API in ApiVersions.
	if strings.Contains(err.Error(), "broker is too old") {
		return fmt.Errorf("%w (the cluster does not serve DescribeClientQuotas and AlterClientQuotas, which Kafka 2.6 added)", err)
	}
	return err
}

func formatQuota(v float64) string { return strconv.FormatFloat(v, 'f', -1, 64) }

// RunDescribe is `ktool config describe`.
func RunDescribe(ctx context.Context, o *DescribeOptions) error {
	adm, err := o.Factory.Admin()
	if err != nil {
		return err
	}
	defer adm.Close()
	rctx, cancel := o.Factory.RequestContext(ctx)
	defer cancel()
	d, err := Describe(rctx, adm, o.Entity, o.All)
	if err != nil {
		return o.Factory.ClusterError("describing the configs of "+o.Entity.String(), err)
	}
	w := o.Factory.IO.Out
	return o.Output.Print(w, d, func() error { return writeDescribed(w, d) })
}

func writeDescribed(w io.Writer, d Described) error {
	what := "Configs"
	switch {
	case d.Entity.Type == User || d.Entity.Type == Client:
		what = "Quotas"
	case d.All:
		what = "All configs"
	case d.Entity.Type == Broker:
		what = "Dynamic configs"
	case d.Entity.Type == Topic:
		what = "Overrides"
	}
	if len(d.Configs) == 0 {
		_, err := fmt.Fprintf(w, "%s of %s: none.\n", what, d.Entity)
		return err
	}
	fmt.Fprintf(w, "%s of %s:\n", what, d.Entity)
	header := []string{"Name", "Value", "Source"}
	if d.All {
		header = append(header, "Synonyms")
	}
	tbl := cmdutil.NewTable(w, header...)
	for _, c := range d.Configs {
		v := c.Value
		switch {
		case c.Sensitive:
			v = "(sensitive)"
		case c.Null:
			v = "null"
		}
		row := []string{c.Name, v, c.Source}
		if d.All {
			syn := make([]string, len(c.Synonyms))
			for i, s := range c.Synonyms {
				syn[i] = s.Source + ":" + s.Name + "=" + s.Value
			}
			row = append(row, strings.Join(syn, ", "))
		}
		tbl.Append(row)
	}
	return tbl.Render()
}
