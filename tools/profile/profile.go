package profile

import (
	"context"
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"

	"github.com/ktoolhq/ktool/tools/cmdutil"
)

// NewCommand returns `ktool profile` with its verbs.
func NewCommand(f *cmdutil.Factory) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "profile",
		Short: "Manage named connection profiles (brokers, ZooKeeper)",
		Long: `Profiles are named connection settings kept in ktool's config file
(--config-file, env KTOOL_CONFIG). The current profile applies when neither
--brokers nor KTOOL_BROKERS is given; --profile or KTOOL_PROFILE pick another.`,
	}
	cmd.AddCommand(NewCreateCommand(f, nil), NewUseCommand(f, nil), NewListCommand(f, nil), NewDeleteCommand(f, nil))
	return cmd
}

// CreateOptions are the inputs of `ktool profile create`.
type CreateOptions struct {
	Factory   *cmdutil.Factory
	Name      string
	Brokers   []string
	Zookeeper string
	ClientID  string
	Use       bool
	Force     bool
}

// NewCreateCommand returns `ktool profile create`.
func NewCreateCommand(f *cmdutil.Factory, runF func(context.Context, *CreateOptions) error) *cobra.Command {
	opts := &CreateOptions{Factory: f}
	cmd := &cobra.Command{
		Use:   "create NAME --brokers host:port,... [--zookeeper host:port/chroot]",
		Short: "Create a profile (the first one becomes current)",
		Example: `  ktool profile create local --brokers localhost:9092 --zookeeper localhost:2181
  ktool profile create prod --brokers k1:9092,k2:9092 --use`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.Name = args[0]
			// --brokers is the root's persistent flag.
			opts.Brokers = f.BrokersFlag
			if runF != nil {
				return runF(cmd.Context(), opts)
			}
			return runCreate(opts)
		},
	}
	cmd.Flags().StringVar(&opts.Zookeeper, "zookeeper", "", "ZooKeeper host:port[,host:port][/chroot] for commands that read it")
	cmd.Flags().StringVar(&opts.ClientID, "client-id", "", "client id to send to the brokers")
	cmd.Flags().BoolVar(&opts.Use, "use", false, "make it the current profile")
	cmd.Flags().BoolVar(&opts.Force, "force", false, "replace a profile of the same name")
	return cmd
}

func validName(name string) error {
	if name == "" || strings.ContainsAny(name, " \t\n/") {
		return cmdutil.Usagef("profile name %q must be non-empty without spaces or slashes", name)
	}
	return nil
}

func runCreate(o *CreateOptions) error {
	if err := validName(o.Name); err != nil {
		return err
	}
	if len(o.Brokers) == 0 {
		return cmdutil.Usagef("a profile needs --brokers host:port,...")
	}
	cfg, err := o.Factory.Config()
	if err != nil {
		return err
	}
	if _, exists := cfg.Profiles[o.Name]; exists && !o.Force {
		return cmdutil.Usagef("profile %q exists in %s; pass --force to replace it", o.Name, cfg.Path())
	}
	cfg.Profiles[o.Name] = &cmdutil.Profile{Brokers: o.Brokers, Zookeeper: o.Zookeeper, ClientID: o.ClientID}
	makeCurrent := o.Use || cfg.Current == ""
	if makeCurrent {
		cfg.Current = o.Name
	}
	if err := cfg.Save(); err != nil {
		return fmt.Errorf("saving %s: %w", cfg.Path(), err)
	}
	msg := fmt.Sprintf("Created profile %s in %s", o.Name, cfg.Path())
	if makeCurrent {
		msg += "; it is the current profile"
	}
	_, err = fmt.Fprintln(o.Factory.IO.Out, msg+".")
	return err
}

// UseOptions are the inputs of `ktool profile use`.
type UseOptions struct {
	Factory *cmdutil.Factory
	Name    string
}

// NewUseCommand returns `ktool profile use`.
func NewUseCommand(f *cmdutil.Factory, runF func(context.Context, *UseOptions) error) *cobra.Command {
	opts := &UseOptions{Factory: f}
	return &cobra.Command{
		Use:               "use NAME",
		ValidArgsFunction: cmdutil.CompleteFirstArg(cmdutil.CompleteProfiles(f)),
		Short:             "Make a profile the current one",
		Args:              cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.Name = args[0]
			if runF != nil {
				return runF(cmd.Context(), opts)
			}
			return runUse(opts)
		},
	}
}

func runUse(o *UseOptions) error {
	cfg, err := o.Factory.Config()
	if err != nil {
		return err
	}
	if _, ok := cfg.Profiles[o.Name]; !ok {
		return missing(cfg, o.Name)
	}
	cfg.Current = o.Name
	if err := cfg.Save(); err != nil {
		return fmt.Errorf("saving %s: %w", cfg.Path(), err)
	}
	_, err = fmt.Fprintf(o.Factory.IO.Out, "Now using profile %s.\n", o.Name)
	return err
}

func missing(cfg *cmdutil.Config, name string) error {
	if len(cfg.Profiles) == 0 {
		return cmdutil.Usagef("no profile %q: %s has no profiles (create one with `ktool profile create`)", name, cfg.Path())
	}
	return cmdutil.Usagef("no profile %q in %s (profiles: %s)", name, cfg.Path(), strings.Join(cfg.Names(), ", "))
}

// Entry is one row of `ktool profile list`.
type Entry struct {
	Name      string   `json:"name" yaml:"name"`
	Current   bool     `json:"current" yaml:"current"`
	Brokers   []string `json:"brokers" yaml:"brokers"`
	Zookeeper string   `json:"zookeeper" yaml:"zookeeper"`
	ClientID  string   `json:"client_id" yaml:"client_id"`
}

// ListOptions are the inputs of `ktool profile list`.
type ListOptions struct {
	Factory *cmdutil.Factory
	Output  cmdutil.OutputFlag
}

// NewListCommand returns `ktool profile list`.
func NewListCommand(f *cmdutil.Factory, runF func(context.Context, *ListOptions) error) *cobra.Command {
	opts := &ListOptions{Factory: f}
	cmd := &cobra.Command{
		Use:     "list",
		Aliases: []string{"ls"},
		Short:   "List profiles; the current one is marked",
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := opts.Output.Validate(); err != nil {
				return err
			}
			if runF != nil {
				return runF(cmd.Context(), opts)
			}
			return runList(opts)
		},
	}
	opts.Output.Register(cmd)
	return cmd
}

func runList(o *ListOptions) error {
	cfg, err := o.Factory.Config()
	if err != nil {
		return err
	}
	rows := []Entry{}
	for _, n := range cfg.Names() {
		p := cfg.Profiles[n]
		brokers := p.Brokers
		if brokers == nil {
			brokers = []string{}
		}
		rows = append(rows, Entry{Name: n, Current: n == cfg.Current, Brokers: brokers, Zookeeper: p.Zookeeper, ClientID: p.ClientID})
	}
	w := o.Factory.IO.Out
	return o.Output.Print(w, rows, func() error { return writeTable(w, rows, cfg.Path()) })
}

func writeTable(w io.Writer, rows []Entry, path string) error {
	if len(rows) == 0 {
		_, err := fmt.Fprintf(w, "No profiles in %s (create one with `ktool profile create`).\n", path)
		return err
	}
	tbl := cmdutil.NewTable(w, "Current", "Name", "Brokers", "ZooKeeper")
	for _, r := range rows {
		cur, zk := "", r.Zookeeper
		if r.Current {
			cur = "*"
		}
		if zk == "" {
			zk = "-"
		}
		if err := tbl.Append([]string{cur, r.Name, strings.Join(r.Brokers, ","), zk}); err != nil {
			return err
		}
	}
	return tbl.Render()
}

// DeleteOptions are the inputs of `ktool profile delete`.
type DeleteOptions struct {
	Factory *cmdutil.Factory
	Name    string
}

// NewDeleteCommand returns `ktool profile delete`.
func NewDeleteCommand(f *cmdutil.Factory, runF func(context.Context, *DeleteOptions) error) *cobra.Command {
	opts := &DeleteOptions{Factory: f}
	return &cobra.Command{
		Use:               "delete NAME",
		ValidArgsFunction: cmdutil.CompleteFirstArg(cmdutil.CompleteProfiles(f)),
		Aliases:           []string{"rm"},
		Short:             "Delete a profile",
		Args:              cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.Name = args[0]
			if runF != nil {
				return runF(cmd.Context(), opts)
			}
			return runDelete(opts)
		},
	}
}

func runDelete(o *DeleteOptions) error {
	cfg, err := o.Factory.Config()
	if err != nil {
		return err
	}
	if _, ok := cfg.Profiles[o.Name]; !ok {
		return missing(cfg, o.Name)
	}
	delete(cfg.Profiles, o.Name)
	msg := fmt.Sprintf("Deleted profile %s.", o.Name)
	if cfg.Current == o.Name {
		cfg.Current = ""
		msg += " No profile is current now; pick one with `ktool profile use`."
	}
	if err := cfg.Save(); err != nil {
		return fmt.Errorf("saving %s: %w", cfg.Path(), err)
	}
	_, err = fmt.Fprintln(o.Factory.IO.Out, msg)
	return err
}
