package topic

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/spf13/cobra"
	"github.com/twmb/franz-go/pkg/kadm"

	"github.com/ktoolhq/ktool/tools/cmdutil"
)

// AlterConfigOptions are the inputs of `ktool topic alter-config`.
type AlterConfigOptions struct {
	Factory      *cmdutil.Factory
	Topics       []string
	Set          []string
	Delete       []string
	ValidateOnly bool
}

// NewAlterConfigCommand returns `ktool topic alter-config`.
func NewAlterConfigCommand(f *cmdutil.Factory, runF func(context.Context, *AlterConfigOptions) error) *cobra.Command {
	opts := &AlterConfigOptions{Factory: f}
	cmd := &cobra.Command{
		Use:               "alter-config TOPIC... --set k=v | --delete k",
		ValidArgsFunction: cmdutil.CompleteTopics(f),
		Short:             "Set or remove topic config overrides",
		Long: `Set or remove configs on topics. --delete removes the override so the
broker's default applies again. Other overrides are left as they are.`,
		Example: `  ktool topic alter-config orders --set retention.ms=3600000
  ktool topic alter-config orders --delete cleanup.policy`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.Topics = args
			if len(opts.Set) == 0 && len(opts.Delete) == 0 {
				return cmdutil.Usagef("nothing to change: pass --set key=value or --delete key")
			}
			if runF != nil {
				return runF(cmd.Context(), opts)
			}
			return runAlterConfig(cmd.Context(), opts)
		},
	}
	fl := cmd.Flags()
	fl.StringArrayVarP(&opts.Set, "set", "s", nil, "config key=value to set (repeatable)")
	fl.StringArrayVarP(&opts.Delete, "delete", "d", nil, "config key to remove (repeatable)")
	fl.BoolVar(&opts.ValidateOnly, "validate-only", false, "ask the cluster to validate without changing anything")
	return cmd
}

func (o *AlterConfigOptions) alterations() ([]kadm.AlterConfig, error) {
	set, err := ParseConfigs(o.Set)
	if err != nil {
		return nil, cmdutil.UsageError(err)
	}
	var out []kadm.AlterConfig
	for k, v := range set {
		out = append(out, kadm.AlterConfig{Op: kadm.SetConfig, Name: k, Value: kmsgString(v)})
	}
	for _, k := range o.Delete {
		k = strings.TrimSpace(k)
		if k == "" {
			return nil, cmdutil.Usagef("--delete needs a config name")
		}
		if _, both := set[k]; both {
			return nil, cmdutil.Usagef("config %q is both set and deleted", k)
		}
		out = append(out, kadm.AlterConfig{Op: kadm.DeleteConfig, Name: k})
	}
	return out, nil
}

func kmsgString(s string) *string { return &s }

func runAlterConfig(ctx context.Context, o *AlterConfigOptions) error {
	alts, err := o.alterations()
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
	alter := adm.AlterTopicConfigs
	if o.ValidateOnly {
		alter = adm.ValidateAlterTopicConfigs
	}
	resps, err := alter(rctx, alts, o.Topics...)
	if err != nil {
		return o.Factory.ClusterError("altering topic configs", err)
	}
	var errs []error
	for _, r := range resps {
		if r.Err != nil {
			errs = append(errs, fmt.Errorf("altering configs of topic %q: %w", r.Name, cmdutil.WithMessage(r.Err, r.ErrMessage)))
			continue
		}
		verb := "Altered"
		if o.ValidateOnly {
			verb = "Validated (not applied)"
		}
		fmt.Fprintf(o.Factory.IO.Out, "%s configs of topic %s.\n", verb, r.Name)
	}
	return errors.Join(errs...)
}
