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
	static   map[string]string
	settings *Settings

	mu             sync.RWMutex
	dynamic        map[string]string
	dynamicDefault map[string]string
	// throttle is Throttle decoded from the dynamic settings of generation
	// gen, nil until asked for after a change: an idle follower asks for
	// each of its 10,000 partitions on every fetch.
	throttle *Throttle
	gen      uint64
}

// Unknown lists keys of props that ktool does not know (Kafka warns and ignores them).
func Unknown(props map[string]string) []string {
	var out []string
	for k := range props {
		if _, ok := LookupBroker(k); !ok && !isListenerSetting(k) {
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
	s := &Settings{}
	if err := decode(s, BrokerDefs, b.Get, false); err != nil {
		return nil, err
	}
	if s.BrokerID < -1 {
		return nil, fmt.Errorf("broker.id must be -1 (generate) or at least 0")
	}
	if s.ReplicaFetchWaitMax >= s.ReplicaLagTimeMax {
		// A follower parked in a long poll would look out of sync (Kafka's rule too).
		return nil, fmt.Errorf("replica.fetch.wait.max.ms (%d) must be less than replica.lag.time.max.ms (%d)",
			s.ReplicaFetchWaitMax.Milliseconds(), s.ReplicaLagTimeMax.Milliseconds())
	}
	b.settings = s
	return b, nil
}

// Settings returns the static settings, typed. They never change; callers must
// not modify them.
func (b *Broker) Settings() *Settings { return b.settings }

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

// Synonyms lists every value a broker setting has, most preferred first:
// dynamic per-broker, dynamic cluster default, static, default (what
// DescribeConfigs answers as its synonyms, as Kafka does).
func (b *Broker) Synonyms(name string) []Value {
	b.mu.RLock()
	defer b.mu.RUnlock()
	var out []Value
	if v, ok := b.dynamic[name]; ok {
		out = append(out, Value{Name: name, Value: v, Source: SourceDynamicBroker})
	}
	if v, ok := b.dynamicDefault[name]; ok {
		out = append(out, Value{Name: name, Value: v, Source: SourceDynamicDefaultBroker})
	}
	if v, ok := b.static[name]; ok {
		out = append(out, Value{Name: name, Value: v, Source: SourceStaticBroker})
	}
	if d, ok := LookupBroker(name); ok && !d.Null {
		out = append(out, Value{Name: name, Value: d.Default, Source: SourceDefault})
	}
	return out
}

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
	b.throttle = nil
	b.gen++
	b.mu.Unlock()
}

// SetDynamicDefault replaces the cluster-wide dynamic defaults.
func (b *Broker) SetDynamicDefault(m map[string]string) {
	b.mu.Lock()
	b.dynamicDefault = copyMap(m)
	b.throttle = nil
	b.gen++
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

// Topic resolves the configs of a topic with the given overrides, typed. An
// override that is not valid (written to the store around the broker's checks)
// is passed over, as if it were not set; a dynamic broker value that is not
// valid gives way to the default.
func (b *Broker) Topic(overrides map[string]string) TopicSettings {
	valid := make(map[string]string, len(overrides))
	for k, v := range overrides {
		if d, ok := LookupTopic(k); ok && d.Check(v) == nil {
			valid[k] = v
		}
	}
	var t TopicSettings
	get := func(name string) Value {
		v, _ := b.TopicValue(name, valid)
		return v
	}
	// Only a default that does not parse could fail, and the tests decode
	// every default.
	_ = decode(&t, TopicDefs, get, true)
	return t
}

// TopicCompression is a topic's compression.type, resolved as Topic does; the
// produce path reads it on every request.
func (b *Broker) TopicCompression(overrides map[string]string) string {
	v, _ := b.TopicValue("compression.type", overrides)
	return v.Value
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
