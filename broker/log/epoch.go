package log

import "sort"

// epochEntry says that leader epoch `epoch` wrote its first record at `start`.
type epochEntry struct {
	epoch int32
	start int64
}

// epochCache is the leader epoch history of a partition (KIP-101, KIP-279),
// ordered by epoch and by start offset alike.
type epochCache struct {
	entries []epochEntry
}

func (c *epochCache) clone() []epochEntry { return append([]epochEntry(nil), c.entries...) }

func (c *epochCache) latest() int32 {
	if n := len(c.entries); n > 0 {
		return c.entries[n-1].epoch
	}
	return -1
}

// assign records that epoch starts at start, for a batch of that epoch
// appended at start (or a new leader's first offset). Entries that would break
// the ordering (a larger epoch, or a start offset not below the new one) are
// dropped, as Kafka does: they describe no record below start. An entry of
// the same epoch that starts before start is kept as it is: the epoch began
// there, and what followed it had no records (a leader's epoch that wrote
// nothing before this broker followed again), so the epoch must not move.
// It reports whether the cache changed.
func (c *epochCache) assign(epoch int32, start int64) bool {
	if epoch < 0 {
		return false
	}
	n := len(c.entries)
	if n > 0 {
		last := c.entries[n-1]
		if epoch == last.epoch && start >= last.start {
			return false
		}
	}
	keep := n
	for keep > 0 && (c.entries[keep-1].epoch > epoch || c.entries[keep-1].start >= start) {
		keep--
	}
	if keep > 0 && c.entries[keep-1].epoch == epoch {
		c.entries = c.entries[:keep]
		return keep != n
	}
	c.entries = append(c.entries[:keep], epochEntry{epoch: epoch, start: start})
	return true
}

// endOffsetFor answers OffsetForLeaderEpoch: the largest epoch <= epoch and
// the offset where the epoch after it starts (the LEO for the latest epoch).
func (c *epochCache) endOffsetFor(epoch int32, leo int64) (int32, int64) {
	n := len(c.entries)
	if epoch < 0 || n == 0 {
		return -1, -1
	}
	if c.entries[n-1].epoch == epoch {
		return epoch, leo
	}
	higher := sort.Search(n, func(i int) bool { return c.entries[i].epoch > epoch })
	if higher == n {
		return -1, -1
	}
	if higher == 0 {
		// Older than anything known: the data is gone, so the follower
		// should start where the first known epoch starts.
		return epoch, c.entries[0].start
	}
	return c.entries[higher-1].epoch, c.entries[higher].start
}

// truncateFromEnd drops epochs that start at or after end.
func (c *epochCache) truncateFromEnd(end int64) bool {
	keep := len(c.entries)
	for keep > 0 && c.entries[keep-1].start >= end {
		keep--
	}
	changed := keep != len(c.entries)
	c.entries = c.entries[:keep]
	return changed
}

// truncateFromStart drops epochs that end before start; the epoch in force
// at start keeps its number but now starts at start.
func (c *epochCache) truncateFromStart(start int64) bool {
	drop := 0
	for drop < len(c.entries) && c.entries[drop].start <= start {
		drop++
	}
	if drop == 0 {
		return false
	}
	last := c.entries[drop-1]
	if drop == 1 && last.start == start {
		return false
	}
	c.entries = append([]epochEntry{{epoch: last.epoch, start: start}}, c.entries[drop:]...)
	return true
}
