package log

import (
	"errors"
	"os"
	"time"
)

// EnforceRetention deletes the oldest segments that are past retention.ms
// (their largest timestamp), beyond retention.bytes, or wholly below the log
// start offset; the first two only when cleanup.policy includes delete. The
// active segment is never deleted. It returns how many segments were deleted.
func (l *Log) EnforceRetention() (int, error) {
	l.appendMu.Lock()
	defer l.appendMu.Unlock()
	l.flushMu.Lock()
	defer l.flushMu.Unlock()
	if l.isClosed() {
		return 0, ErrClosed
	}
	cfg := l.config()
	if !cfg.Delete() {
		return l.deleteSegmentsLocked(func(*segment, *segment, int64) bool { return false })
	}
	now := cfg.now()
	excess := int64(-1)
	if cfg.RetentionBytes >= 0 {
		excess = l.Size() - cfg.RetentionBytes
	}
	return l.deleteSegmentsLocked(func(s, _ *segment, _ int64) bool {
		if cfg.RetentionMs >= 0 && segmentTimestamp(s) < now.UnixMilli()-cfg.RetentionMs {
			excess -= s.size
			return true
		}
		if excess >= s.size {
			excess -= s.size
			return true
		}
		return false
	})
}

// segmentTimestamp is the age reference of a segment: its largest timestamp,
// or its file's modification time when no batch carried one.
func segmentTimestamp(s *segment) int64 {
	if s.maxTs >= 0 {
		return s.maxTs
	}
	st, err := os.Stat(s.files.path)
	if err != nil {
		return time.Now().UnixMilli()
	}
	return st.ModTime().UnixMilli()
}

// deleteSegmentsLocked deletes the longest prefix of non-active segments for
// which each is wholly below the log start offset or del says so, then moves
// the log start offset and what depends on it. A segment holding the first
// offset of an open transaction, or later ones, is kept, so the last stable
// offset never falls below the log start: the transaction's coordinator
// closes it within its timeout. appendMu and flushMu are held.
func (l *Log) deleteSegmentsLocked(del func(s, next *segment, logStart int64) bool) (int, error) {
	l.mu.Lock()
	n := 0
	for n+1 < len(l.segs) {
		s, next := l.segs[n], l.segs[n+1]
		if l.firstUnstable >= 0 && next.base > l.firstUnstable {
			break
		}
		if next.base > l.logStart && !del(s, next, l.logStart) {
			break
		}
		n++
	}
	drop := append([]*segment(nil), l.segs[:n]...)
	l.segs = append([]*segment(nil), l.segs[n:]...)
	l.logStart = max(l.logStart, l.segs[0].base)
	l.hw = max(l.hw, l.logStart)
	l.recoveryPoint = max(l.recoveryPoint, l.logStart)
	changed := l.epochs.truncateFromStart(l.logStart)
	logStart := l.logStart
	l.mu.Unlock()

	var errs []error
	for _, s := range drop {
		l.logger.Debug("deleting segment", "file", s.files.path, "logStart", logStart)
		errs = append(errs, s.unlink(l.dir))
	}
	l.producers.evictBefore(logStart)
	l.dropAborted(l.segs[0].base, 1<<63-1)
	errs = append(errs, l.syncTxnIndexFiles())
	if changed {
		errs = append(errs, l.writeEpochCheckpoint())
	}
	if err := errors.Join(errs...); err != nil {
		return n, storageError("delete segments", err)
	}
	return n, l.writeCheckpointsLocked()
}
