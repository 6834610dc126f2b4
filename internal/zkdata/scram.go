package zkdata

import (
	"crypto/hmac"
	"crypto/pbkdf2"
	"crypto/sha256"
	"crypto/sha512"
	"encoding/base64"
	"fmt"
	"hash"
	"strconv"
	"strings"
)

// SCRAM mechanisms, as the keys of /config/users/<user> name them.
const (
	ScramSHA256 = "SCRAM-SHA-256"
	ScramSHA512 = "SCRAM-SHA-512"
)

// Iteration bounds of SCRAM credentials: Kafka's minimum for SHA-256/512, and
// the maximum AlterUserScramCredentials accepts.
const (
	ScramMinIterations = 4096
	ScramMaxIterations = 16384
)

// ScramMechanisms are the supported mechanisms, in Kafka's order (type 1, 2).
var ScramMechanisms = []string{ScramSHA256, ScramSHA512}

// ScramHash returns the hash of a SCRAM mechanism.
func ScramHash(mechanism string) (func() hash.Hash, error) {
	switch strings.ToUpper(mechanism) {
	case ScramSHA256:
		return sha256.New, nil
	case ScramSHA512:
		return sha512.New, nil
	}
	return nil, fmt.Errorf("unknown SCRAM mechanism %q (SCRAM-SHA-256 or SCRAM-SHA-512)", mechanism)
}

// ScramMechanismType is the mechanism number of the SCRAM admin APIs (50, 51).
func ScramMechanismType(mechanism string) int8 {
	switch strings.ToUpper(mechanism) {
	case ScramSHA256:
		return 1
	case ScramSHA512:
		return 2
	}
	return 0
}

// ScramMechanismName is the inverse of ScramMechanismType ("" if unknown).
func ScramMechanismName(t int8) string {
	switch t {
	case 1:
		return ScramSHA256
	case 2:
		return ScramSHA512
	}
	return ""
}

// ScramCredential is what a server keeps of a SCRAM password (RFC 5802): the
// salt, the iteration count, StoredKey and ServerKey. The password itself
// cannot be recovered from it.
type ScramCredential struct {
	Salt       []byte
	StoredKey  []byte
	ServerKey  []byte
	Iterations int
}

// SaltPassword is Hi(password, salt, iterations) of RFC 5802: the salted
// password a client sends in AlterUserScramCredentials.
func SaltPassword(mechanism, password string, salt []byte, iterations int) ([]byte, error) {
	h, err := ScramHash(mechanism)
	if err != nil {
		return nil, err
	}
	return pbkdf2.Key(h, password, salt, iterations, h().Size())
}

// ScramFromSalted derives the stored credential from a salted password.
func ScramFromSalted(mechanism string, salted, salt []byte, iterations int) (ScramCredential, error) {
	h, err := ScramHash(mechanism)
	if err != nil {
		return ScramCredential{}, err
	}
	mac := func(key []byte, msg string) []byte {
		m := hmac.New(h, key)
		m.Write([]byte(msg))
		return m.Sum(nil)
	}
	clientKey := mac(salted, "Client Key")
	stored := h()
	stored.Write(clientKey)
	return ScramCredential{
		Salt: append([]byte(nil), salt...), Iterations: iterations,
		StoredKey: stored.Sum(nil), ServerKey: mac(salted, "Server Key"),
	}, nil
}

// NewScramCredential makes the stored credential of a password.
func NewScramCredential(mechanism, password string, salt []byte, iterations int) (ScramCredential, error) {
	if iterations < ScramMinIterations || iterations > ScramMaxIterations {
		return ScramCredential{}, fmt.Errorf("iterations must be between %d and %d, not %d", ScramMinIterations, ScramMaxIterations, iterations)
	}
	salted, err := SaltPassword(mechanism, password, salt, iterations)
	if err != nil {
		return ScramCredential{}, err
	}
	return ScramFromSalted(mechanism, salted, salt, iterations)
}

// EncodeScramCredential writes a credential as Kafka's ScramCredentialUtils
// does: salt=<b64>,stored_key=<b64>,server_key=<b64>,iterations=<n>.
func EncodeScramCredential(c ScramCredential) string {
	enc := base64.StdEncoding.EncodeToString
	return "salt=" + enc(c.Salt) + ",stored_key=" + enc(c.StoredKey) + ",server_key=" + enc(c.ServerKey) +
		",iterations=" + strconv.Itoa(c.Iterations)
}

// DecodeScramCredential reads EncodeScramCredential's format.
func DecodeScramCredential(s string) (ScramCredential, error) {
	var c ScramCredential
	seen := map[string]bool{}
	for _, part := range strings.Split(s, ",") {
		k, v, ok := strings.Cut(part, "=")
		if !ok {
			return ScramCredential{}, fmt.Errorf("SCRAM credential: %q is not key=value", part)
		}
		var err error
		switch k {
		case "salt":
			c.Salt, err = base64.StdEncoding.DecodeString(v)
		case "stored_key":
			c.StoredKey, err = base64.StdEncoding.DecodeString(v)
		case "server_key":
			c.ServerKey, err = base64.StdEncoding.DecodeString(v)
		case "iterations":
			c.Iterations, err = strconv.Atoi(v)
		default:
			continue // Kafka ignores what it does not know
		}
		if err != nil {
			return ScramCredential{}, fmt.Errorf("SCRAM credential: %s: %v", k, err)
		}
		seen[k] = true
	}
	for _, k := range []string{"salt", "stored_key", "server_key", "iterations"} {
		if !seen[k] {
			return ScramCredential{}, fmt.Errorf("SCRAM credential: no %s", k)
		}
	}
	if c.Iterations < 1 || len(c.StoredKey) == 0 || len(c.ServerKey) == 0 {
		return ScramCredential{}, fmt.Errorf("SCRAM credential: invalid")
	}
	return c, nil
}

// ConfigUserPath is /config/users/<sanitized user>, where SCRAM credentials and
// user quotas are kept.
func ConfigUserPath(user string) string { return ConfigEntityPath(ConfigTypeUser, SanitizeUser(user)) }

// SanitizeUser encodes a user name for a znode as Kafka's Sanitizer does (URL
// encoding of UTF-8, with space as %20 and * as %2A), so no name can hold a
// slash or be a relative path component.
func SanitizeUser(u string) string {
	var b strings.Builder
	for i := 0; i < len(u); i++ {
		c := u[i]
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9', c == '.', c == '-', c == '_':
			b.WriteByte(c)
		default:
			fmt.Fprintf(&b, "%%%02X", c)
		}
	}
	return b.String()
}

// DesanitizeUser is the inverse of SanitizeUser.
func DesanitizeUser(s string) (string, error) {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] != '%' {
			b.WriteByte(s[i])
			continue
		}
		if i+2 >= len(s) {
			return "", fmt.Errorf("user znode %q: truncated escape", s)
		}
		n, err := strconv.ParseUint(s[i+1:i+3], 16, 8)
		if err != nil {
			return "", fmt.Errorf("user znode %q: bad escape", s)
		}
		b.WriteByte(byte(n))
		i += 2
	}
	return b.String(), nil
}

// ValidUserName refuses names no znode can hold even when sanitized.
func ValidUserName(u string) error {
	if u == "" || u == "." || u == ".." {
		return fmt.Errorf("user name %q is not valid", u)
	}
	if len(u) > 1024 {
		return fmt.Errorf("user name is longer than 1024 bytes")
	}
	return nil
}
