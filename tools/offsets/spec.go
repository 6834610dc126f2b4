package offsets

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/ktoolhq/ktool/tools/group"
)

// The special timestamps of ListOffsets.
const (
	Latest       int64 = -1
	Earliest     int64 = -2
	MaxTimestamp int64 = -3
)

// ParseTime reads --time: earliest, latest or max-timestamp (or Kafka's -2,
// -1, -3), a timestamp in milliseconds, a date-time (2026-01-31T09:30:00Z, as
// kafka-consumer-groups.sh takes it), or a duration back from now (-30m,
// 1h ago). now is the reference for durations.
func ParseTime(s string, now time.Time) (int64, error) {
	s = strings.TrimSpace(s)
	switch strings.ToLower(s) {
	case "latest", "end", "-1":
		return Latest, nil
	case "earliest", "start", "beginning", "-2":
		return Earliest, nil
	case "max-timestamp", "-3":
		return MaxTimestamp, nil
	}
	if ms, err := strconv.ParseInt(s, 10, 64); err == nil {
		if ms < 0 {
			return 0, fmt.Errorf("--time %d: a negative timestamp is -1 (latest), -2 (earliest) or -3 (max-timestamp)", ms)
		}
		return ms, nil
	}
	if d, ok := strings.CutSuffix(s, " ago"); ok {
		s = "-" + strings.TrimSpace(d)
	}
	if back, ok := strings.CutPrefix(s, "-"); ok {
		d, err := group.ParseDuration(back)
		if err != nil {
			return 0, fmt.Errorf("--time %q: %w", s, err)
		}
		return now.Add(-d).UnixMilli(), nil
	}
	t, err := group.ParseDatetime(s)
	if err != nil {
		return 0, fmt.Errorf("--time %q: want earliest, latest, max-timestamp, milliseconds, a date-time such as 2026-01-31T09:30:00Z, or a duration back such as -30m", s)
	}
	return t.UnixMilli(), nil
}

// ParsePartitions reads a partition list: "0,2,5-7".
func ParsePartitions(s string) ([]int32, error) {
	var out []int32
	seen := map[int32]bool{}
	for _, part := range strings.Split(s, ",") {
		part = strings.TrimSpace(part)
		if part == "" {
			continue
		}
		lo, hi, isRange := strings.Cut(part, "-")
		a, err := strconv.ParseInt(strings.TrimSpace(lo), 10, 32)
		if err != nil || a < 0 {
			return nil, fmt.Errorf("partition %q is not a partition number", part)
		}
		b := a
		if isRange {
			if b, err = strconv.ParseInt(strings.TrimSpace(hi), 10, 32); err != nil || b < a {
				return nil, fmt.Errorf("partition range %q is not LOW-HIGH", part)
			}
			if b-a >= 1<<16 {
				return nil, fmt.Errorf("partition range %q is too large", part)
			}
		}
		for p := a; p <= b; p++ {
			if !seen[int32(p)] {
				seen[int32(p)] = true
				out = append(out, int32(p))
			}
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("no partitions in %q", s)
	}
	return out, nil
}

// Target is one argument: a topic and, optionally, some of its partitions
// (nil: all of them).
type Target struct {
	Topic      string
	Partitions []int32
}

// ParseTarget reads TOPIC or TOPIC:PARTITIONS (as kafka-get-offsets.sh's
// --topic-partitions takes them).
func ParseTarget(s string) (Target, error) {
	topic, parts, ok := strings.Cut(s, ":")
	if topic == "" {
		return Target{}, fmt.Errorf("%q names no topic", s)
	}
	t := Target{Topic: topic}
	if ok {
		ps, err := ParsePartitions(parts)
		if err != nil {
			return Target{}, fmt.Errorf("%s: %w", s, err)
		}
		t.Partitions = ps
	}
	return t, nil
}
