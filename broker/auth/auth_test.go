package auth

import (
	"strings"
	"testing"
)

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
