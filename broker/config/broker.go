package config

import (
	"fmt"
	"sort"
	"strconv"
	"strings"
	"sync"
)

// Broker holds a broker's settings: static ones (properties file and flags) and
// dynamic ones (per-broker and cluster-default overrides kept in the coordination store).
type Broker struct {
	static map[string]string

	mu             sync.RWMutex
	dynamic        map[string]string
	dynamicDefault map[string]string
}

// Unknown lists keys of props that ktool does not know (Kafka warns and ignores them).
func Unknown(props map[string]string) []string {
	var out []string
	for k := range props {
		if _, ok := LookupBroker(k); !ok {
			out = append(out, k)
		}
	}
	sort.Strings(out)
	return out
}

// NewBroker validates props and returns the settings. Unknown keys are kept (and
// reported by Unknown) so a Kafka server.properties works as it is.
func NewBroker(props map[string]string) (*Broker, error) {
	b := &Broker{static: map[string]string{}, dynamic: map[string]string{}, dynamicDefault: map[string]string{}}
	for k, v := range props {
		if d, ok := LookupBroker(k); ok {
			if err := d.Check(v); err != nil {
				return nil, err
			}
		}
		b.static[k] = v
	}
	if b.Int("broker.id") < -1 {
		return nil, fmt.Errorf("broker.id must be -1 (generate) or at least 0")
	}
	if b.Int("replica.fetch.wait.max.ms") >= b.Int("replica.lag.time.max.ms") {
		// A follower parked in a long poll would look out of sync (Kafka's rule too).
		return nil, fmt.Errorf("replica.fetch.wait.max.ms (%d) must be less than replica.lag.time.max.ms (%d)",
			b.Int("replica.fetch.wait.max.ms"), b.Int("replica.lag.time.max.ms"))
	}
	return b, nil
}

// Value is a resolved setting.
type Value struct {
	Name   string
	Value  string
	Null   bool
	Source Source
}

// Get resolves a broker setting: dynamic per-broker, dynamic cluster default, static, default.
func (b *Broker) Get(name string) Value {
	b.mu.RLock()
	defer b.mu.RUnlock()
	if v, ok := b.dynamic[name]; ok {
		return Value{Name: name, Value: v, Source: SourceDynamicBroker}
	}
	if v, ok := b.dynamicDefault[name]; ok {
		return Value{Name: name, Value: v, Source: SourceDynamicDefaultBroker}
	}
	if v, ok := b.static[name]; ok {
		return Value{Name: name, Value: v, Source: SourceStaticBroker}
	}
	d, ok := LookupBroker(name)
	if !ok {
		return Value{Name: name, Null: true, Source: SourceDefault}
	}
	return Value{Name: name, Value: d.Default, Null: d.Null, Source: SourceDefault}
}

// IsSet reports whether name has a non-default value.
func (b *Broker) IsSet(name string) bool { return b.Get(name).Source != SourceDefault }

// String returns a setting's value ("" when null).
func (b *Broker) String(name string) string { return b.Get(name).Value }

// Int returns an integer setting (0 when null or invalid).
func (b *Broker) Int(name string) int64 {
	n, _ := strconv.ParseInt(b.Get(name).Value, 10, 64)
	return n
}

// Bool returns a boolean setting.
func (b *Broker) Bool(name string) bool {
	v, _ := strconv.ParseBool(b.Get(name).Value)
	return v
}

// Float returns a floating-point setting.
func (b *Broker) Float(name string) float64 {
	v, _ := strconv.ParseFloat(b.Get(name).Value, 64)
	return v
}

// List returns a comma-separated setting as a slice.
func (b *Broker) List(name string) []string { return SplitList(b.Get(name).Value) }

// SplitList splits a comma-separated value, dropping blanks.
func SplitList(v string) []string {
	var out []string
	for _, p := range strings.Split(v, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}

// SetDynamic replaces the per-broker dynamic overrides.
func (b *Broker) SetDynamic(m map[string]string) {
	b.mu.Lock()
	b.dynamic = copyMap(m)
	b.mu.Unlock()
}

// SetDynamicDefault replaces the cluster-wide dynamic defaults.
func (b *Broker) SetDynamicDefault(m map[string]string) {
	b.mu.Lock()
	b.dynamicDefault = copyMap(m)
	b.mu.Unlock()
}

func copyMap(m map[string]string) map[string]string {
	out := make(map[string]string, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

// All returns every known broker setting, resolved, sorted by name.
func (b *Broker) All() []Value {
	out := make([]Value, 0, len(BrokerDefs))
	for _, d := range BrokerDefs {
		out = append(out, b.Get(d.Name))
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// LogDirs is log.dirs, else log.dir.
func (b *Broker) LogDirs() []string {
	if dirs := b.List("log.dirs"); len(dirs) > 0 {
		return dirs
	}
	return []string{b.String("log.dir")}
}

// TopicValue resolves one topic config given the topic's overrides: the override,
// then the broker synonyms (scaled), then the default.
func (b *Broker) TopicValue(name string, overrides map[string]string) (Value, []Value) {
	d, ok := LookupTopic(name)
	if !ok {
		return Value{Name: name, Null: true, Source: SourceDefault}, nil
	}
	var synonyms []Value
	var chosen *Value
	if v, ok := overrides[name]; ok {
		chosen = &Value{Name: name, Value: v, Source: SourceDynamicTopic}
		synonyms = append(synonyms, *chosen)
	}
	for _, syn := range d.Synonyms {
		bv := b.Get(syn)
		if bv.Null {
			continue // the first synonym with a value wins, as Kafka resolves them
		}
		val := bv.Value
		if s, ok := d.Scale[syn]; ok {
			if n, err := strconv.ParseInt(val, 10, 64); err == nil && n > 0 {
				val = strconv.FormatInt(n*s, 10)
			}
		}
		sv := Value{Name: syn, Value: val, Source: bv.Source}
		synonyms = append(synonyms, sv)
		if chosen == nil {
			c := Value{Name: name, Value: val, Source: bv.Source}
			chosen = &c
		}
	}
	if chosen == nil {
		chosen = &Value{Name: name, Value: d.Default, Source: SourceDefault}
	}
	return *chosen, synonyms
}

// Topic resolves all topic configs for a topic with the given overrides.
func (b *Broker) Topic(overrides map[string]string) Topic {
	t := Topic{values: map[string]string{}}
	for _, d := range TopicDefs {
		v, _ := b.TopicValue(d.Name, overrides)
		t.values[d.Name] = v.Value
	}
	return t
}

// Topic is a resolved set of topic configs.
type Topic struct{ values map[string]string }

// String returns a topic config.
func (t Topic) String(name string) string { return t.values[name] }

// Int returns an integer topic config.
func (t Topic) Int(name string) int64 {
	n, _ := strconv.ParseInt(t.values[name], 10, 64)
	return n
}

// Bool returns a boolean topic config.
func (t Topic) Bool(name string) bool {
	v, _ := strconv.ParseBool(t.values[name])
	return v
}

// Float returns a floating-point topic config.
func (t Topic) Float(name string) float64 {
	v, _ := strconv.ParseFloat(t.values[name], 64)
	return v
}

// ValidateTopicConfigs checks names and values of topic config overrides.
func ValidateTopicConfigs(m map[string]string) error {
	for k, v := range m {
		d, ok := LookupTopic(k)
		if !ok {
			return fmt.Errorf("unknown topic config %q", k)
		}
		if err := d.Check(v); err != nil {
			return err
		}
	}
	return nil
}
