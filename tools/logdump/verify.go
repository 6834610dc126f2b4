package logdump

import (
	"fmt"
	"sort"
)

// checkIndex holds offset index entries to what Kafka writes: each points
// at the start of a batch and names an offset in that batch (Kafka uses the
// batch's last offset), and both offsets and positions increase.
func checkIndex(batches []Batch, entries []IndexEntry) []string {
	byPos := make(map[int64]Batch, len(batches))
	var end int64
	for _, b := range batches {
		byPos[b.Position] = b
		end = b.Position + int64(b.Size)
	}
	var problems []string
	for i, e := range entries {
		if i > 0 && (e.Offset <= entries[i-1].Offset || e.Position <= entries[i-1].Position) {
			problems = append(problems, fmt.Sprintf("index entry %d (offset %d, position %d) does not come after the previous one (offset %d, position %d)",
				i, e.Offset, e.Position, entries[i-1].Offset, entries[i-1].Position))
		}
		b, ok := byPos[e.Position]
		switch {
		case !ok && e.Position >= end:
			problems = append(problems, fmt.Sprintf("index entry %d (offset %d) points at position %d, past the end of the log's batches (%d)", i, e.Offset, e.Position, end))
		case !ok:
			problems = append(problems, fmt.Sprintf("index entry %d (offset %d) points at position %d, which is not the start of a batch", i, e.Offset, e.Position))
		case e.Offset < b.BaseOffset || e.Offset > b.LastOffset:
			problems = append(problems, fmt.Sprintf("index entry %d says offset %d is at position %d, but the batch there holds offsets %d-%d", i, e.Offset, e.Position, b.BaseOffset, b.LastOffset))
		}
	}
	return problems
}

// checkTimeIndex holds time index entries to what Kafka writes: the largest
// timestamp seen so far and an offset in the batch that carried it, neither
// going backwards.
func checkTimeIndex(batches []Batch, entries []TimeIndexEntry) []string {
	maxSoFar := make([]int64, len(batches))
	for i, b := range batches {
		maxSoFar[i] = b.MaxTimestamp
		if i > 0 && maxSoFar[i-1] > maxSoFar[i] {
			maxSoFar[i] = maxSoFar[i-1]
		}
	}
	var problems []string
	for i, e := range entries {
		if i > 0 && (e.Timestamp < entries[i-1].Timestamp || e.Offset < entries[i-1].Offset) {
			problems = append(problems, fmt.Sprintf("time index entry %d (timestamp %d, offset %d) goes back from the previous one (timestamp %d, offset %d)",
				i, e.Timestamp, e.Offset, entries[i-1].Timestamp, entries[i-1].Offset))
		}
		j := sort.Search(len(batches), func(j int) bool { return batches[j].LastOffset >= e.Offset })
		if j == len(batches) || batches[j].BaseOffset > e.Offset {
			problems = append(problems, fmt.Sprintf("time index entry %d (timestamp %d) names offset %d, which is in no batch", i, e.Timestamp, e.Offset))
			continue
		}
		b := batches[j]
		switch {
		case e.Timestamp != b.MaxTimestamp:
			problems = append(problems, fmt.Sprintf("time index entry %d says timestamp %d for offset %d, but that batch's max timestamp is %d", i, e.Timestamp, e.Offset, b.MaxTimestamp))
		case e.Timestamp != maxSoFar[j]:
			problems = append(problems, fmt.Sprintf("time index entry %d has timestamp %d for offset %d, but the log's largest timestamp by then is %d", i, e.Timestamp, e.Offset, maxSoFar[j]))
		}
	}
	return problems
}
