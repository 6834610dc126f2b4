package ui

import (
	"bytes"
	"context"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/twmb/franz-go/pkg/kgo"
)

// Bounds of one browse request: records returned, records scanned while
// filtering, bytes fetched, bytes of a key or value shown, and time spent.
const (
	browseMaxLimit   = 500
	browseMaxScan    = 10000
	browseFetchBytes = 4 << 20
	browseShowBytes  = 16 << 10
	browseMaxTime    = 5 * time.Second
	filterMaxLen     = 200
)

type shownBytes struct {
	Kind      string `json:"kind"` // json, text, hex or null
	Text      string `json:"text"`
	Size      int    `json:"size"`
	Truncated bool   `json:"truncated"`
}

type shownHeader struct {
	Key   string     `json:"key"`
	Value shownBytes `json:"value"`
}

type shownRecord struct {
	Partition int32         `json:"partition"`
	Offset    int64         `json:"offset"`
	Timestamp int64         `json:"timestamp"`
	Key       shownBytes    `json:"key"`
	Value     shownBytes    `json:"value"`
	Headers   []shownHeader `json:"headers"`
}

// show renders bytes for the page: pretty JSON when they parse as JSON, text
// when they are printable UTF-8, else hex; mode forces one of them.
func show(b []byte, isNull bool, mode string) shownBytes {
	if isNull {
		return shownBytes{Kind: "null"}
	}
	out := shownBytes{Size: len(b)}
	cut := b
	if len(cut) > browseShowBytes {
		cut, out.Truncated = cut[:browseShowBytes], true
	}
	var buf bytes.Buffer
	switch {
	case (mode == "" || mode == "json") && !out.Truncated && json.Valid(b) && json.Indent(&buf, b, "", "  ") == nil:
		out.Kind, out.Text = "json", buf.String()
	case (mode == "" || mode == "text" || mode == "json") && printable(cut):
		out.Kind, out.Text = "text", string(cut)
	default:
		out.Kind, out.Text = "hex", hex.Dump(cut)
	}
	return out
}

func printable(b []byte) bool {
	if !utf8.Valid(b) {
		return false
	}
	for _, r := range string(b) {
		if r < 0x20 && r != '\n' && r != '\r' && r != '\t' {
			return false
		}
	}
	return true
}

// exportRecord is one line of a JSON-lines export: key and value as UTF-8
// text when they are, else base64 (with the encoding named).
type exportRecord struct {
	Topic     string            `json:"topic"`
	Partition int32             `json:"partition"`
	Offset    int64             `json:"offset"`
	Timestamp int64             `json:"timestamp"`
	Key       *string           `json:"key"`
	KeyEnc    string            `json:"key_encoding,omitempty"`
	Value     *string           `json:"value"`
	ValueEnc  string            `json:"value_encoding,omitempty"`
	Headers   map[string]string `json:"headers,omitempty"`
}

func encodeField(b []byte, isNull bool) (*string, string) {
	if isNull {
		return nil, ""
	}
	if utf8.Valid(b) {
		s := string(b)
		return &s, ""
	}
	s := fmt.Sprintf("%x", b)
	return &s, "hex"
}

type browseQuery struct {
	Topic     string
	Partition int32
	Offset    int64 // -1: use Timestamp
	Timestamp int64 // unix ms, when Offset < 0
	Limit     int
	Filter    string
	Mode      string
}

func parseBrowse(r *http.Request) (browseQuery, error) {
	q := r.URL.Query()
	b := browseQuery{Topic: q.Get("topic"), Offset: -1, Limit: 50, Filter: q.Get("filter"), Mode: q.Get("mode")}
	if err := validTopicName(b.Topic); err != nil {
		return b, err
	}
	p, err := strconv.ParseInt(q.Get("partition"), 10, 32)
	if err != nil || p < 0 {
		return b, errors.New("partition must be a number >= 0")
	}
	b.Partition = int32(p)
	switch {
	case q.Get("offset") != "":
		if b.Offset, err = strconv.ParseInt(q.Get("offset"), 10, 64); err != nil || b.Offset < 0 {
			return b, errors.New("offset must be a number >= 0")
		}
	case q.Get("timestamp") != "":
		ts := q.Get("timestamp")
		if ms, err := strconv.ParseInt(ts, 10, 64); err == nil {
			b.Timestamp = ms
		} else if t, err := time.Parse(time.RFC3339, ts); err == nil {
			b.Timestamp = t.UnixMilli()
		} else if t, err := time.ParseInLocation("2006-01-02T15:04", ts, time.Local); err == nil {
			b.Timestamp = t.UnixMilli()
		} else {
			return b, errors.New("timestamp must be unix milliseconds or RFC 3339")
		}
	default:
		b.Offset = 0
	}
	if l := q.Get("limit"); l != "" {
		if b.Limit, err = strconv.Atoi(l); err != nil || b.Limit <= 0 {
			return b, errors.New("limit must be a number > 0")
		}
	}
	b.Limit = min(b.Limit, browseMaxLimit)
	if len(b.Filter) > filterMaxLen {
		return b, fmt.Errorf("filter is longer than %d bytes", filterMaxLen)
	}
	switch b.Mode {
	case "", "json", "text", "hex":
	default:
		return b, errors.New("mode must be json, text or hex")
	}
	return b, nil
}

func matches(rec *kgo.Record, filter []byte) bool {
	if len(filter) == 0 {
		return true
	}
	if bytes.Contains(rec.Key, filter) || bytes.Contains(rec.Value, filter) {
		return true
	}
	for _, h := range rec.Headers {
		if strings.Contains(h.Key, string(filter)) || bytes.Contains(h.Value, filter) {
			return true
		}
	}
	return false
}

// browse reads up to q.Limit records of one partition that match the filter,
// from an offset or the first record at or after a timestamp, stopping at the
// high watermark, after browseMaxScan records or after browseMaxTime.
func (s *Server) browse(ctx context.Context, q browseQuery) ([]*kgo.Record, int64, error) {
	ctx, cancel := context.WithTimeout(ctx, browseMaxTime)
	defer cancel()
	ends, err := s.cache.adm.ListEndOffsets(ctx, q.Topic)
	if err != nil {
		return nil, 0, s.f.ClusterError("listing end offsets", err)
	}
	end, ok := ends.Lookup(q.Topic, q.Partition)
	if !ok {
		return nil, 0, fmt.Errorf("topic %q has no partition %d", q.Topic, q.Partition)
	}
	if end.Err != nil {
		return nil, 0, fmt.Errorf("partition %d: %w", q.Partition, end.Err)
	}
	from := kgo.NewOffset().At(q.Offset)
	if q.Offset < 0 {
		from = kgo.NewOffset().AfterMilli(q.Timestamp)
	} else if q.Offset >= end.Offset {
		return nil, end.Offset, nil
	}
	cl, err := s.f.Client(
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{q.Topic: {q.Partition: from}}),
		kgo.FetchMaxBytes(browseFetchBytes), kgo.FetchMaxPartitionBytes(browseFetchBytes),
		kgo.FetchMaxWait(500*time.Millisecond))
	if err != nil {
		return nil, 0, err
	}
	defer cl.Close()
	var out []*kgo.Record
	filter := []byte(q.Filter)
	scanned := 0
	for len(out) < q.Limit && scanned < browseMaxScan {
		fs := cl.PollRecords(ctx, q.Limit)
		if ctx.Err() != nil {
			break
		}
		if err := fs.Err0(); err != nil {
			return nil, end.Offset, fmt.Errorf("fetching: %w", err)
		}
		done := false
		fs.EachRecord(func(rec *kgo.Record) {
			if done || len(out) >= q.Limit {
				return
			}
			scanned++
			if matches(rec, filter) {
				out = append(out, rec)
			}
			if rec.Offset >= end.Offset-1 {
				done = true
			}
		})
		if done {
			break
		}
	}
	return out, end.Offset, nil
}

func (s *Server) apiMessages(w http.ResponseWriter, r *http.Request) {
	q, err := parseBrowse(r)
	if err != nil {
		writeError(w, http.StatusBadRequest, err)
		return
	}
	if !acquire(w, s.browsing, "message browses") {
		return
	}
	defer func() { <-s.browsing }()
	recs, hw, err := s.browse(r.Context(), q)
	if err != nil {
		writeError(w, http.StatusBadGateway, err)
		return
	}
	if r.URL.Query().Get("format") == "jsonl" {
		w.Header().Set("Content-Type", "application/x-ndjson")
		w.Header().Set("Content-Disposition", fmt.Sprintf(`attachment; filename="%s-%d.jsonl"`, safeFileName(q.Topic), q.Partition))
		enc := json.NewEncoder(w)
		for _, rec := range recs {
			e := exportRecord{Topic: rec.Topic, Partition: rec.Partition, Offset: rec.Offset, Timestamp: rec.Timestamp.UnixMilli()}
			e.Key, e.KeyEnc = encodeField(rec.Key, rec.Key == nil)
			e.Value, e.ValueEnc = encodeField(rec.Value, rec.Value == nil)
			if len(rec.Headers) > 0 {
				e.Headers = map[string]string{}
				for _, h := range rec.Headers {
					e.Headers[h.Key] = string(h.Value)
				}
			}
			_ = enc.Encode(e)
		}
		return
	}
	rows := make([]shownRecord, 0, len(recs))
	for _, rec := range recs {
		sr := shownRecord{Partition: rec.Partition, Offset: rec.Offset, Timestamp: rec.Timestamp.UnixMilli(),
			Key: show(rec.Key, rec.Key == nil, q.Mode), Value: show(rec.Value, rec.Value == nil, q.Mode), Headers: []shownHeader{}}
		for _, h := range rec.Headers {
			sr.Headers = append(sr.Headers, shownHeader{Key: h.Key, Value: show(h.Value, false, q.Mode)})
		}
		rows = append(rows, sr)
	}
	writeJSON(w, map[string]any{"records": rows, "high_watermark": hw, "limit": q.Limit})
}

// safeFileName keeps a topic name usable in a Content-Disposition header.
func safeFileName(s string) string {
	return strings.Map(func(r rune) rune {
		if r == '.' || r == '_' || r == '-' || (r >= 'a' && r <= 'z') || (r >= 'A' && r <= 'Z') || (r >= '0' && r <= '9') {
			return r
		}
		return '_'
	}, s)
}
