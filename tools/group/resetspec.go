package group

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"time"
)

// Reset kinds, one per kafka-consumer-groups.sh option.
const (
	ToEarliest = "earliest"
	ToLatest   = "latest"
	ToOffset   = "offset"
	ToDatetime = "datetime"
	ByDuration = "duration"
	ShiftBy    = "shift"
	ToCurrent  = "current"
)

// ResetSpec says where reset-offsets moves each partition.
type ResetSpec struct {
	Kind   string
	Offset int64     // ToOffset: the offset; ShiftBy: the shift
	Time   time.Time // ToDatetime and ByDuration: the first record at or after it
}

// UsesTime reports whether the plan needs offsets looked up by time.
func (s ResetSpec) UsesTime() bool { return s.Kind == ToDatetime || s.Kind == ByDuration }

// Target is the new offset of a partition whose log spans [start, end), with
// committed the group's offset (-1: none) and atTime the offset the cluster
// listed for Time (-1: no record at or after it). Like Kafka's tool, an
// offset outside the log is moved to its nearest end.
func (s ResetSpec) Target(committed, start, end, atTime int64) (int64, error) {
	var at int64
	switch s.Kind {
	case ToEarliest:
		at = start
	case ToLatest:
		at = end
	case ToOffset:
		at = s.Offset
	case ToDatetime, ByDuration:
		at = atTime
		if at < 0 {
			at = end
		}
	case ShiftBy:
		if committed < 0 {
			return 0, fmt.Errorf("no committed offset to shift")
		}
		at = committed + s.Offset
	case ToCurrent:
		at = committed
		if at < 0 {
			at = end
		}
	default:
		return 0, fmt.Errorf("unknown reset kind %q", s.Kind)
	}
	return min(max(at, start), end), nil
}

// ParseDatetime reads --to-datetime: Kafka's YYYY-MM-DDTHH:mm:SS.sss with an
// optional zone (Z or ±HH:MM; local time without one), the same without
// milliseconds or seconds, or a date alone (local midnight).
func ParseDatetime(s string) (time.Time, error) {
	s = strings.TrimSpace(s)
	for _, layout := range []string{time.RFC3339Nano, "2006-01-02T15:04:05.000Z0700", "2006-01-02T15:04Z07:00"} {
		if t, err := time.Parse(layout, s); err == nil {
			return t, nil
		}
	}
	for _, layout := range []string{"2006-01-02T15:04:05.999999999", "2006-01-02T15:04", "2006-01-02"} {
		if t, err := time.ParseInLocation(layout, s, time.Local); err == nil {
			return t, nil
		}
	}
	return time.Time{}, fmt.Errorf("--to-datetime %q: want YYYY-MM-DDTHH:mm:SS[.sss][Z|±HH:MM] (e.g. 2026-01-31T09:30:00.000Z)", s)
}

var isoDuration = regexp.MustCompile(`^P(?:(\d+)D)?(?:T(?:(\d+)H)?(?:(\d+)M)?(?:(\d+(?:\.\d+)?)S)?)?$`)

// ParseDuration reads --by-duration: an ISO 8601 duration as Kafka takes it
// (PnDTnHnMnS, e.g. PT30M or P1DT2H) or a Go duration (90m, 1h30m).
func ParseDuration(s string) (time.Duration, error) {
	s = strings.TrimSpace(s)
	bad := fmt.Errorf("--by-duration %q: want an ISO 8601 duration such as PT30M or P1DT2H, or a duration such as 90m", s)
	if m := isoDuration.FindStringSubmatch(strings.ToUpper(s)); m != nil && s != "P" && !strings.HasSuffix(strings.ToUpper(s), "T") {
		var d time.Duration
		for i, unit := range []time.Duration{24 * time.Hour, time.Hour, time.Minute} {
			if m[i+1] == "" {
				continue
			}
			n, err := strconv.ParseInt(m[i+1], 10, 64)
			if err != nil || n > int64(1<<62)/int64(unit) {
				return 0, bad
			}
			d += time.Duration(n) * unit
		}
		if m[4] != "" {
			secs, err := strconv.ParseFloat(m[4], 64)
			if err != nil || secs > float64(1<<62)/float64(time.Second) {
				return 0, bad
			}
			d += time.Duration(secs * float64(time.Second))
		}
		if d <= 0 {
			return 0, bad
		}
		return d, nil
	}
	d, err := time.ParseDuration(s)
	if err != nil || d <= 0 {
		return 0, bad
	}
	return d, nil
}
