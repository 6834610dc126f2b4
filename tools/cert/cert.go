// Package cert is `ktool cert`: a certificate authority and the broker and
// client certificates it signs, for a real cluster's TLS listeners. Files are
// PEM (ssl.keystore.type=PEM, kcat, ktool's --tls-* flags) and PKCS12 (Java
// clients, ssl.keystore.type=PKCS12).
package cert

import (
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"github.com/spf13/cobra"

	"github.com/ktoolhq/ktool/internal/certgen"
	"github.com/ktoolhq/ktool/tools/cmdutil"
)

// PasswordEnv holds the PKCS12 store password.
const PasswordEnv = "KTOOL_STORE_PASSWORD"

// Options are the flags of the verbs.
type Options struct {
	Factory      *cmdutil.Factory
	Dir          string
	Days         int
	Hosts        []string
	PasswordFile string
}

// NewCommand returns `ktool cert`.
func NewCommand(f *cmdutil.Factory) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "cert",
		Short: "Make a CA and broker or client certificates for TLS listeners",
		Long: `Make the certificates of a TLS-secured cluster: a certificate authority, then a
certificate per broker (naming every host clients and brokers dial) and per client
for mutual TLS. Each is written as PEM (<name>.crt with the CA after it, <name>.key)
and as a PKCS12 keystore <name>.p12; the CA also as ca-truststore.p12.

The PKCS12 password comes from --password-file or ` + PasswordEnv + `; with neither, a random
one is written to <dir>/store.password (mode 0600) on first use and reused.`,
		Example: `  ktool cert ca --dir ./pki
  ktool cert broker broker-1 --dir ./pki --host kafka-1.example.com --host 10.0.0.11
  ktool cert client alice --dir ./pki`,
	}
	cmd.AddCommand(newCACommand(f), newSignCommand(f, false), newSignCommand(f, true))
	return cmd
}

func addFlags(cmd *cobra.Command, o *Options, days int) {
	cmd.Flags().StringVar(&o.Dir, "dir", ".", "directory of the CA and the certificates")
	cmd.Flags().IntVar(&o.Days, "days", days, "validity in days")
	cmd.Flags().StringVar(&o.PasswordFile, "password-file", "", "file whose first line is the PKCS12 store password")
}

func newCACommand(f *cmdutil.Factory) *cobra.Command {
	o := &Options{Factory: f}
	cmd := &cobra.Command{
		Use: "ca", Short: "Make a certificate authority (ca.crt, ca.key, ca-truststore.p12)", Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return runCA(o) },
	}
	addFlags(cmd, o, 3650)
	return cmd
}

func newSignCommand(f *cmdutil.Factory, client bool) *cobra.Command {
	o := &Options{Factory: f}
	use, short := "broker NAME", "Make a broker certificate signed by the CA"
	if client {
		use, short = "client NAME", "Make a client certificate (mutual TLS) signed by the CA"
	}
	cmd := &cobra.Command{
		Use: use, Short: short, Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error { return runSign(o, args[0], client) },
	}
	addFlags(cmd, o, 825)
	if !client {
		cmd.Flags().StringSliceVar(&o.Hosts, "host", nil, "DNS name or IP address the certificate names (repeatable; default localhost and 127.0.0.1)")
	}
	return cmd
}

// StorePassword returns the PKCS12 password: the file, the environment, or
// <dir>/store.password (made on first use).
func StorePassword(dir, file string) (string, error) {
	if file != "" {
		return cmdutil.ReadSecretFile(file)
	}
	if v := os.Getenv(PasswordEnv); v != "" {
		return v, nil
	}
	p := filepath.Join(dir, "store.password")
	if v, err := cmdutil.ReadSecretFile(p); err == nil && v != "" {
		return v, nil
	} else if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return "", err
	}
	var raw [18]byte
	if _, err := rand.Read(raw[:]); err != nil {
		return "", err
	}
	v := base64.RawURLEncoding.EncodeToString(raw[:])
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	if err := os.WriteFile(p, []byte(v+"\n"), 0o600); err != nil {
		return "", err
	}
	return v, nil
}

func runCA(o *Options) error {
	if _, err := os.Stat(filepath.Join(o.Dir, "ca.key")); err == nil {
		return fmt.Errorf("%s already holds a CA (ca.key); remove it to make a new one", o.Dir)
	}
	pass, err := StorePassword(o.Dir, o.PasswordFile)
	if err != nil {
		return err
	}
	ca, err := certgen.NewCA("ktool CA", time.Duration(o.Days)*24*time.Hour)
	if err != nil {
		return err
	}
	crt, key, ts, err := ca.WriteCA(o.Dir, pass)
	if err != nil {
		return err
	}
	fmt.Fprintf(o.Factory.IO.Out, "CA written: %s, %s (keep it secret), truststore %s\n", crt, key, ts)
	return nil
}

func runSign(o *Options, name string, client bool) error {
	if name == "" || filepath.Base(name) != name || name == "ca" || name == "." || name == ".." {
		return cmdutil.Usagef("certificate name %q must be a plain file name other than ca", name)
	}
	ca, err := certgen.LoadCA(filepath.Join(o.Dir, "ca.crt"), filepath.Join(o.Dir, "ca.key"))
	if err != nil {
		return fmt.Errorf("loading the CA from %s (make one with `ktool cert ca --dir %s`): %w", o.Dir, o.Dir, err)
	}
	pass, err := StorePassword(o.Dir, o.PasswordFile)
	if err != nil {
		return err
	}
	opts := certgen.Options{CommonName: name, Validity: time.Duration(o.Days) * 24 * time.Hour, Client: true}
	if !client {
		opts.Hosts = o.Hosts
		if len(opts.Hosts) == 0 {
			opts.Hosts = []string{"localhost", "127.0.0.1"}
		}
	}
	pair, err := ca.Sign(opts)
	if err != nil {
		return err
	}
	files, err := pair.WriteFiles(o.Dir, name, ca, pass)
	if err != nil {
		return err
	}
	fmt.Fprintf(o.Factory.IO.Out, "certificate %s written: %s, %s, keystore %s\n", name, files.Cert, files.Key, files.Keystore)
	return nil
}
