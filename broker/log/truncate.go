package log

import (
	"errors"
	"fmt"
	"io"
	"os"
	"slices"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/ktoolhq/ktool/internal/batch"
)

// truncSuffix marks the copy of a segment being cut while regions of it are
// still held; a leftover one is removed on Open.
const truncSuffix = ".trunc"

// TruncateTo removes every record at or after offset: whole segments, the
// tail of the segment holding offset (from the batch that contains it), the
// index entries, producer state and leader epochs of the removed records.
// The new LEO is the base offset of the first removed batch.
func (l *Log) TruncateTo(offset int64) error {
	l.appendMu.Lock()
	defer l.appendMu.Unlock()
	l.flushMu.Lock()
	defer l.flushMu.Unlock()
	if l.isClosed() {
		return ErrClosed
	}
	if offset >= l.leo {
		return nil
	}
	if offset <= l.logStart {
		return l.truncateFullyLocked(offset)
	}
	i := l.segmentFor(offset)
	if err := l.dropSegmentsLocked(i+1, "truncated"); err != nil {
		return err
	}
	s := l.segs[i]
	if err := s.files.pin(); err != nil {
		return storageError("truncate", err)
	}
	cut, newNext, err := findBatch(s, offset)
	if err != nil {
		return err
	}
	if err := l.cutSegment(s, cut, newNext); err != nil {
		return err
	}
	l.logger.Info("truncated log", "dir", l.dir, "to", newNext)

	l.mu.Lock()
	l.leo = newNext
	l.hw = min(l.hw, l.leo)
	l.recoveryPoint = min(l.recoveryPoint, l.leo)
	l.synced = min(l.synced, l.leo)
	l.rewrites++
	l.cleanerPoint = min(l.cleanerPoint, l.leo)
	l.epochs.truncateFromEnd(l.leo)
	l.mu.Unlock()
	if err := l.writeEpochCheckpoint(); err != nil {
		return storageError("truncate", err)
	}
	l.dropAborted(-1, newNext)
	if err := l.rebuildProducerState(newNext); err != nil {
		return storageError("truncate", err)
	}
	if err := l.syncTxnIndexFiles(); err != nil {
		return err
	}
	return l.writeCheckpointsLocked()
}

// findBatch returns the position and base offset of the batch holding offset
// in s, which must hold it.
func findBatch(s *segment, offset int64) (int64, int64, error) {
	f, err := s.files.acquire()
	if err != nil {
		return 0, 0, storageError("truncate", err)
	}
	defer s.files.release()
	var hb [batch.HeaderSize]byte
	for pos := lookupPosition(s.idx, offset-s.base); pos < s.size; {
		h, err := readHeaderAt(f, pos, &hb)
		if err != nil {
			return 0, 0, storageError("truncate", err)
		}
		if h.LastOffset() >= offset {
			return pos, h.BaseOffset, nil
		}
		pos += h.Size()
	}
	return s.size, s.next, nil
}

// dropSegmentsLocked unlinks segments i and later; appendMu is held.
func (l *Log) dropSegmentsLocked(i int, why string) error {
	l.mu.Lock()
	drop := append([]*segment(nil), l.segs[i:]...)
	l.segs = l.segs[:i]
	l.mu.Unlock()
	var errs []error
	for _, s := range drop {
		l.logger.Debug("deleting segment", "file", s.files.path, "why", why)
		errs = append(errs, s.unlink(l.dir))
	}
	if err := errors.Join(errs...); err != nil {
		return storageError("delete segments", err)
	}
	return nil
}

// cutSegment shortens s to pos bytes ending at offset next. A segment with
// regions outstanding is copied first, so the readers keep the old file.
func (l *Log) cutSegment(s *segment, pos, next int64) error {
	idx := s.idx
	for len(idx) > 0 && int64(idx[len(idx)-1].pos) >= pos {
		idx = idx[:len(idx)-1]
	}
	tidx := s.tidx
	for len(tidx) > 0 && s.base+int64(tidx[len(tidx)-1].rel) >= next {
		tidx = tidx[:len(tidx)-1]
	}
	f, err := s.files.acquire()
	if err != nil {
		return storageError("truncate segment", err)
	}
	// The reference is held until the segment has its new file: the old
	// one must stay open for readers that find the segment meanwhile.
	defer s.files.release()
	maxTs, offMaxTs, err := tailMaxTimestamp(s, f, idx, tidx, pos)
	if err != nil {
		return err
	}
	// Clipped, so later appends get a new array and readers holding the
	// old slices keep seeing what they saw.
	idx, tidx = slices.Clip(idx), slices.Clip(tidx)
	update := func() {
		s.idx, s.tidx = idx, tidx
		s.size, s.next = pos, next
		s.maxTs, s.offMaxTs = maxTs, offMaxTs
		if pos == 0 {
			s.rollTs = -1
		}
		s.bytesSinceIdx = 0
	}

	l.mu.Lock()
	// Ours is the one reference besides the segment's when no region holds it.
	shared := s.files.users() > 1
	if !shared {
		update()
	}
	l.mu.Unlock()
	if !shared {
		err := errors.Join(f.Truncate(pos), s.cutIndexFiles(l.dir))
		if err != nil {
			return storageError("truncate segment", err)
		}
		return nil
	}

	files, err := copySegmentPrefix(l, s, f, pos)
	if err != nil {
		return storageError("truncate segment", err)
	}
	l.mu.Lock()
	old := s.files
	s.files = files
	update()
	l.mu.Unlock()
	old.drop()
	if err := s.cutIndexFiles(l.dir); err != nil {
		return storageError("truncate segment", err)
	}
	return nil
}

// copySegmentPrefix writes the first pos bytes of s (its file f) to a new
// file that replaces the segment's log, and returns it as the files of the
// active segment.
func copySegmentPrefix(l *Log, s *segment, f *os.File, pos int64) (*segFiles, error) {
	path := segmentPath(l.dir, s.base, logExt)
	tmp := path + truncSuffix
	nf, err := openFile(tmp, os.O_RDWR|os.O_CREATE|os.O_TRUNC)
	if err != nil {
		return nil, err
	}
	_, err = io.Copy(nf, io.NewSectionReader(f, 0, pos))
	if err == nil {
		err = nf.Sync()
	}
	if err == nil {
		err = os.Rename(tmp, path)
	}
	if err != nil {
		return nil, errors.Join(err, nf.Close(), removeIfExists(tmp))
	}
	return newSegFiles(path, nf, l.fds, l.logger), nil
}

// tailMaxTimestamp is the largest timestamp of the first pos bytes of s: the
// kept time index covers the batches up to the last kept offset index entry,
// and the headers after that entry are read.
func tailMaxTimestamp(s *segment, f *os.File, idx []offsetEntry, tidx []timeEntry, pos int64) (int64, int64, error) {
	maxTs, offMaxTs := int64(-1), int64(-1)
	if n := len(tidx); n > 0 {
		maxTs, offMaxTs = tidx[n-1].ts, s.base+int64(tidx[n-1].rel)
	}
	p := int64(0)
	if n := len(idx); n > 0 {
		p = int64(idx[n-1].pos)
	}
	var hb [batch.HeaderSize]byte
	for p < pos {
		h, err := readHeaderAt(f, p, &hb)
		if err != nil {
			return 0, 0, storageError("truncate", err)
		}
		if h.MaxTimestamp > maxTs {
			maxTs, offMaxTs = h.MaxTimestamp, h.LastOffset()
		}
		p += h.Size()
	}
	return maxTs, offMaxTs, nil
}

// TruncateFullyAndStartAt empties the log and restarts it at offset, as a
// follower does when the leader's log no longer holds its position.
func (l *Log) TruncateFullyAndStartAt(offset int64) error {
	if offset < 0 {
		return fmt.Errorf("restart log at offset %d: %w", offset, kerr.OffsetOutOfRange)
	}
	l.appendMu.Lock()
	defer l.appendMu.Unlock()
	l.flushMu.Lock()
	defer l.flushMu.Unlock()
	if l.isClosed() {
		return ErrClosed
	}
	return l.truncateFullyLocked(offset)
}

func (l *Log) truncateFullyLocked(offset int64) error {
	if err := l.dropSegmentsLocked(0, "log restarted"); err != nil {
		return err
	}
	s, err := createSegment(l.dir, offset, l.config().now(), l.fds, l.logger)
	if err != nil {
		return storageError("restart log", err)
	}
	l.mu.Lock()
	l.segs = []*segment{s}
	l.leo, l.logStart, l.hw, l.recoveryPoint = offset, offset, offset, offset
	l.synced = offset
	l.rewrites++
	l.dirDirty = true
	if l.cleanerPoint >= 0 {
		l.cleanerPoint = offset
	}
	l.epochs.entries = nil
	l.mu.Unlock()
	l.producers = newProducerState()
	l.snapshotAt = -1
	l.dropAborted(0, 0)
	l.publishTxnState()
	if err := l.syncTxnIndexFiles(); err != nil {
		return err
	}
	l.logger.Info("restarted log", "dir", l.dir, "at", offset)
	if err := errors.Join(removeSnapshotsAbove(l.dir, -1), l.writeEpochCheckpoint()); err != nil {
		return storageError("restart log", err)
	}
	return l.writeCheckpointsLocked()
}

// DeleteRecordsBefore moves the log start offset up to offset (DeleteRecords;
// the broker turns -1 into the high watermark first). Offsets above the high
// watermark, or above the first offset of an open transaction (which would
// leave its last stable offset below the log start), are kerr.OffsetOutOfRange. Segments wholly below the new start
// are deleted. It returns the log start offset. As in Kafka, a topic whose
// cleanup.policy lacks delete refuses with kerr.PolicyViolation.
func (l *Log) DeleteRecordsBefore(offset int64) (int64, error) {
	return l.moveLogStart(offset, true)
}

// FollowLogStartOffset is DeleteRecordsBefore for a follower following its
// leader's log start offset: the leader already applied the policy, so a
// topic without delete in its cleanup.policy does not refuse it.
func (l *Log) FollowLogStartOffset(offset int64) (int64, error) {
	return l.moveLogStart(offset, false)
}

func (l *Log) moveLogStart(offset int64, checkPolicy bool) (int64, error) {
	l.appendMu.Lock()
	defer l.appendMu.Unlock()
	l.flushMu.Lock()
	defer l.flushMu.Unlock()
	l.mu.Lock()
	closed, logStart, hw, cfg, unstable := l.closed, l.logStart, l.hw, l.cfg, l.firstUnstable
	l.mu.Unlock()
	if closed {
		return 0, ErrClosed
	}
	if checkPolicy && !cfg.Delete() {
		return logStart, fmt.Errorf("delete records: cleanup.policy %q does not include delete: %w", cfg.CleanupPolicy, kerr.PolicyViolation)
	}
	if offset > hw || offset < 0 {
		return logStart, fmt.Errorf("delete records before %d: high watermark is %d: %w", offset, hw, kerr.OffsetOutOfRange)
	}
	if checkPolicy && unstable >= 0 && offset > unstable {
		return logStart, fmt.Errorf("delete records before %d: a transaction is open from offset %d: %w", offset, unstable, kerr.OffsetOutOfRange)
	}
	if offset <= logStart {
		return logStart, nil
	}
	l.mu.Lock()
	l.logStart = offset
	l.mu.Unlock()
	if _, err := l.deleteSegmentsLocked(func(*segment, *segment, int64) bool { return false }); err != nil {
		return offset, err
	}
	return offset, nil
}
