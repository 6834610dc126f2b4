package zk

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	gozk "github.com/go-zookeeper/zk"
)

// Stat is a znode's stat in readable form.
type Stat struct {
	Version        int32     `json:"version" yaml:"version"`
	ChildVersion   int32     `json:"cversion" yaml:"cversion"`
	EphemeralOwner string    `json:"ephemeral_owner" yaml:"ephemeral_owner"`
	Ctime          time.Time `json:"ctime" yaml:"ctime"`
	Mtime          time.Time `json:"mtime" yaml:"mtime"`
	Czxid          string    `json:"czxid" yaml:"czxid"`
	Mzxid          string    `json:"mzxid" yaml:"mzxid"`
	DataLength     int32     `json:"data_length" yaml:"data_length"`
	NumChildren    int32     `json:"num_children" yaml:"num_children"`
}

// Ephemeral reports whether the znode lives only as long as its owner's session.
func (s Stat) Ephemeral() bool { return s.EphemeralOwner != "" }

// MakeStat converts go-zookeeper's stat. Times are UTC.
func MakeStat(s *gozk.Stat) Stat {
	if s == nil {
		return Stat{}
	}
	st := Stat{
		Version: s.Version, ChildVersion: s.Cversion,
		Ctime: time.UnixMilli(s.Ctime).UTC(), Mtime: time.UnixMilli(s.Mtime).UTC(),
		Czxid: hex(s.Czxid), Mzxid: hex(s.Mzxid),
		DataLength: s.DataLength, NumChildren: s.NumChildren,
	}
	if s.EphemeralOwner != 0 {
		st.EphemeralOwner = hex(s.EphemeralOwner)
	}
	return st
}

func hex(v int64) string { return "0x" + strconv.FormatUint(uint64(v), 16) }

// Node is a znode's data and stat, as `ktool zk get` prints it.
type Node struct {
	Path string `json:"path" yaml:"path"`
	// Data is the decoded JSON value when the data is JSON (Kafka's znodes
	// are), else the data as a string; null when empty.
	Data any  `json:"data" yaml:"data"`
	Stat Stat `json:"stat" yaml:"stat"`
}

// DecodeData turns znode data into a JSON value if it is JSON, else a string.
// Integers stay integers (Kafka stores broker ids and epochs in them).
func DecodeData(b []byte) any {
	if len(bytes.TrimSpace(b)) == 0 {
		if len(b) == 0 {
			return nil
		}
		return string(b)
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil || dec.More() {
		return string(b)
	}
	return numbers(v)
}

func numbers(v any) any {
	switch x := v.(type) {
	case json.Number:
		if i, err := x.Int64(); err == nil {
			return i
		}
		f, _ := x.Float64()
		return f
	case map[string]any:
		for k, e := range x {
			x[k] = numbers(e)
		}
	case []any:
		for i, e := range x {
			x[i] = numbers(e)
		}
	}
	return v
}

// writeNode prints a znode for people: the data (JSON indented, Kafka's
// millisecond timestamps explained) and the stat.
func writeNode(w io.Writer, n Node) error {
	fmt.Fprintln(w, n.Path)
	switch d := n.Data.(type) {
	case nil:
		fmt.Fprintln(w, "(no data)")
	case string:
		fmt.Fprintln(w, d)
	default:
		b, err := json.MarshalIndent(d, "", "  ")
		if err != nil {
			return err
		}
		fmt.Fprintln(w, string(b))
		if note, ok := timestampNote(d); ok {
			fmt.Fprintln(w, note)
		}
	}
	fmt.Fprintln(w)
	return writeStat(w, n.Stat)
}

// timestampNote explains a top-level "timestamp" field, which Kafka writes as
// a string of epoch milliseconds.
func timestampNote(v any) (string, bool) {
	m, ok := v.(map[string]any)
	if !ok {
		return "", false
	}
	ms, ok := millis(m["timestamp"])
	if !ok {
		return "", false
	}
	return fmt.Sprintf("(timestamp %d is %s)", ms, time.UnixMilli(ms).UTC().Format(time.RFC3339Nano)), true
}

func millis(v any) (int64, bool) {
	switch x := v.(type) {
	case string:
		ms, err := strconv.ParseInt(x, 10, 64)
		return ms, err == nil
	case int64:
		return x, true
	}
	return 0, false
}

func writeStat(w io.Writer, s Stat) error {
	owner := "none (persistent)"
	if s.Ephemeral() {
		owner = s.EphemeralOwner + " (ephemeral: gone when this session ends)"
	}
	rows := [][2]string{
		{"version", strconv.Itoa(int(s.Version))},
		{"child version", strconv.Itoa(int(s.ChildVersion))},
		{"ephemeral owner", owner},
		{"created", s.Ctime.Format(time.RFC3339Nano) + " (czxid " + s.Czxid + ")"},
		{"modified", s.Mtime.Format(time.RFC3339Nano) + " (mzxid " + s.Mzxid + ")"},
		{"data length", strconv.Itoa(int(s.DataLength))},
		{"children", strconv.Itoa(int(s.NumChildren))},
	}
	var b strings.Builder
	for _, r := range rows {
		fmt.Fprintf(&b, "%-16s %s\n", r[0]+":", r[1])
	}
	_, err := io.WriteString(w, b.String())
	return err
}

func jsonCompact(v any) (string, error) {
	b, err := json.Marshal(v)
	return string(b), err
}
