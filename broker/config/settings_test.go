package config

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// tags returns the setting names a settings struct reads.
func tags(v any) map[string]bool {
	out := map[string]bool{}
	t := reflect.TypeOf(v)
	for i := range t.NumField() {
		out[t.Field(i).Tag.Get("config")] = true
	}
	return out
}

func TestEveryKeyReadIsDefined(t *testing.T) {
	// decode refuses a field whose key is not defined, or a duration whose key
	// has no unit; the defaults of both tables must decode without fallback.
	if _, err := NewBroker(nil); err != nil {
		t.Fatalf("the broker defaults: %v", err)
	}
	var ts TopicSettings
	get := func(name string) Value {
		d, _ := LookupTopic(name)
		return Value{Name: name, Value: d.Default, Null: d.Null}
	}
	if err := decode(&ts, TopicDefs, get, false); err != nil {
		t.Fatalf("the topic defaults: %v", err)
	}
	type misspelt struct {
		LagTime time.Duration `config:"replica.lag.time.max.mss"`
	}
	if err := decode(&misspelt{}, BrokerDefs, (&Broker{}).Get, false); err == nil || !strings.Contains(err.Error(), "not defined") {
		t.Fatalf("a misspelt key must fail: %v", err)
	}
}

func TestEveryDefinedKeyIsRead(t *testing.T) {
	brokerRead, topicRead := tags(Settings{}), tags(TopicSettings{})
	for k := range tags(ListenerSecurity{}) {
		brokerRead[k] = true // read per listener, through Broker.Listener
	}
	for k := range tags(Throttle{}) {
		brokerRead[k] = true // dynamic, read through Broker.Throttle
	}
	synonym := map[string]bool{}
	for _, d := range TopicDefs {
		if topicRead[d.Name] {
			for _, s := range d.Synonyms {
				synonym[s] = true
			}
		}
	}
	check := func(kind string, defs []Def, read map[string]bool) {
		for _, d := range defs {
			used := read[d.Name] || (kind == "broker" && synonym[d.Name])
			switch {
			case used && d.Ignored:
				t.Errorf("%s setting %s is read but marked Ignored", kind, d.Name)
			case !used && !d.Ignored:
				t.Errorf("%s setting %s is defined but nothing reads it: add it to the settings struct, or mark it Ignored and say so in its Doc", kind, d.Name)
			case d.Ignored && !strings.Contains(d.Doc, "accepted and ignored"):
				t.Errorf("%s setting %s is Ignored but its Doc does not say \"accepted and ignored\": %q", kind, d.Name, d.Doc)
			}
		}
	}
	check("broker", BrokerDefs, brokerRead)
	check("topic", TopicDefs, topicRead)
}

// TestNoStringLookupsOutsideConfig reads every Go file of the module: outside
// this package, a setting is read through Settings or TopicSettings, never
// looked up by a name written in the code.
func TestNoStringLookupsOutsideConfig(t *testing.T) {
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(root, "go.mod")); err != nil {
		t.Fatalf("module root not found at %s: %v", root, err)
	}
	self, _ := filepath.Abs(".")
	lookups := map[string]bool{"Get": true, "TopicValue": true}
	files := 0
	err = filepath.WalkDir(root, func(path string, e fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if e.IsDir() {
			if path == self || strings.HasPrefix(e.Name(), ".") || e.Name() == "testdata" || e.Name() == "node_modules" {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") {
			return nil
		}
		f, err := parser.ParseFile(token.NewFileSet(), path, nil, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		files++
		ast.Inspect(f, func(n ast.Node) bool {
			call, ok := n.(*ast.CallExpr)
			if !ok || len(call.Args) == 0 {
				return true
			}
			sel, ok := call.Fun.(*ast.SelectorExpr)
			if !ok || !lookups[sel.Sel.Name] {
				return true
			}
			lit, ok := call.Args[0].(*ast.BasicLit)
			if !ok || lit.Kind != token.STRING {
				return true
			}
			name, _ := strconv.Unquote(lit.Value)
			_, broker := LookupBroker(name)
			_, topic := LookupTopic(name)
			if broker || topic {
				rel, _ := filepath.Rel(root, path)
				t.Errorf("%s: %s(%q) looks a setting up by name; read the Settings or TopicSettings field", rel, sel.Sel.Name, name)
			}
			return true
		})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if files < 100 {
		t.Fatalf("only %d Go files found under %s", files, root)
	}
}

func TestSettingsUnits(t *testing.T) {
	b, err := NewBroker(map[string]string{
		"broker.id":               "4",
		"listeners":               "PLAINTEXT://:1, PLAINTEXT://:2",
		"log.dir":                 "/data",
		"replica.lag.time.max.ms": "1500",
		"leader.imbalance.check.interval.seconds": "7",
		"offsets.retention.minutes":               "3",
		"log.cleaner.dedupe.buffer.size":          "4096",
		"connections.max.idle.ms":                 "-1",
		"max.connections.per.ip.overrides":        "10.0.0.1:5,[::1]:6",
	})
	if err != nil {
		t.Fatal(err)
	}
	s := b.Settings()
	for _, c := range []struct {
		name      string
		got, want any
	}{
		{"broker.id", s.BrokerID, int32(4)},
		{"listeners", s.Listeners, []string{"PLAINTEXT://:1", "PLAINTEXT://:2"}},
		{"log dirs from log.dir", s.LogDirs(), []string{"/data"}},
		{"replica.lag.time.max.ms", s.ReplicaLagTimeMax, 1500 * time.Millisecond},
		{"leader.imbalance.check.interval.seconds", s.LeaderImbalanceCheckPeriod, 7 * time.Second},
		{"offsets.retention.minutes", s.OffsetsRetention, 3 * time.Minute},
		{"log.cleaner.dedupe.buffer.size", s.LogCleanerDedupeBuffer, Bytes(4096)},
		{"connections.max.idle.ms", s.ConnectionsMaxIdle, -time.Millisecond},
		{"zookeeper.connection.timeout.ms unset", s.ZooKeeperConnectionTimeout, time.Duration(0)},
		{"zookeeper.session.timeout.ms default", s.ZooKeeperSessionTimeout, 18 * time.Second},
		{"broker.rack unset", s.Rack, ""},
		{"max.connections.per.ip.overrides", s.MaxConnectionsPerIPOverrides, map[string]int{"10.0.0.1": 5, "::1": 6}},
	} {
		if !reflect.DeepEqual(c.got, c.want) {
			t.Errorf("%s = %#v, want %#v", c.name, c.got, c.want)
		}
	}
	b, err = NewBroker(map[string]string{"log.dirs": "/a,/b", "log.dir": "/c"})
	if err != nil {
		t.Fatal(err)
	}
	if got := b.Settings().LogDirs(); !slices.Equal(got, []string{"/a", "/b"}) {
		t.Errorf("log.dirs before log.dir: %v", got)
	}
	if _, err := NewBroker(map[string]string{"max.connections.per.ip.overrides": "nohost"}); err == nil {
		t.Error("an unreadable max.connections.per.ip.overrides was accepted")
	}

	// Long.MaxValue milliseconds is Forever, and back.
	ts := b.Topic(nil)
	if ts.FlushInterval != Forever || ts.MaxCompactionLag != Forever || Millis(ts.FlushInterval) != math.MaxInt64 {
		t.Errorf("flush.ms %v, max.compaction.lag.ms %v: want Forever", ts.FlushInterval, ts.MaxCompactionLag)
	}
	if Millis(1500*time.Millisecond) != 1500 || scale(-1, time.Millisecond) != -time.Millisecond || scale(math.MinInt64, time.Hour) != -Forever {
		t.Error("Millis or scale is wrong")
	}
}

func TestTopicSettingsPassOverInvalidValues(t *testing.T) {
	b, err := NewBroker(map[string]string{"log.segment.bytes": "2000"})
	if err != nil {
		t.Fatal(err)
	}
	ts := b.Topic(map[string]string{"segment.bytes": "huge", "min.insync.replicas": "2", "unclean.leader.election.enable": "true"})
	if ts.SegmentBytes != 2000 || ts.MinInsyncReplicas != 2 || !ts.UncleanLeaderElection {
		t.Errorf("overrides: %+v", ts)
	}
	// A dynamic value written around AlterConfigs' checks.
	b.SetDynamic(map[string]string{"log.retention.ms": "soon"})
	if got := b.Topic(nil).Retention; got != 7*24*time.Hour {
		t.Errorf("an unreadable dynamic log.retention.ms gives %v, want the default", got)
	}
	if got := b.TopicCompression(map[string]string{"compression.type": "zstd"}); got != "zstd" {
		t.Errorf("TopicCompression = %q", got)
	}
	if got := b.TopicCompression(nil); got != "producer" {
		t.Errorf("TopicCompression default = %q", got)
	}
}
