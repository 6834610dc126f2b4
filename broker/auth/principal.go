package auth

import (
	"crypto/x509"
	"fmt"
	"regexp"
	"strings"
)

// Principal is an authenticated identity, "User:<name>" as Kafka's
// KafkaPrincipal prints it.
type Principal struct {
	Type string
	Name string
}

// Anonymous is the principal of a PLAINTEXT connection or of a TLS client
// without a certificate.
var Anonymous = Principal{Type: "User", Name: "ANONYMOUS"}

func (p Principal) String() string { return p.Type + ":" + p.Name }

// User is a User principal.
func User(name string) Principal { return Principal{Type: "User", Name: name} }

// rule is one of ssl.principal.mapping.rules.
type rule struct {
	def     bool
	re      *regexp.Regexp
	repl    string
	toLower bool
	toUpper bool
}

// Mapper turns a certificate subject into a principal name.
type Mapper struct{ rules []rule }

// ParseMappingRules reads ssl.principal.mapping.rules: a list of
// RULE:pattern/replacement/[LU] and DEFAULT, tried in order; the first whose
// pattern matches the subject (as RFC 2253 prints it) names the principal.
// An empty setting is DEFAULT (the subject itself); when no rule matches, the
// client is refused, as Kafka does.
func ParseMappingRules(s string) (*Mapper, error) {
	m := &Mapper{}
	if strings.TrimSpace(s) == "" {
		s = "DEFAULT"
	}
	rest := s
	for {
		rest = strings.TrimLeft(rest, " \t\n,")
		if rest == "" {
			break
		}
		if strings.HasPrefix(rest, "DEFAULT") {
			m.rules = append(m.rules, rule{def: true})
			rest = rest[len("DEFAULT"):]
			continue
		}
		if !strings.HasPrefix(rest, "RULE:") {
			return nil, fmt.Errorf("ssl.principal.mapping.rules: unexpected %q (want RULE:pattern/replacement/[LU] or DEFAULT)", abbreviate(rest))
		}
		rest = rest[len("RULE:"):]
		pat, after, ok := cutUnescaped(rest)
		if !ok {
			return nil, fmt.Errorf("ssl.principal.mapping.rules: rule %q has no replacement", abbreviate(rest))
		}
		repl, after, ok := cutUnescaped(after)
		if !ok {
			return nil, fmt.Errorf("ssl.principal.mapping.rules: rule %q does not end with /", abbreviate(rest))
		}
		r := rule{repl: javaReplacement(strings.ReplaceAll(repl, `\/`, "/"))}
		re, err := regexp.Compile(strings.ReplaceAll(pat, `\/`, "/"))
		if err != nil {
			return nil, fmt.Errorf("ssl.principal.mapping.rules: pattern %q: %v", pat, err)
		}
		r.re = re
		if strings.HasPrefix(after, "L") {
			r.toLower, after = true, after[1:]
		} else if strings.HasPrefix(after, "U") {
			r.toUpper, after = true, after[1:]
		}
		if after != "" && !strings.ContainsAny(after[:1], " \t\n,") {
			return nil, fmt.Errorf("ssl.principal.mapping.rules: unexpected %q after a rule", abbreviate(after))
		}
		m.rules = append(m.rules, r)
		rest = after
	}
	return m, nil
}

func abbreviate(s string) string {
	if len(s) > 40 {
		return s[:40] + "..."
	}
	return s
}

// cutUnescaped splits s at the first / not preceded by a backslash.
func cutUnescaped(s string) (before, after string, ok bool) {
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '\\':
			i++
		case '/':
			return s[:i], s[i+1:], true
		}
	}
	return "", "", false
}

// javaReplacement turns Java's $1 group references into Go's ${1}, so "$1x"
// keeps meaning group 1 followed by x.
func javaReplacement(r string) string {
	var b strings.Builder
	for i := 0; i < len(r); i++ {
		if r[i] == '$' && i+1 < len(r) && r[i+1] >= '0' && r[i+1] <= '9' {
			j := i + 1
			for j < len(r) && r[j] >= '0' && r[j] <= '9' {
				j++
			}
			b.WriteString("${" + r[i+1:j] + "}")
			i = j - 1
			continue
		}
		b.WriteByte(r[i])
	}
	return b.String()
}

// Name maps a subject distinguished name.
func (m *Mapper) Name(subject string) (string, error) {
	if m == nil {
		return subject, nil
	}
	for _, r := range m.rules {
		if r.def {
			return subject, nil
		}
		if !r.re.MatchString(subject) {
			continue
		}
		out := r.re.ReplaceAllString(subject, r.repl)
		switch {
		case r.toLower:
			out = strings.ToLower(out)
		case r.toUpper:
			out = strings.ToUpper(out)
		}
		return out, nil
	}
	return "", fmt.Errorf("no ssl.principal.mapping.rules rule applies to %q", subject)
}

// CertPrincipal is the principal of a TLS client certificate.
func (m *Mapper) CertPrincipal(c *x509.Certificate) (Principal, error) {
	n, err := m.Name(c.Subject.String())
	if err != nil {
		return Principal{}, err
	}
	return User(n), nil
}

// Identity is what every request handler knows of its connection: who is
// connected (the principal), on which listener and security protocol, and,
// after SASL, with which mechanism. Authorization decides on it.
type Identity struct {
	Principal Principal
	Listener  string
	Protocol  string
	Mechanism string
}
