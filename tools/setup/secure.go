package setup

import (
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/ktoolhq/ktool/internal/certgen"
	"github.com/ktoolhq/ktool/tools/cmdutil"
)

// AdminUser is the SCRAM user a secure local cluster is operated with: a
// super user of the ACL authorizer.
const AdminUser = "admin"

// The sample principals of a secure local cluster: ProducerUser may write
// the topics named DemoPrefix*, ConsumerUser may read them in the groups
// named DemoPrefix*.
const (
	ProducerUser = "producer"
	ConsumerUser = "consumer"
	DemoPrefix   = "demo-"
)

// SampleUsers are the sample principals, in the order they are made.
var SampleUsers = []string{ProducerUser, ConsumerUser}

// Secure cluster files, under the cluster directory.
const (
	pkiDir            = "pki"
	storePasswordFile = "store.password"
	adminPasswordFile = "admin.password"
)

// PKIDir is where a secure cluster keeps its CA and broker certificates.
func PKIDir(dir string) string { return filepath.Join(dir, pkiDir) }

// CAFile is the secure cluster's CA certificate (PEM).
func CAFile(dir string) string { return filepath.Join(PKIDir(dir), "ca.crt") }

// AdminPasswordFile holds the admin user's password (mode 0600).
func AdminPasswordFile(dir string) string { return filepath.Join(dir, adminPasswordFile) }

// UserPasswordFile holds a sample user's password (mode 0600), next to the
// admin's.
func UserPasswordFile(dir, user string) string { return filepath.Join(dir, user+".password") }

// UserClientConfig is a sample user's client.properties (mode 0600).
func UserClientConfig(dir, user string) string { return filepath.Join(dir, user+".properties") }

// UserPassword reads a sample user's password.
func UserPassword(dir, user string) (string, error) {
	return cmdutil.ReadSecretFile(UserPasswordFile(dir, user))
}

// brokerPrincipal is the principal broker id authenticates as on the SSL
// inter-broker listener: its certificate's subject as Kafka's DEFAULT
// ssl.principal.mapping.rules gives it (the full distinguished name).
func brokerPrincipal(id int) string {
	return "User:CN=" + brokerCertName(id) + ",O=" + certgen.Organization
}

func brokerCertName(id int) string { return fmt.Sprintf("broker-%d", id) }

// SuperUsers is a secure cluster's super.users: the admin and every broker.
func (s Spec) SuperUsers() string {
	users := []string{"User:" + AdminUser}
	for id := range s.Brokers {
		users = append(users, brokerPrincipal(id))
	}
	return strings.Join(users, ";")
}

// InternalAddr is broker id's inter-broker (SSL) listener in a secure cluster:
// the ports after the client listeners.
func (s Spec) InternalAddr(id int) string {
	return net.JoinHostPort(s.Host, strconv.Itoa(s.BasePort+s.Brokers+id))
}

// secrets are the generated passwords of a secure cluster.
type secrets struct {
	store, admin string
	users        map[string]string // sample user -> password
}

func secret(path string) (string, error) {
	if v, err := cmdutil.ReadSecretFile(path); err == nil && v != "" {
		return v, nil
	} else if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return "", err
	}
	var raw [18]byte
	if _, err := rand.Read(raw[:]); err != nil {
		return "", err
	}
	v := base64.RawURLEncoding.EncodeToString(raw[:])
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return "", err
	}
	return v, os.WriteFile(path, []byte(v+"\n"), 0o600)
}

// ensurePKI makes, once, the CA, a certificate per broker (naming the
// cluster's host, localhost and 127.0.0.1; usable as server and as client, for
// TLS between brokers) and the passwords.
func (s Spec) ensurePKI(dir string) (secrets, error) {
	var sec secrets
	var err error
	if sec.store, err = secret(filepath.Join(PKIDir(dir), storePasswordFile)); err != nil {
		return sec, err
	}
	if sec.admin, err = secret(AdminPasswordFile(dir)); err != nil {
		return sec, err
	}
	sec.users = map[string]string{}
	for _, u := range SampleUsers {
		if sec.users[u], err = secret(UserPasswordFile(dir, u)); err != nil {
			return sec, err
		}
	}
	pki := PKIDir(dir)
	ca, err := certgen.LoadCA(CAFile(dir), filepath.Join(pki, "ca.key"))
	if err != nil {
		if ca, err = certgen.NewCA("ktool local cluster CA", 10*365*24*time.Hour); err != nil {
			return sec, err
		}
		if _, _, _, err = ca.WriteCA(pki, sec.store); err != nil {
			return sec, err
		}
	}
	for id := range s.Brokers {
		name := brokerCertName(id)
		if _, err := os.Stat(filepath.Join(pki, name+".p12")); err == nil {
			continue
		}
		pair, err := ca.Sign(certgen.Options{CommonName: name, Hosts: uniq(s.Host, "localhost", "127.0.0.1"), Client: true,
			Validity: 825 * 24 * time.Hour})
		if err != nil {
			return sec, err
		}
		if _, err := pair.WriteFiles(pki, name, ca, sec.store); err != nil {
			return sec, err
		}
	}
	return sec, nil
}

func uniq(xs ...string) []string {
	var out []string
	seen := map[string]bool{}
	for _, x := range xs {
		if !seen[x] {
			seen[x] = true
			out = append(out, x)
		}
	}
	return out
}

// secureBrokerProps are the listener and security settings of broker id:
// CLIENT (SASL_SSL; SCRAM for users, PLAIN for the admin's bootstrap) on the
// broker's port and INTERNAL (SSL with client certificates) between brokers;
// the ACL authorizer with the admin and the brokers as super users.
func (s Spec) secureBrokerProps(dir string, id int, sec secrets) map[string]string {
	pki := PKIDir(dir)
	return map[string]string{
		"listeners":                                    "CLIENT://" + s.BrokerAddr(id) + ",INTERNAL://" + s.InternalAddr(id),
		"listener.security.protocol.map":               "CLIENT:SASL_SSL,INTERNAL:SSL",
		"inter.broker.listener.name":                   "INTERNAL",
		"listener.name.internal.ssl.client.auth":       "required",
		"listener.name.client.sasl.enabled.mechanisms": "SCRAM-SHA-512,SCRAM-SHA-256,PLAIN",
		"listener.name.client.plain.sasl.jaas.config":  `org.apache.kafka.common.security.plain.PlainLoginModule required user_` + AdminUser + `="` + sec.admin + `";`,
		"ssl.keystore.type":                            "PKCS12",
		"ssl.keystore.location":                        filepath.Join(pki, fmt.Sprintf("broker-%d.p12", id)),
		"ssl.keystore.password":                        sec.store,
		"ssl.truststore.type":                          "PEM",
		"ssl.truststore.location":                      CAFile(dir),
		"authorizer.class.name":                        "kafka.security.authorizer.AclAuthorizer",
		"super.users":                                  s.SuperUsers(),
	}
}

// secureClientProps are client.properties' security lines: SCRAM-SHA-512 as
// the admin over SASL_SSL, trusting the cluster's CA.
func secureClientProps(dir string, sec secrets) map[string]string {
	return userClientProps(dir, AdminUser, sec.admin)
}

// userClientProps are the security lines of a client logging in as user.
func userClientProps(dir, user, password string) map[string]string {
	return map[string]string{
		"security.protocol":       "SASL_SSL",
		"sasl.mechanism":          "SCRAM-SHA-512",
		"sasl.jaas.config":        `org.apache.kafka.common.security.scram.ScramLoginModule required username="` + user + `" password="` + password + `";`,
		"ssl.truststore.type":     "PEM",
		"ssl.truststore.location": CAFile(dir),
	}
}

// AdminPassword reads the admin user's password of a secure cluster.
func AdminPassword(dir string) (string, error) { return cmdutil.ReadSecretFile(AdminPasswordFile(dir)) }

// KcatConfig is the librdkafka configuration file of a secure cluster (kcat
// -F): librdkafka does not read Java's sasl.jaas.config.
func KcatConfig(dir string) string { return filepath.Join(dir, "kcat.conf") }

func kcatProps(s Spec, dir string, sec secrets) map[string]string {
	return map[string]string{
		"bootstrap.servers": strings.Join(s.BrokerAddrs(), ","),
		"security.protocol": "SASL_SSL",
		"sasl.mechanisms":   "SCRAM-SHA-512",
		"sasl.username":     AdminUser,
		"sasl.password":     sec.admin,
		"ssl.ca.location":   CAFile(dir),
	}
}
