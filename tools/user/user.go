package user

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"os"
	"slices"
	"sort"
	"strings"

	"github.com/AlecAivazis/survey/v2"
	"github.com/AlecAivazis/survey/v2/terminal"
	"github.com/spf13/cobra"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/ktoolhq/ktool/internal/zkdata"
	"github.com/ktoolhq/ktool/tools/cmdutil"
	"github.com/ktoolhq/ktool/tools/zk"
)

// PasswordEnv is the environment variable `ktool user create|passwd` read the
// new password from.
const PasswordEnv = "KTOOL_USER_PASSWORD"

// Credential is one SCRAM credential of a user, as listed.
type Credential struct {
	User       string `json:"user" yaml:"user"`
	Mechanism  string `json:"mechanism" yaml:"mechanism"`
	Iterations int    `json:"iterations" yaml:"iterations"`
}

// store is where credentials are kept: the cluster (Kafka protocol) or ZooKeeper.
type store interface {
	list(ctx context.Context, users []string) ([]Credential, error)
	// upsert sets the credential of each mechanism.
	upsert(ctx context.Context, user string, ups []upsertion) error
	// remove deletes the named mechanisms' credentials.
	remove(ctx context.Context, user string, mechanisms []string) error
	close()
}

// upsertion is one mechanism's new credential: the salt and the salted
// password, what AlterUserScramCredentials carries.
type upsertion struct {
	mechanism  string
	salt       []byte
	salted     []byte
	iterations int
}

// Options are the inputs shared by the verbs.
type Options struct {
	Factory      *cmdutil.Factory
	Output       cmdutil.OutputFlag
	Zookeeper    string
	Mechanisms   []string
	Iterations   int
	PasswordFile string
}

// NewCommand returns `ktool user`.
func NewCommand(f *cmdutil.Factory) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "user",
		Short: "Manage SCRAM users (create, list, delete, passwd)",
		Long: `Manage SASL/SCRAM users as Kafka keeps them: a salted, iterated credential per
mechanism (SCRAM-SHA-256, SCRAM-SHA-512) under /config/users/<user>. By default
through the cluster (AlterUserScramCredentials); with --zookeeper written straight
to ZooKeeper, which is how the brokers' own users are made before they start.

The password is read from --password-file, from ` + PasswordEnv + `, or asked on the
terminal; never from an argument, which ps would show.`,
		Example: `  ktool user create alice                      # asks for the password
  KTOOL_USER_PASSWORD=s3cret ktool user create alice --mechanism SCRAM-SHA-512
  ktool user create broker --zookeeper localhost:2181 --password-file broker.pw
  ktool user list
  ktool user passwd alice --password-file new.pw
  ktool user delete alice`,
	}
	cmd.AddCommand(newCreateCommand(f, false), newCreateCommand(f, true), newListCommand(f), newDeleteCommand(f))
	return cmd
}

func addStoreFlags(cmd *cobra.Command, o *Options) {
	cmd.Flags().StringVar(&o.Zookeeper, "zookeeper", "", "write to this ZooKeeper host:port[/chroot] directly instead of through the cluster")
}

func newCreateCommand(f *cmdutil.Factory, passwd bool) *cobra.Command {
	o := &Options{Factory: f}
	use, short := "create USER", "Create a SCRAM user"
	if passwd {
		use, short = "passwd USER", "Change a SCRAM user's password"
	}
	cmd := &cobra.Command{
		Use: use, Short: short, Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return runCreate(cmd.Context(), o, args[0], passwd)
		},
	}
	cmd.Flags().StringSliceVar(&o.Mechanisms, "mechanism", []string{zkdata.ScramSHA256, zkdata.ScramSHA512}, "SCRAM mechanisms to store a credential for")
	cmd.Flags().IntVar(&o.Iterations, "iterations", zkdata.ScramMinIterations, fmt.Sprintf("iterations of the salted hash (%d to %d)", zkdata.ScramMinIterations, zkdata.ScramMaxIterations))
	cmd.Flags().StringVar(&o.PasswordFile, "password-file", "", "file whose first line is the password")
	addStoreFlags(cmd, o)
	_ = cmd.RegisterFlagCompletionFunc("mechanism", cobra.FixedCompletions(zkdata.ScramMechanisms, cobra.ShellCompDirectiveNoFileComp))
	return cmd
}

func newListCommand(f *cmdutil.Factory) *cobra.Command {
	o := &Options{Factory: f}
	cmd := &cobra.Command{
		Use: "list [USER...]", Short: "List SCRAM users and their mechanisms",
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := o.Output.Validate(); err != nil {
				return err
			}
			return runList(cmd.Context(), o, args)
		},
	}
	o.Output.Register(cmd)
	addStoreFlags(cmd, o)
	return cmd
}

func newDeleteCommand(f *cmdutil.Factory) *cobra.Command {
	o := &Options{Factory: f}
	cmd := &cobra.Command{
		Use: "delete USER", Short: "Delete a SCRAM user's credentials", Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return runDelete(cmd.Context(), o, args[0])
		},
	}
	cmd.Flags().StringSliceVar(&o.Mechanisms, "mechanism", nil, "delete only these mechanisms' credentials (default: all the user has)")
	addStoreFlags(cmd, o)
	return cmd
}

func (o *Options) open(ctx context.Context) (store, error) {
	if o.Zookeeper != "" {
		c, err := zk.Dial(ctx, o.Zookeeper)
		if err != nil {
			return nil, err
		}
		return zkStore{c}, nil
	}
	adm, err := o.Factory.Admin()
	if err != nil {
		return nil, err
	}
	return kafkaStore{adm, o.Factory}, nil
}

func checkMechanisms(ms []string) ([]string, error) {
	var out []string
	for _, m := range ms {
		m = strings.ToUpper(strings.TrimSpace(m))
		if zkdata.ScramMechanismType(m) == 0 {
			return nil, cmdutil.Usagef("unknown SCRAM mechanism %q (SCRAM-SHA-256 or SCRAM-SHA-512)", m)
		}
		if !slices.Contains(out, m) {
			out = append(out, m)
		}
	}
	if len(out) == 0 {
		return nil, cmdutil.Usagef("--mechanism is empty")
	}
	return out, nil
}

func runCreate(ctx context.Context, o *Options, user string, passwd bool) error {
	if err := zkdata.ValidUserName(user); err != nil {
		return cmdutil.UsageError(err)
	}
	mechs, err := checkMechanisms(o.Mechanisms)
	if err != nil {
		return err
	}
	if o.Iterations < zkdata.ScramMinIterations || o.Iterations > zkdata.ScramMaxIterations {
		return cmdutil.Usagef("--iterations must be between %d and %d", zkdata.ScramMinIterations, zkdata.ScramMaxIterations)
	}
	pass, err := readPassword(o, user)
	if err != nil {
		return err
	}
	s, err := o.open(ctx)
	if err != nil {
		return err
	}
	defer s.close()
	existing, err := s.list(ctx, []string{user})
	if err != nil {
		return err
	}
	switch {
	case passwd && len(existing) == 0:
		return fmt.Errorf("user %q has no SCRAM credential; use `ktool user create`", user)
	case !passwd && len(existing) > 0:
		return fmt.Errorf("user %q exists; use `ktool user passwd` to change the password", user)
	}
	var ups []upsertion
	for _, m := range mechs {
		salt := make([]byte, 32)
		if _, err := rand.Read(salt); err != nil {
			return err
		}
		salted, err := zkdata.SaltPassword(m, pass, salt, o.Iterations)
		if err != nil {
			return err
		}
		ups = append(ups, upsertion{mechanism: m, salt: salt, salted: salted, iterations: o.Iterations})
	}
	if err := s.upsert(ctx, user, ups); err != nil {
		return err
	}
	verb := "created"
	if passwd {
		verb = "password changed for"
	}
	fmt.Fprintf(o.Factory.IO.Out, "%s user %s (%s, %d iterations)\n", verb, user, strings.Join(mechs, ", "), o.Iterations)
	return nil
}

// readPassword takes the new password from --password-file, the environment,
// or the terminal (asked twice).
func readPassword(o *Options, user string) (string, error) {
	if o.PasswordFile != "" {
		p, err := cmdutil.ReadSecretFile(o.PasswordFile)
		if err != nil {
			return "", cmdutil.Usagef("--password-file: %v", err)
		}
		if p == "" {
			return "", cmdutil.Usagef("--password-file %s is empty", o.PasswordFile)
		}
		return p, nil
	}
	if p, ok := os.LookupEnv(PasswordEnv); ok && p != "" {
		return p, nil
	}
	ios := o.Factory.IO
	in, ok := ios.In.(terminal.FileReader)
	out, ok2 := ios.Out.(terminal.FileWriter)
	if !ios.CanPrompt() || !ok || !ok2 {
		return "", cmdutil.Usagef("no password: use --password-file FILE or %s (passwords are never taken as arguments)", PasswordEnv)
	}
	var p1, p2 string
	opt := survey.WithStdio(in, out, ios.ErrOut)
	if err := survey.AskOne(&survey.Password{Message: "Password for " + user + ":"}, &p1, opt); err != nil {
		return "", err
	}
	if err := survey.AskOne(&survey.Password{Message: "Again:"}, &p2, opt); err != nil {
		return "", err
	}
	if p1 != p2 {
		return "", errors.New("the passwords differ")
	}
	if p1 == "" {
		return "", errors.New("empty password")
	}
	return p1, nil
}

func runList(ctx context.Context, o *Options, users []string) error {
	s, err := o.open(ctx)
	if err != nil {
		return err
	}
	defer s.close()
	creds, err := s.list(ctx, users)
	if err != nil {
		return err
	}
	if creds == nil {
		creds = []Credential{}
	}
	return o.Output.Print(o.Factory.IO.Out, creds, func() error {
		t := cmdutil.NewTable(o.Factory.IO.Out, "USER", "MECHANISM", "ITERATIONS")
		for _, c := range creds {
			if err := t.Append([]string{c.User, c.Mechanism, fmt.Sprint(c.Iterations)}); err != nil {
				return err
			}
		}
		return t.Render()
	})
}

func runDelete(ctx context.Context, o *Options, user string) error {
	s, err := o.open(ctx)
	if err != nil {
		return err
	}
	defer s.close()
	existing, err := s.list(ctx, []string{user})
	if err != nil {
		return err
	}
	var mechs []string
	for _, c := range existing {
		mechs = append(mechs, c.Mechanism)
	}
	if len(o.Mechanisms) > 0 {
		want, err := checkMechanisms(o.Mechanisms)
		if err != nil {
			return err
		}
		for _, m := range want {
			if !slices.Contains(mechs, m) {
				return fmt.Errorf("user %q has no %s credential", user, m)
			}
		}
		mechs = want
	}
	if len(mechs) == 0 {
		return fmt.Errorf("user %q has no SCRAM credential", user)
	}
	if err := s.remove(ctx, user, mechs); err != nil {
		return err
	}
	fmt.Fprintf(o.Factory.IO.Out, "deleted %s credentials of user %s\n", strings.Join(mechs, ", "), user)
	return nil
}

// kafkaStore goes through the cluster.
type kafkaStore struct {
	adm *kadm.Client
	f   *cmdutil.Factory
}

func (k kafkaStore) close() { k.adm.Close() }

func (k kafkaStore) list(ctx context.Context, users []string) ([]Credential, error) {
	rctx, cancel := k.f.RequestContext(ctx)
	defer cancel()
	described, err := k.adm.DescribeUserSCRAMs(rctx, users...)
	if err != nil {
		return nil, fmt.Errorf("describing SCRAM users: %w", err)
	}
	var out []Credential
	for _, d := range described {
		if errors.Is(d.Err, kerr.ResourceNotFound) {
			continue
		}
		if d.Err != nil {
			return nil, fmt.Errorf("user %s: %w", d.User, d.Err)
		}
		for _, ci := range d.CredInfos {
			out = append(out, Credential{User: d.User, Mechanism: ci.Mechanism.String(), Iterations: int(ci.Iterations)})
		}
	}
	sortCreds(out)
	return out, nil
}

func (k kafkaStore) upsert(ctx context.Context, user string, ups []upsertion) error {
	var out []kadm.UpsertSCRAM
	for _, u := range ups {
		out = append(out, kadm.UpsertSCRAM{User: user, Mechanism: kadmMech(u.mechanism), Iterations: int32(u.iterations),
			Salt: u.salt, SaltedPassword: u.salted})
	}
	return k.alter(ctx, nil, out)
}

func (k kafkaStore) remove(ctx context.Context, user string, mechs []string) error {
	var del []kadm.DeleteSCRAM
	for _, m := range mechs {
		del = append(del, kadm.DeleteSCRAM{User: user, Mechanism: kadmMech(m)})
	}
	return k.alter(ctx, del, nil)
}

func (k kafkaStore) alter(ctx context.Context, del []kadm.DeleteSCRAM, ups []kadm.UpsertSCRAM) error {
	rctx, cancel := k.f.RequestContext(ctx)
	defer cancel()
	res, err := k.adm.AlterUserSCRAMs(rctx, del, ups)
	if err != nil {
		return fmt.Errorf("altering SCRAM credentials: %w", err)
	}
	return res.Error()
}

func kadmMech(m string) kadm.ScramMechanism {
	if m == zkdata.ScramSHA512 {
		return kadm.ScramSha512
	}
	return kadm.ScramSha256
}

func sortCreds(cs []Credential) {
	sort.Slice(cs, func(i, j int) bool {
		if cs[i].User != cs[j].User {
			return cs[i].User < cs[j].User
		}
		return cs[i].Mechanism < cs[j].Mechanism
	})
}
