package consume

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/twmb/franz-go/pkg/kgo"
)

// OffsetSpec is a parsed --offset: beginning, end, an absolute offset N, N
// records before the end (-N), or the first record at or after a timestamp
// (@epoch-ms).
type OffsetSpec struct {
	Kind  string // beginning, end, absolute, relative or timestamp
	Value int64  // the offset, the count back from the end, or the ms
}

// ParseOffset parses --offset.
func ParseOffset(s string) (OffsetSpec, error) {
	switch s = strings.TrimSpace(s); {
	case s == "beginning" || s == "earliest" || s == "oldest":
		return OffsetSpec{Kind: "beginning"}, nil
	case s == "end" || s == "latest" || s == "newest":
		return OffsetSpec{Kind: "end"}, nil
	case strings.HasPrefix(s, "@"):
		ms, err := strconv.ParseInt(s[1:], 10, 64)
		if err != nil || ms < 0 {
			return OffsetSpec{}, fmt.Errorf("--offset %q: want @<epoch milliseconds>", s)
		}
		return OffsetSpec{Kind: "timestamp", Value: ms}, nil
	case strings.HasPrefix(s, "-"):
		n, err := strconv.ParseInt(s[1:], 10, 64)
		if err != nil || n <= 0 {
			return OffsetSpec{}, fmt.Errorf("--offset %q: want -N with N > 0 (N records before the end)", s)
		}
		return OffsetSpec{Kind: "relative", Value: n}, nil
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil || n < 0 {
		return OffsetSpec{}, fmt.Errorf("--offset %q: want beginning, end, N, -N or @timestamp-ms", s)
	}
	return OffsetSpec{Kind: "absolute", Value: n}, nil
}

// Reset is the spec as the client's reset offset, used where a group has no
// committed offset.
func (o OffsetSpec) Reset() kgo.Offset {
	switch o.Kind {
	case "beginning":
		return kgo.NewOffset().AtStart()
	case "end":
		return kgo.NewOffset().AtEnd()
	case "relative":
		return kgo.NewOffset().AtEnd().Relative(-o.Value)
	case "timestamp":
		return kgo.NewOffset().AfterMilli(o.Value)
	}
	return kgo.NewOffset().At(o.Value)
}

// Resolve gives the first offset to read from a partition whose log spans
// [start, end), for the timestamp kind given the offset the cluster listed
// for the time (-1: none at or after it).
func (o OffsetSpec) Resolve(start, end, atTime int64) int64 {
	var at int64
	switch o.Kind {
	case "beginning":
		at = start
	case "end":
		at = end
	case "relative":
		at = end - o.Value
	case "timestamp":
		at = atTime
		if at < 0 {
			at = end
		}
	default:
		at = o.Value
	}
	return min(max(at, start), end)
}
