package jaas

import "testing"

func TestParse(t *testing.T) {
	e, err := Parse(`org.apache.kafka.common.security.plain.PlainLoginModule required username="admin" password="a \"b\" c" user_alice=alice-secret;`)
	if err != nil {
		t.Fatal(err)
	}
	if e.LoginModule != "org.apache.kafka.common.security.plain.PlainLoginModule" || e.Flag != "required" {
		t.Fatalf("module %q flag %q", e.LoginModule, e.Flag)
	}
	want := map[string]string{"username": "admin", "password": `a "b" c`, "user_alice": "alice-secret"}
	for k, v := range want {
		if e.Options[k] != v {
			t.Errorf("%s = %q, want %q", k, e.Options[k], v)
		}
	}
	for _, bad := range []string{
		"",
		"Module",
		`Module required username="x"`,
		`Module required username="x;`,
		`Module required username;`,
		`Module maybe;`,
	} {
		if _, err := Parse(bad); err == nil {
			t.Errorf("Parse(%q) accepted", bad)
		}
	}
}
