package auth

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/subtle"
	"encoding/base64"
	"errors"
	"fmt"
	"hash"
	"strings"

	"github.com/ktoolhq/ktool/internal/zkdata"
)

// scramExchange is the server side of SCRAM-SHA-256/512 (RFC 5802, 7677),
// checked as Kafka's ScramSaslServer checks it. xdg-go/scram's server insists
// that the nonce of the client's final message equals the server nonce;
// Kafka only requires it to end with the server nonce, and librdkafka (kcat,
// confluent-kafka) relies on that: it sends its own nonce in front. A
// server that is stricter than Kafka locks those clients out.
type scramExchange struct {
	mechanism string
	lookup    ScramLookup

	hash        func() hash.Hash
	user        string
	cred        zkdata.ScramCredential
	clientFirst string // client-first-message-bare
	serverFirst string
	nonce       string // the full server nonce (client's + ours)
	gs2         string
	done        bool
}

func (x *scramExchange) Step(ctx context.Context, msg []byte) ([]byte, bool, error) {
	if x.done {
		return nil, false, errors.New("SCRAM exchange already complete")
	}
	if x.serverFirst == "" {
		return x.first(ctx, string(msg))
	}
	return x.final(string(msg))
}

// first reads gs2-header client-first-message-bare and answers
// r=<nonce>,s=<salt>,i=<iterations>.
func (x *scramExchange) first(ctx context.Context, m string) ([]byte, bool, error) {
	h, err := zkdata.ScramHash(x.mechanism)
	if err != nil {
		return nil, false, err
	}
	x.hash = h
	// gs2-header: "n" or "y" (no channel binding), then ",", an optional
	// "a=authzid", then ",".
	parts := strings.SplitN(m, ",", 3)
	if len(parts) != 3 || (parts[0] != "n" && parts[0] != "y") {
		return nil, false, errors.New("SCRAM: client-first message without a gs2 header, or asking for channel binding")
	}
	authz := ""
	if parts[1] != "" {
		a, ok := strings.CutPrefix(parts[1], "a=")
		if !ok {
			return nil, false, errors.New("SCRAM: bad authorization id")
		}
		if authz, ok = saslName(a); !ok {
			return nil, false, errors.New("SCRAM: bad authorization id encoding")
		}
	}
	x.gs2 = parts[0] + "," + parts[1] + ","
	x.clientFirst = parts[2]
	var user, cnonce string
	for i, attr := range strings.Split(x.clientFirst, ",") {
		k, v, _ := strings.Cut(attr, "=")
		switch {
		case i == 0 && k == "n":
			u, ok := saslName(v)
			if !ok {
				return nil, false, errors.New("SCRAM: bad user name encoding")
			}
			user = u
		case i == 1 && k == "r":
			cnonce = v
		case i == 0 || i == 1:
			return nil, false, errors.New("SCRAM: client-first message is not n=<user>,r=<nonce>")
		case k == "m":
			return nil, false, errors.New("SCRAM: mandatory extensions are not supported")
		}
	}
	if user == "" || cnonce == "" || strings.ContainsAny(cnonce, ",") {
		return nil, false, errors.New("SCRAM: no user or nonce")
	}
	if authz != "" && authz != user {
		return nil, false, fmt.Errorf("SCRAM: authorization id %q differs from the user %q", authz, user)
	}
	if x.lookup == nil {
		return nil, false, errors.New("no credential store")
	}
	cred, err := x.lookup(ctx, x.mechanism, user)
	if err != nil {
		return nil, false, err
	}
	var raw [24]byte
	if _, err := rand.Read(raw[:]); err != nil {
		return nil, false, err
	}
	x.user, x.cred = user, cred
	x.nonce = cnonce + base64.RawURLEncoding.EncodeToString(raw[:])
	x.serverFirst = fmt.Sprintf("r=%s,s=%s,i=%d", x.nonce, base64.StdEncoding.EncodeToString(cred.Salt), cred.Iterations)
	return []byte(x.serverFirst), false, nil
}

// final checks c=<gs2 header>,r=<nonce>,...,p=<proof> and answers v=<signature>.
func (x *scramExchange) final(m string) ([]byte, bool, error) {
	i := strings.LastIndex(m, ",p=")
	if i < 0 {
		return nil, false, errors.New("SCRAM: client-final message has no proof")
	}
	withoutProof, proofB64 := m[:i], m[i+3:]
	var cb, nonce string
	for j, attr := range strings.Split(withoutProof, ",") {
		k, v, _ := strings.Cut(attr, "=")
		switch {
		case j == 0 && k == "c":
			cb = v
		case j == 1 && k == "r":
			nonce = v
		case j < 2:
			return nil, false, errors.New("SCRAM: client-final message is not c=...,r=...")
		}
	}
	gs2, err := base64.StdEncoding.DecodeString(cb)
	if err != nil || string(gs2) != x.gs2 {
		return nil, false, errors.New("SCRAM: channel binding does not repeat the gs2 header")
	}
	if !strings.HasSuffix(nonce, x.nonce) {
		return nil, false, errors.New("SCRAM: the final nonce does not end with the server nonce")
	}
	proof, err := base64.StdEncoding.DecodeString(proofB64)
	if err != nil || len(proof) != x.hash().Size() {
		return nil, false, errors.New("SCRAM: malformed proof")
	}
	authMessage := x.clientFirst + "," + x.serverFirst + "," + withoutProof
	mac := func(key []byte, s string) []byte {
		h := hmac.New(x.hash, key)
		h.Write([]byte(s))
		return h.Sum(nil)
	}
	sig := mac(x.cred.StoredKey, authMessage)
	clientKey := make([]byte, len(proof))
	for k := range proof {
		clientKey[k] = proof[k] ^ sig[k]
	}
	h := x.hash()
	h.Write(clientKey)
	if subtle.ConstantTimeCompare(h.Sum(nil), x.cred.StoredKey) != 1 {
		return nil, false, errors.New("SCRAM: invalid proof (wrong password)")
	}
	x.done = true
	return []byte("v=" + base64.StdEncoding.EncodeToString(mac(x.cred.ServerKey, authMessage))), true, nil
}

func (x *scramExchange) Principal() Principal { return User(x.user) }

// saslName decodes RFC 5802's saslname (=2C is ",", =3D is "=").
func saslName(s string) (string, bool) {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] != '=' {
			if s[i] == ',' {
				return "", false
			}
			b.WriteByte(s[i])
			continue
		}
		switch {
		case strings.HasPrefix(s[i:], "=2C"):
			b.WriteByte(',')
		case strings.HasPrefix(s[i:], "=3D"):
			b.WriteByte('=')
		default:
			return "", false
		}
		i += 2
	}
	return b.String(), true
}
