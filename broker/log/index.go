package log

import (
	"encoding/binary"
	"fmt"
	"os"
	"sort"
)

const (
	offsetEntrySize = 8
	timeEntrySize   = 12
)

// offsetEntry maps the last offset of a batch (relative to the segment base)
// to the file position where that batch starts, as Kafka's offset index does.
type offsetEntry struct {
	rel int32
	pos int32
}

// timeEntry records the largest timestamp seen so far in a segment and the
// offset (relative) of the batch that carried it.
type timeEntry struct {
	ts  int64
	rel int32
}

func encodeOffsetEntries(dst []byte, es []offsetEntry) []byte {
	for _, e := range es {
		dst = binary.BigEndian.AppendUint32(dst, uint32(e.rel))
		dst = binary.BigEndian.AppendUint32(dst, uint32(e.pos))
	}
	return dst
}

func encodeTimeEntries(dst []byte, es []timeEntry) []byte {
	for _, e := range es {
		dst = binary.BigEndian.AppendUint64(dst, uint64(e.ts))
		dst = binary.BigEndian.AppendUint32(dst, uint32(e.rel))
	}
	return dst
}

// readOffsetIndex loads an offset index and checks that it can describe a log
// of logSize bytes: whole entries, strictly increasing offsets and positions,
// positions inside the log.
func readOffsetIndex(path string, logSize int64) ([]offsetEntry, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	if len(b)%offsetEntrySize != 0 {
		return nil, fmt.Errorf("offset index %s: size %d is not a multiple of %d", path, len(b), offsetEntrySize)
	}
	es := make([]offsetEntry, 0, len(b)/offsetEntrySize)
	for i := 0; i < len(b); i += offsetEntrySize {
		e := offsetEntry{
			rel: int32(binary.BigEndian.Uint32(b[i:])),
			pos: int32(binary.BigEndian.Uint32(b[i+4:])),
		}
		if e.rel < 0 || e.pos < 0 || int64(e.pos) >= logSize {
			return nil, fmt.Errorf("offset index %s: entry %d (%d, %d) outside a %d-byte log", path, len(es), e.rel, e.pos, logSize)
		}
		if n := len(es); n > 0 && (e.rel <= es[n-1].rel || e.pos <= es[n-1].pos) {
			return nil, fmt.Errorf("offset index %s: entry %d (%d, %d) does not follow (%d, %d)", path, n, e.rel, e.pos, es[n-1].rel, es[n-1].pos)
		}
		es = append(es, e)
	}
	return es, nil
}

// readTimeIndex loads a time index: whole entries, increasing timestamps and
// non-decreasing offsets.
func readTimeIndex(path string) ([]timeEntry, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	if len(b)%timeEntrySize != 0 {
		return nil, fmt.Errorf("time index %s: size %d is not a multiple of %d", path, len(b), timeEntrySize)
	}
	es := make([]timeEntry, 0, len(b)/timeEntrySize)
	for i := 0; i < len(b); i += timeEntrySize {
		e := timeEntry{
			ts:  int64(binary.BigEndian.Uint64(b[i:])),
			rel: int32(binary.BigEndian.Uint32(b[i+8:])),
		}
		if e.rel < 0 {
			return nil, fmt.Errorf("time index %s: entry %d has offset %d", path, len(es), e.rel)
		}
		if n := len(es); n > 0 && (e.ts <= es[n-1].ts || e.rel < es[n-1].rel) {
			return nil, fmt.Errorf("time index %s: entry %d (%d, %d) does not follow (%d, %d)", path, n, e.ts, e.rel, es[n-1].ts, es[n-1].rel)
		}
		es = append(es, e)
	}
	return es, nil
}

// lookupPosition returns the position of the index entry with the largest
// offset <= rel, or 0: the scan for the batch holding rel starts there.
func lookupPosition(es []offsetEntry, rel int64) int64 {
	i := sort.Search(len(es), func(i int) bool { return int64(es[i].rel) > rel })
	if i == 0 {
		return 0
	}
	return int64(es[i-1].pos)
}

// lookupTime returns the entry with the largest timestamp <= ts.
func lookupTime(es []timeEntry, ts int64) (timeEntry, bool) {
	i := sort.Search(len(es), func(i int) bool { return es[i].ts > ts })
	if i == 0 {
		return timeEntry{}, false
	}
	return es[i-1], true
}
