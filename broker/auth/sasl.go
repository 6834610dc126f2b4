package auth

import (
	"bytes"
	"context"
	"crypto/subtle"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/ktoolhq/ktool/broker/config"
	"github.com/ktoolhq/ktool/internal/jaas"
	"github.com/ktoolhq/ktool/internal/zkdata"
)

// SASL mechanisms.
const (
	Plain       = "PLAIN"
	ScramSHA256 = zkdata.ScramSHA256
	ScramSHA512 = zkdata.ScramSHA512
)

// supportedMechanisms are what ktool can serve.
var supportedMechanisms = []string{Plain, ScramSHA256, ScramSHA512, OAuthBearer}

// ErrAuthentication is the answer to any failed authentication; the reason
// is logged, the client learns only that it failed (Kafka does the same so a
// client cannot probe which users exist).
var ErrAuthentication = errors.New("authentication failed")

// ScramLookup returns a user's stored credential for a mechanism, or an error
// when the user has none.
type ScramLookup func(ctx context.Context, mechanism, user string) (zkdata.ScramCredential, error)

// SASLServer serves the SASL mechanisms enabled on one listener.
type SASLServer struct {
	Mechanisms []string
	plainUsers map[string]string
	scram      ScramLookup
	oauth      oauthValidator
}

// NewSASLServer reads sasl.enabled.mechanisms and the PLAIN users of the
// listener's JAAS configuration (user_<name>="<password>" options of
// listener.name.<l>.plain.sasl.jaas.config or sasl.jaas.config).
func NewSASLServer(s *config.ListenerSecurity, scramLookup ScramLookup) (*SASLServer, error) {
	srv := &SASLServer{scram: scramLookup, plainUsers: map[string]string{}}
	for _, m := range s.SASLEnabledMechanisms {
		m = strings.ToUpper(m)
		if !slices.Contains(supportedMechanisms, m) {
			return nil, fmt.Errorf("SASL mechanism %s is not supported (%s)", m, strings.Join(supportedMechanisms, ", "))
		}
		if !slices.Contains(srv.Mechanisms, m) {
			srv.Mechanisms = append(srv.Mechanisms, m)
		}
	}
	if len(srv.Mechanisms) == 0 {
		return nil, fmt.Errorf("sasl.enabled.mechanisms is empty")
	}
	if slices.Contains(srv.Mechanisms, OAuthBearer) {
		v, err := newOAuthValidator(s)
		if err != nil {
			return nil, err
		}
		srv.oauth = v
	}
	if slices.Contains(srv.Mechanisms, Plain) {
		if v := s.JAAS(Plain); v != "" {
			e, err := jaas.Parse(v)
			if err != nil {
				return nil, err
			}
			for k, v := range e.Options {
				if u, ok := strings.CutPrefix(k, "user_"); ok {
					srv.plainUsers[u] = v
				}
			}
		}
	}
	return srv, nil
}

// Exchange is one SASL authentication in progress.
type Exchange interface {
	// Step takes the client's next message and returns the server's answer;
	// done is true once the client is authenticated. An error ends the exchange.
	Step(ctx context.Context, msg []byte) (out []byte, done bool, err error)
	// Principal is the authenticated identity (after done).
	Principal() Principal
}

// Start begins an exchange with an enabled mechanism.
func (s *SASLServer) Start(mechanism string) (Exchange, error) {
	if !slices.Contains(s.Mechanisms, mechanism) {
		return nil, fmt.Errorf("SASL mechanism %q is not enabled", mechanism)
	}
	switch mechanism {
	case Plain:
		return &plainExchange{users: s.plainUsers}, nil
	case OAuthBearer:
		return &oauthExchange{v: s.oauth}, nil
	default:
		return &scramExchange{mechanism: mechanism, lookup: s.scram}, nil
	}
}

type plainExchange struct {
	users map[string]string
	user  string
}

// Step checks authzid NUL authcid NUL password (RFC 4616).
func (p *plainExchange) Step(_ context.Context, msg []byte) ([]byte, bool, error) {
	parts := bytes.Split(msg, []byte{0})
	if len(parts) != 3 {
		return nil, false, errors.New("PLAIN: message is not authzid NUL user NUL password")
	}
	authz, user, pass := string(parts[0]), string(parts[1]), parts[2]
	if user == "" {
		return nil, false, errors.New("PLAIN: empty user name")
	}
	if authz != "" && authz != user {
		return nil, false, errors.New("PLAIN: authorization id differs from the user name")
	}
	want, ok := p.users[user]
	// Compare even for unknown users so the timing says nothing about them.
	if subtle.ConstantTimeCompare([]byte(want), pass) != 1 || !ok {
		return nil, false, fmt.Errorf("PLAIN: wrong password or unknown user %q", user)
	}
	p.user = user
	return nil, true, nil
}

func (p *plainExchange) Principal() Principal { return User(p.user) }
