package zkdata

import (
	"bytes"
	"testing"

	"github.com/xdg-go/scram"
)

// TestScramCredential: the stored keys match an independent SCRAM
// implementation's, and the text form round-trips.
func TestScramCredential(t *testing.T) {
	salt := []byte("0123456789abcdef")
	for mech, fn := range map[string]scram.HashGeneratorFcn{ScramSHA256: scram.SHA256, ScramSHA512: scram.SHA512} {
		c, err := NewScramCredential(mech, "pencil", salt, 4096)
		if err != nil {
			t.Fatal(err)
		}
		cl, err := fn.NewClientUnprepped("user", "pencil", "")
		if err != nil {
			t.Fatal(err)
		}
		want := cl.GetStoredCredentials(scram.KeyFactors{Salt: string(salt), Iters: 4096})
		if !bytes.Equal(c.StoredKey, want.StoredKey) || !bytes.Equal(c.ServerKey, want.ServerKey) {
			t.Fatalf("%s: keys differ from xdg-go/scram's", mech)
		}
		back, err := DecodeScramCredential(EncodeScramCredential(c))
		if err != nil || !bytes.Equal(back.StoredKey, c.StoredKey) || back.Iterations != 4096 || !bytes.Equal(back.Salt, salt) {
			t.Fatalf("%s: round trip %+v %v", mech, back, err)
		}
	}
	if _, err := NewScramCredential(ScramSHA256, "x", salt, 100); err == nil {
		t.Fatal("100 iterations accepted")
	}
	for _, bad := range []string{"", "salt=AA==", "salt=!,stored_key=AA==,server_key=AA==,iterations=4096", "salt=AA==,stored_key=AA==,server_key=AA==,iterations=x"} {
		if _, err := DecodeScramCredential(bad); err == nil {
			t.Errorf("%q decoded", bad)
		}
	}
}

func TestSanitizeUser(t *testing.T) {
	for in, want := range map[string]string{"alice": "alice", "a@b.c": "a%40b.c", "x y*": "x%20y%2A", "../etc": "..%2Fetc", "é": "%C3%A9"} {
		got := SanitizeUser(in)
		if got != want {
			t.Errorf("%q -> %q, want %q", in, got, want)
		}
		back, err := DesanitizeUser(got)
		if err != nil || back != in {
			t.Errorf("desanitize %q -> %q %v", got, back, err)
		}
	}
}
