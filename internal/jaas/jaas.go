// Package jaas reads the one-line JAAS configuration Kafka takes in
// sasl.jaas.config:
//
//	org.apache.kafka.common.security.scram.ScramLoginModule required username="alice" password="secret";
//
// Brokers and the toolbox both read it: the broker for its own credentials and
// the PLAIN users (user_<name>="password"), the toolbox for a client.properties.
package jaas

import (
	"fmt"
	"strings"
)

// Entry is one login module with its options.
type Entry struct {
	LoginModule string
	Flag        string // required, requisite, sufficient or optional
	Options     map[string]string
}

// Parse reads the first login module of a sasl.jaas.config value.
func Parse(s string) (Entry, error) {
	p := &parser{s: s}
	e := Entry{Options: map[string]string{}}
	e.LoginModule = p.word()
	if e.LoginModule == "" {
		return Entry{}, fmt.Errorf("sasl.jaas.config: no login module")
	}
	e.Flag = strings.ToLower(p.word())
	switch e.Flag {
	case "required", "requisite", "sufficient", "optional":
	default:
		return Entry{}, fmt.Errorf("sasl.jaas.config: login module %s needs a flag (required), got %q", e.LoginModule, e.Flag)
	}
	for {
		p.space()
		if p.done() {
			return Entry{}, fmt.Errorf("sasl.jaas.config: missing ; at the end")
		}
		if p.peek() == ';' {
			return e, nil
		}
		key := p.key()
		if key == "" {
			return Entry{}, fmt.Errorf("sasl.jaas.config: unexpected %q", p.rest())
		}
		p.space()
		if p.done() || p.peek() != '=' {
			return Entry{}, fmt.Errorf("sasl.jaas.config: option %s has no value", key)
		}
		p.i++
		p.space()
		val, err := p.value()
		if err != nil {
			return Entry{}, fmt.Errorf("sasl.jaas.config: option %s: %w", key, err)
		}
		e.Options[key] = val
	}
}

type parser struct {
	s string
	i int
}

func (p *parser) done() bool   { return p.i >= len(p.s) }
func (p *parser) peek() byte   { return p.s[p.i] }
func (p *parser) rest() string { return p.s[p.i:min(len(p.s), p.i+20)] }

func (p *parser) space() {
	for !p.done() && strings.IndexByte(" \t\r\n", p.peek()) >= 0 {
		p.i++
	}
}

func (p *parser) word() string {
	p.space()
	start := p.i
	for !p.done() && strings.IndexByte(" \t\r\n;=\"", p.peek()) < 0 {
		p.i++
	}
	return p.s[start:p.i]
}

func (p *parser) key() string {
	start := p.i
	for !p.done() && strings.IndexByte(" \t\r\n;=\"", p.peek()) < 0 {
		p.i++
	}
	return p.s[start:p.i]
}

func (p *parser) value() (string, error) {
	if p.done() {
		return "", fmt.Errorf("no value")
	}
	if p.peek() != '"' {
		v := p.word()
		if v == "" {
			return "", fmt.Errorf("no value")
		}
		return v, nil
	}
	p.i++
	var b strings.Builder
	for !p.done() {
		c := p.peek()
		p.i++
		switch c {
		case '\\':
			if p.done() {
				return "", fmt.Errorf("unterminated quote")
			}
			b.WriteByte(p.peek())
			p.i++
		case '"':
			return b.String(), nil
		default:
			b.WriteByte(c)
		}
	}
	return "", fmt.Errorf("unterminated quote")
}
