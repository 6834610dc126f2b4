package log

import (
	"context"
	"errors"
	"os"

	"github.com/ktoolhq/ktool/internal/batch"
)

// OffsetForTimestamp answers ListOffsets for a timestamp as Kafka does: the
// first record at or after the log start whose timestamp is >= ts, with that
// record's timestamp. The segment comes from the segments' largest
// timestamps, the batch from the time index and batch headers, and the record
// from reading that one batch; epoch is that batch's partition leader epoch
// (Kafka answers with it). ok is false when no record is that recent.
func (l *Log) OffsetForTimestamp(ts int64) (offset int64, timestamp int64, epoch int32, ok bool) {
	l.mu.Lock()
	if l.closed {
		l.mu.Unlock()
		return -1, -1, -1, false
	}
	cur := l.logStart
	l.mu.Unlock()

	// Segments are looked up by offset on every step, never by position:
	// the cleaner may have swapped the list since the last look.
	for {
		l.mu.Lock()
		if l.closed {
			l.mu.Unlock()
			return -1, -1, -1, false
		}
		i := l.segmentFor(cur)
		s := l.segs[i]
		last := i+1 == len(l.segs)
		next := int64(0)
		if !last {
			next = l.segs[i+1].base
		}
		if s.maxTs < ts {
			l.mu.Unlock()
			if last {
				return -1, -1, -1, false
			}
			cur = next
			continue
		}
		from := int64(0)
		if e, found := lookupTime(s.tidx, ts); found {
			from = lookupPosition(s.idx, max(s.base+int64(e.rel), cur)-s.base)
		} else if cur > s.base {
			from = lookupPosition(s.idx, cur-s.base)
		}
		size, files := s.size, s.files
		f, err := files.acquire()
		l.mu.Unlock()
		if err != nil {
			l.logger.Warn("timestamp lookup", "dir", l.dir, "err", err)
			return -1, -1, -1, false
		}

		off, rts, epoch, found, err := l.searchTimestamp(f, from, size, ts, cur)
		files.release()
		if err != nil {
			l.logger.Warn("timestamp lookup", "dir", l.dir, "err", err)
			return -1, -1, -1, false
		}
		if found {
			return off, rts, epoch, true
		}
		if last {
			return -1, -1, -1, false
		}
		cur = next
	}
}

// searchTimestamp scans the headers of [from, size) for the first batch that
// holds a record at or after minOffset with timestamp >= ts, and returns
// that record's offset and timestamp and the batch's leader epoch.
func (l *Log) searchTimestamp(f *os.File, from, size, ts, minOffset int64) (int64, int64, int32, bool, error) {
	var hb [batch.HeaderSize]byte
	for pos := from; pos < size; {
		h, err := readHeaderAt(f, pos, &hb)
		if err != nil {
			return 0, 0, 0, false, err
		}
		if h.MaxTimestamp >= ts && h.LastOffset() >= minOffset {
			off, rts, found := l.recordAtOrAfter(f, pos, h, ts, minOffset)
			if found {
				return off, rts, h.PartitionLeaderEpoch, true, nil
			}
		}
		pos += h.Size()
	}
	return 0, 0, 0, false, nil
}

// recordAtOrAfter finds, inside the batch h at pos, the first record at or
// after minOffset with timestamp >= ts. When the records cannot be read it
// falls back to the batch: its first eligible offset and largest timestamp.
func (l *Log) recordAtOrAfter(f *os.File, pos int64, h batch.Header, ts, minOffset int64) (int64, int64, bool) {
	if h.LogAppendTime() {
		return max(h.BaseOffset, minOffset), h.MaxTimestamp, true
	}
	b, err := readBatch(f, pos, h)
	if err == nil {
		var off, rts int64
		var found bool
		err = eachRecord(context.Background(), l.config().Codecs, h, b, func(r batch.Record) error {
			recOff, recTs := h.BaseOffset+int64(r.OffsetDelta), h.FirstTimestamp+r.TimestampDelta
			if recTs >= ts && recOff >= minOffset {
				off, rts, found = recOff, recTs, true
				return errFound
			}
			return nil
		})
		if errors.Is(err, errFound) {
			err = nil
		}
		if err == nil && found {
			return off, rts, true
		}
	}
	l.logger.Warn("answering a timestamp lookup from the batch header", "dir", l.dir, "batch", h.BaseOffset, "err", err)
	return max(h.BaseOffset, minOffset), h.MaxTimestamp, true
}

// errFound stops a walk over a batch's records at the one sought.
var errFound = errors.New("found")

// readBatch reads the whole batch h at pos.
func readBatch(f *os.File, pos int64, h batch.Header) ([]byte, error) {
	b := make([]byte, h.Size())
	if _, err := f.ReadAt(b, pos); err != nil {
		return nil, err
	}
	return b, nil
}

// MaxTimestamp answers ListOffsets with timestamp -3 (KIP-734): the record
// with the largest timestamp and its offset; (-1, -1) for an empty log.
func (l *Log) MaxTimestamp() (offset int64, timestamp int64) {
	l.mu.Lock()
	var best *segment
	for _, s := range l.segs {
		if s.next > l.logStart && s.maxTs >= 0 && (best == nil || s.maxTs > best.maxTs) {
			best = s
		}
	}
	if l.closed || best == nil {
		l.mu.Unlock()
		return -1, -1
	}
	from := lookupPosition(best.idx, best.offMaxTs-best.base)
	size, files, maxTs, offMaxTs, logStart := best.size, best.files, best.maxTs, best.offMaxTs, l.logStart
	f, err := files.acquire()
	l.mu.Unlock()
	if err != nil {
		l.logger.Warn("max timestamp lookup", "dir", l.dir, "err", err)
		return offMaxTs, maxTs
	}
	defer files.release()

	var hb [batch.HeaderSize]byte
	for pos := from; pos < size; {
		h, err := readHeaderAt(f, pos, &hb)
		if err != nil {
			break
		}
		if h.LastOffset() >= offMaxTs {
			off, ts, _ := l.recordAtOrAfter(f, pos, h, maxTs, logStart)
			return off, ts
		}
		pos += h.Size()
	}
	l.logger.Warn("batch with the largest timestamp not found; answering from the segment", "dir", l.dir, "offset", offMaxTs)
	return offMaxTs, maxTs
}
