package auth

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/xdg-go/scram"

	"github.com/ktoolhq/ktool/broker/config"
	"github.com/ktoolhq/ktool/internal/zkdata"
)

// TestCipherSuitesAndVersions: a cipher list without a TLS 1.3 suite holds
// TLS to 1.2 (and is an error when only TLS 1.3 is enabled); naming a TLS 1.3
// suite keeps TLS 1.3.
func TestCipherSuitesAndVersions(t *testing.T) {
	const s12, s13 = "TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256", "TLS_AES_128_GCM_SHA256"
	for _, tc := range []struct {
		protocols, suites []string
		min, max          uint16
		err               bool
	}{
		{protocols: []string{"TLSv1.2", "TLSv1.3"}, min: tls.VersionTLS12, max: tls.VersionTLS13},
		{protocols: []string{"TLSv1.2", "TLSv1.3"}, suites: []string{s12}, min: tls.VersionTLS12, max: tls.VersionTLS12},
		{protocols: []string{"TLSv1.2", "TLSv1.3"}, suites: []string{s12, s13}, min: tls.VersionTLS12, max: tls.VersionTLS13},
		{protocols: []string{"TLSv1.3"}, suites: []string{s12}, err: true},
		{protocols: []string{"TLSv1.2"}, suites: []string{"TLS_RSA_WITH_RC4_128_SHA"}, err: true},
	} {
		cfg := &tls.Config{}
		err := applyProtocols(&config.ListenerSecurity{EnabledProtocols: tc.protocols, CipherSuites: tc.suites}, cfg)
		if (err != nil) != tc.err || err == nil && (cfg.MinVersion != tc.min || cfg.MaxVersion != tc.max) {
			t.Errorf("%v %v: versions %x..%x, err %v; want %x..%x, error %v", tc.protocols, tc.suites,
				cfg.MinVersion, cfg.MaxVersion, err, tc.min, tc.max, tc.err)
		}
	}
}

func TestParseListeners(t *testing.T) {
	protos, err := ParseProtocolMap("INTERNAL:PLAINTEXT, external:SASL_SSL")
	if err != nil {
		t.Fatal(err)
	}
	ls, err := ParseListeners([]string{"INTERNAL://:9091", "EXTERNAL://0.0.0.0:9092"}, []string{"EXTERNAL://kafka.example.com:19092"}, protos)
	if err != nil {
		t.Fatal(err)
	}
	if ls[0].Name != "INTERNAL" || ls[0].Protocol != Plaintext || ls[0].AdvertisedPort != 9091 {
		t.Fatalf("internal: %+v", ls[0])
	}
	if ls[1].Protocol != SASLSSL || ls[1].AdvertisedHost != "kafka.example.com" || ls[1].AdvertisedPort != 19092 || ls[1].Port != 9092 {
		t.Fatalf("external: %+v", ls[1])
	}
	ib, err := InterBrokerListener(ls, "internal", "")
	if err != nil || ib.Name != "INTERNAL" {
		t.Fatalf("inter-broker %+v %v", ib, err)
	}
	for _, bad := range []struct {
		ls, adv []string
		want    string
	}{
		{[]string{"OTHER://:1"}, nil, "no security protocol"},
		{[]string{"INTERNAL://:1", "INTERNAL://:2"}, nil, "twice"},
		{[]string{"INTERNAL://:1"}, []string{"EXTERNAL://h:2"}, "not in listeners"},
		{[]string{"INTERNAL://:99999"}, nil, "bad port"},
		{[]string{"INTERNAL:1"}, nil, "NAME://host:port"},
	} {
		if _, err := ParseListeners(bad.ls, bad.adv, protos); err == nil || !strings.Contains(err.Error(), bad.want) {
			t.Errorf("%v %v: %v, want %q", bad.ls, bad.adv, err, bad.want)
		}
	}
	if _, err := ParseProtocolMap("X:KERBEROS"); err == nil {
		t.Error("unknown protocol accepted")
	}
	if _, err := InterBrokerListener(ls, "", "SSL"); err == nil {
		t.Error("security.inter.broker.protocol=SSL without an SSL listener accepted")
	}
}

func TestPrincipalMapping(t *testing.T) {
	m, err := ParseMappingRules(`RULE:^CN=(.*?),OU=ServiceUsers.*$/$1/, RULE:^CN=(.*?),OU=(.*?),O=.*$/$1@$2/L, RULE:^cn=(.*?),ou=(.*?),dc=(.*?)$/$1x\/$3/U, DEFAULT`)
	if err != nil {
		t.Fatal(err)
	}
	for in, want := range map[string]string{
		"CN=kafka-1,OU=ServiceUsers,O=Acme,C=US": "kafka-1",
		"CN=Alice,OU=Sales,O=Acme":               "alice@sales",
		"cn=bob,ou=eng,dc=corp":                  "BOBX/CORP",
		"O=NoCN":                                 "O=NoCN",
	} {
		got, err := m.Name(in)
		if err != nil || got != want {
			t.Errorf("%q -> %q %v, want %q", in, got, err, want)
		}
	}
	strict, err := ParseMappingRules(`RULE:^CN=([^,]*)$/$1/`)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := strict.Name("O=x"); err == nil {
		t.Error("no rule applies, yet a name came out")
	}
	for _, bad := range []string{"RULE:abc", "RULE:a/b", "RULE:(/x/", "NONSENSE", "RULE:a/b/Q"} {
		if _, err := ParseMappingRules(bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}

// TestScramServer: the server exchange against an independent client
// (xdg-go/scram), with wrong passwords, unknown users and librdkafka's final
// nonce (its own nonce in front of the server's), which Kafka accepts.
func TestScramServer(t *testing.T) {
	salt := []byte("salt-0123456789")
	creds := map[string]zkdata.ScramCredential{}
	for _, m := range []string{ScramSHA256, ScramSHA512} {
		c, err := zkdata.NewScramCredential(m, "pencil", salt, 4096)
		if err != nil {
			t.Fatal(err)
		}
		creds[m] = c
	}
	lookup := func(_ context.Context, mech, user string) (zkdata.ScramCredential, error) {
		if user != "user,1" {
			return zkdata.ScramCredential{}, errors.New("no such user")
		}
		return creds[mech], nil
	}
	exchange := func(mech, user, pass string, mangle func(string) string) error {
		fn := scram.SHA256
		if mech == ScramSHA512 {
			fn = scram.SHA512
		}
		cl, err := fn.NewClient(user, pass, "")
		if err != nil {
			return err
		}
		conv := cl.NewConversation()
		x := &scramExchange{mechanism: mech, lookup: lookup}
		first, err := conv.Step("")
		if err != nil {
			return err
		}
		sf, done, err := x.Step(context.Background(), []byte(first))
		if err != nil || done {
			return fmt.Errorf("first: %v %v", done, err)
		}
		final, err := conv.Step(string(sf))
		if err != nil {
			return err
		}
		if mangle != nil {
			final = mangle(final)
		}
		out, done, err := x.Step(context.Background(), []byte(final))
		if err != nil {
			return err
		}
		if !done {
			return errors.New("not done")
		}
		if mangle == nil {
			if _, err := conv.Step(string(out)); err != nil {
				return fmt.Errorf("the client refused the server signature: %w", err)
			}
		}
		if x.Principal().Name != "user,1" {
			return fmt.Errorf("principal %v", x.Principal())
		}
		return nil
	}
	for _, m := range []string{ScramSHA256, ScramSHA512} {
		if err := exchange(m, "user,1", "pencil", nil); err != nil {
			t.Fatalf("%s: %v", m, err)
		}
		if err := exchange(m, "user,1", "wrong", nil); err == nil {
			t.Fatalf("%s: wrong password accepted", m)
		}
		if err := exchange(m, "other", "pencil", nil); err == nil {
			t.Fatalf("%s: unknown user accepted", m)
		}
		// A final nonce that does not end with the server's is refused.
		if err := exchange(m, "user,1", "pencil", func(f string) string { return strings.Replace(f, ",p=", "x,p=", 1) }); err == nil {
			t.Fatalf("%s: altered nonce accepted", m)
		}
	}
	x := &scramExchange{mechanism: ScramSHA256, lookup: lookup}
	for _, bad := range []string{"", "x", "p=tls-unique,,n=user,1,r=abc", "n,,r=abc", "n,,n=user=2C1", "n,,n=user=2C1,r=a,m=ext"} {
		if _, _, err := x.Step(context.Background(), []byte(bad)); err == nil {
			t.Errorf("client-first %q accepted", bad)
		}
		x = &scramExchange{mechanism: ScramSHA256, lookup: lookup}
	}
}
