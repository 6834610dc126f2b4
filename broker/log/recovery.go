package log

import (
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/ktoolhq/ktool/internal/batch"
)

// Open opens the partition log in dir, creating it when missing. After an
// unclean shutdown it recovers: every segment from the one holding the
// recovery point is rescanned, cut at the first torn or corrupt batch (later
// segments are dropped), and its indexes are rebuilt; producer state comes
// from the newest snapshot plus a scan. Repairs are logged.
func Open(dir string, cfg Config, logger *slog.Logger) (*Log, error) {
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("open log %s: %w", dir, err)
	}
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("open log: %w", err)
	}
	l := &Log{
		dir:           dir,
		logger:        logger,
		cfg:           cfg,
		producers:     newProducerState(),
		txnFiles:      make(map[int64]int),
		txnDirty:      make(map[int64]bool),
		firstUnstable: -1,
		lastFlush:     cfg.now(),
		checkpointed:  make(map[string]int64),
		// The interval runs from the open, as for every later checkpoint:
		// a new topic's partitions would otherwise each rewrite their
		// high watermark checkpoint (two fsyncs) at the first periodic pass
		// after their first append, inside its producer's first second.
		checkpointAt: cfg.now(),
		fds:          cfg.FileCache,
		snapshotAt:   -1,
	}
	if l.fds == nil {
		l.fds = NewFileCache(privateFileCacheSize)
	}
	files, err := l.cleanDir()
	if err != nil {
		return nil, fmt.Errorf("open log %s: %w", dir, err)
	}
	marker := filepath.Join(dir, cleanShutdownFile)
	clean := files.has(cleanShutdownFile)
	if err := l.load(clean, files); err != nil {
		for _, s := range l.segs {
			s.files.drop()
		}
		return nil, fmt.Errorf("open log %s: %w", dir, err)
	}
	if clean {
		// The marker goes before anything is appended, so a crash from
		// now on is recovered rather than trusted.
		if err := errors.Join(os.Remove(marker), syncDir(dir)); err != nil {
			l.closeFiles()
			return nil, fmt.Errorf("open log %s: %w", dir, err)
		}
	}
	return l, nil
}

// segmentBase parses "<20 digits><ext>" file names.
func segmentBase(name, ext string) (int64, bool) {
	digits, ok := strings.CutSuffix(name, ext)
	if !ok || len(digits) != 20 {
		return 0, false
	}
	base, err := strconv.ParseInt(digits, 10, 64)
	return base, err == nil && base >= 0
}

func (l *Log) load(clean bool, files dirFiles) error {
	cfg := l.cfg
	now := cfg.now()
	bases := files.segmentBases()
	logStart, hasLogStart := l.readCheckpoint(files, logStartFile, true)
	recoveryPoint, _ := l.readCheckpoint(files, recoveryPointFile, true)
	hw, _ := l.readCheckpoint(files, highWatermarkFile, true)
	cleanerPoint, hasCleanerPoint := l.readCheckpoint(files, cleanerCheckpointFile, false)
	var epochs []epochEntry
	if files.has(leaderEpochFile) {
		var err error
		if epochs, err = readEpochCheckpoint(filepath.Join(l.dir, leaderEpochFile)); err != nil {
			l.logger.Warn("ignoring unreadable leader epoch checkpoint", "dir", l.dir, "err", err)
		}
	}
	l.epochs.entries = slices.Clone(epochs)

	recoverFrom := len(bases)
	// indexesRead: both index files were read whole, so a rescan that
	// rebuilds the same entries need not rewrite them, even when they
	// were not trusted without one.
	indexesRead := make([]bool, len(bases))
	for i, base := range bases {
		s, read, trusted, err := l.openSegment(files, base)
		if err != nil {
			return err
		}
		l.segs = append(l.segs, s)
		indexesRead[i] = read
		if !trusted {
			recoverFrom = min(recoverFrom, i)
		}
	}
	if len(l.segs) == 0 {
		s, err := createSegment(l.dir, logStart, now, l.fds, l.logger)
		if err != nil {
			return err
		}
		l.segs = append(l.segs, s)
		recoverFrom = len(l.segs)
	} else if !clean {
		recoverFrom = min(recoverFrom, l.segmentFor(recoveryPoint))
	}
	for i := 0; i < len(l.segs) && i < recoverFrom; i++ {
		if err := l.loadTrusted(l.segs[i]); err != nil {
			l.logger.Warn("segment needs recovery", "dir", l.dir, "base", l.segs[i].base, "err", err)
			recoverFrom = i
		}
	}
	recovered := recoverFrom < len(l.segs)
	// repaired: recovery changed a file (cut a segment, wrote an index,
	// dropped a segment), so a flush must make that durable.
	repaired := false
	for i := recoverFrom; i < len(l.segs); i++ {
		cut, wrote, err := l.recoverSegment(l.segs[i], int64(cfg.IndexIntervalBytes), i < len(indexesRead) && indexesRead[i], i == len(l.segs)-1)
		if err != nil {
			return err
		}
		repaired = repaired || cut || wrote
		if cut && i+1 < len(l.segs) {
			if err := l.dropSegmentsFrom(i+1, "they follow a damaged batch"); err != nil {
				return err
			}
		}
	}
	nsegs := len(l.segs)
	if err := l.checkContiguity(); err != nil {
		return err
	}
	repaired = repaired || len(l.segs) != nsegs
	if err := l.active().files.pin(); err != nil {
		return err
	}

	l.leo = l.active().next
	if hasLogStart {
		l.logStart = max(logStart, l.segs[0].base)
	} else {
		l.logStart = l.segs[0].base
	}
	if l.logStart > l.leo {
		l.logger.Warn("log start offset is past the recovered end; starting empty there", "dir", l.dir, "logStart", l.logStart, "leo", l.leo)
		if err := l.dropSegmentsFrom(0, "the log start offset is past them"); err != nil {
			return err
		}
		s, err := createSegment(l.dir, l.logStart, now, l.fds, l.logger)
		if err != nil {
			return err
		}
		l.segs = []*segment{s}
		l.leo = l.logStart
	}
	l.hw = min(max(hw, l.logStart), l.leo)
	l.cleanerPoint = -1
	if hasCleanerPoint {
		l.cleanerPoint = min(cleanerPoint, l.leo)
	}

	l.epochs.truncateFromEnd(l.leo)
	l.epochs.truncateFromStart(l.logStart)
	if !slices.Equal(l.epochs.entries, epochs) {
		// When only entries past the log's ends were dropped (always
		// without a rescan; after one, when the rescanned batches agreed
		// with the file), every load drops them again: the file is
		// rewritten by the next epoch change, flush or Close instead of by
		// every partition at start. An empty partition that crashed drops
		// its new leader's entry this way at every start.
		fromFile := epochCache{entries: slices.Clone(epochs)}
		fromFile.truncateFromEnd(l.leo)
		fromFile.truncateFromStart(l.logStart)
		if recovered && !slices.Equal(l.epochs.entries, fromFile.entries) {
			if err := l.writeEpochCheckpoint(); err != nil {
				return err
			}
		} else {
			l.epochsDirty = true
		}
	}
	damagedTxnIndex, err := l.loadTxnIndexes(files)
	if err != nil {
		return err
	}
	// After a crash the transaction indexes of the rescanned segments may
	// lack entries that never reached the disk: the replay rebuilds them,
	// and those of damaged index files.
	replayFrom := min(l.leo, damagedTxnIndex)
	if recovered {
		replayFrom = min(replayFrom, l.segs[min(recoverFrom, len(l.segs)-1)].base)
	}
	if err := l.rebuildProducerStateFrom(replayFrom, files.snapshots()); err != nil {
		return err
	}
	if err := l.syncTxnIndexFiles(); err != nil {
		return err
	}
	l.recoveryPoint = min(recoveryPoint, l.leo)
	if clean {
		l.recoveryPoint = l.leo
	}
	l.synced = l.recoveryPoint
	if !recovered {
		return nil
	}
	from := l.segs[min(recoverFrom, len(l.segs)-1)].base
	if !repaired && recoveryPoint == l.leo {
		// The rescan found the log as its last flush left it (an idle
		// partition after a SIGKILL): the recovery point already vouches
		// for every record, and a flush would only fsync unchanged files,
		// four fsyncs per partition at start.
		l.logger.Debug("recovered log unchanged", "dir", l.dir, "from", from, "logEndOffset", l.leo)
		return nil
	}
	l.logger.Info("recovered log", "dir", l.dir, "from", from, "logEndOffset", l.leo)
	return l.flushLocked()
}

// cleanDir removes leftovers of interrupted operations and index files
// without a log, and returns what the directory then holds. It lists the
// directory once (twice after finishing an interrupted swap): the load looks
// files up in that listing instead of opening or statting each one, which is
// most of a start-up's system calls with 10,000 partition directories.
func (l *Log) cleanDir() (dirFiles, error) {
	entries, err := os.ReadDir(l.dir)
	if err != nil {
		return nil, err
	}
	swapped, err := l.finishSwaps(entries)
	if err != nil {
		return nil, err
	}
	if swapped {
		if entries, err = os.ReadDir(l.dir); err != nil {
			return nil, err
		}
	}
	files := make(dirFiles, len(entries))
	for _, e := range entries {
		files[e.Name()] = struct{}{}
	}
	logs := make(map[int64]bool)
	for name := range files {
		if base, ok := segmentBase(name, logExt); ok {
			logs[base] = true
		}
	}
	for _, e := range entries {
		name := e.Name()
		path := filepath.Join(l.dir, name)
		if strings.HasSuffix(name, tmpSuffix) || strings.HasSuffix(name, truncSuffix) || strings.HasSuffix(name, cleanedSuffix) || strings.HasSuffix(name, swapSuffix) {
			l.logger.Warn("removing leftover file", "file", path)
			if err := os.Remove(path); err != nil {
				return nil, err
			}
			delete(files, name)
			continue
		}
		for _, ext := range []string{indexExt, timeIndexExt, txnIndexExt} {
			if base, ok := segmentBase(name, ext); ok && !logs[base] {
				l.logger.Warn("removing index without a log", "file", path)
				if err := os.Remove(path); err != nil {
					return nil, err
				}
				delete(files, name)
			}
		}
	}
	return files, nil
}

// dirFiles are the names in a partition directory, as listed once at load.
type dirFiles map[string]struct{}

func (d dirFiles) has(name string) bool {
	_, ok := d[name]
	return ok
}

// segmentBases returns the base offsets of the segment logs, ascending.
func (d dirFiles) segmentBases() []int64 {
	return d.offsets(func(name string) (int64, bool) { return segmentBase(name, logExt) })
}

// snapshots returns the offsets of the producer snapshots, ascending, as
// listSnapshots would.
func (d dirFiles) snapshots() []int64 { return d.offsets(snapshotOffset) }

func (d dirFiles) offsets(parse func(name string) (int64, bool)) []int64 {
	var offs []int64
	for name := range d {
		if off, ok := parse(name); ok {
			offs = append(offs, off)
		}
	}
	slices.Sort(offs)
	return offs
}

// readCheckpoint reads one offset checkpoint. With zeroWhenMissing a
// missing file counts as holding 0, which is what the load makes of it
// (recovery point and high watermark 0, log start the first segment's base,
// as max(0, base)): a new partition writes none of these files until its
// value moves, instead of three atomic writes (six fsyncs) per partition
// in the second after 10,000 of them were created.
func (l *Log) readCheckpoint(files dirFiles, name string, zeroWhenMissing bool) (int64, bool) {
	var off int64
	var ok bool
	var err error
	if files.has(name) {
		off, ok, err = readOffsetCheckpoint(filepath.Join(l.dir, name))
	}
	if err != nil {
		l.logger.Warn("ignoring unreadable checkpoint", "dir", l.dir, "file", name, "err", err)
		return 0, false
	}
	if ok || zeroWhenMissing {
		l.checkpointed[name] = off
	}
	return off, ok
}

// openSegment opens an existing segment and loads its indexes. read is
// false when an index file is missing or unreadable, trusted also when the
// indexes look inconsistent with the log: then a rescan must rebuild them.
func (l *Log) openSegment(dirFiles dirFiles, base int64) (s *segment, read, trusted bool, err error) {
	ok := true
	for _, ext := range []string{indexExt, timeIndexExt} {
		if p := segmentPath(l.dir, base, ext); !dirFiles.has(filepath.Base(p)) {
			l.logger.Warn("index will be rebuilt", "err", &fs.PathError{Op: "stat", Path: p, Err: fs.ErrNotExist})
			ok = false
		}
	}
	files := l.inactiveFiles(base)
	st, err := os.Stat(files.path)
	if err != nil {
		return nil, false, false, err
	}
	s = &segment{base: base, files: files, size: st.Size(), next: base, maxTs: -1, offMaxTs: -1, rollTs: -1, created: l.cfg.now()}
	if s.size > math.MaxInt32 {
		return nil, false, false, fmt.Errorf("segment %s is %d bytes, more than an index can address", files.path, s.size)
	}
	if s.idx, err = readOffsetIndex(segmentPath(l.dir, base, indexExt), s.size); err != nil {
		l.logger.Warn("offset index will be rebuilt", "err", err)
		ok = false
	}
	if s.tidx, err = readTimeIndex(segmentPath(l.dir, base, timeIndexExt)); err != nil {
		l.logger.Warn("time index will be rebuilt", "err", err)
		ok = false
	}
	// An index emptied by damage still parses; a segment too large to have
	// no entry, or without the time entry written when it was sealed, is
	// rescanned rather than trusted. The active segment of a crashed broker
	// holds no sealed entry, so one with less than an index interval of
	// data lands here at every start after a crash: its rescan finds the
	// entries read, and the files are not rewritten.
	read = ok
	if ok && len(s.idx) == 0 && s.size > 2*(int64(l.cfg.IndexIntervalBytes)+int64(l.cfg.MaxMessageBytes)) {
		l.logger.Warn("offset index is empty for a large segment and will be rebuilt", "file", segmentPath(l.dir, base, indexExt))
		ok = false
	}
	if ok && len(s.tidx) == 0 && s.size > 0 {
		l.logger.Warn("time index is empty for a non-empty segment and will be rebuilt", "file", segmentPath(l.dir, base, timeIndexExt))
		ok = false
	}
	if ok {
		s.setIndexesOnDisk()
	}
	return s, read, ok, nil
}

// loadTrusted fills in what a flushed segment does not store: its end offset,
// largest timestamp and first batch timestamp. It reads only the first batch
// header and the headers after the last index entry.
func (l *Log) loadTrusted(s *segment) error {
	if s.size == 0 {
		return nil
	}
	f, err := s.files.acquire()
	if err != nil {
		return err
	}
	defer s.files.release()
	var hb [batch.HeaderSize]byte
	first, err := readHeaderAt(f, 0, &hb)
	if err != nil {
		return err
	}
	if first.BaseOffset < s.base {
		return fmt.Errorf("first batch has offset %d, below the segment base %d", first.BaseOffset, s.base)
	}
	s.rollTs = first.MaxTimestamp
	if n := len(s.tidx); n > 0 {
		s.maxTs, s.offMaxTs = s.tidx[n-1].ts, s.base+int64(s.tidx[n-1].rel)
	}
	pos := int64(0)
	if n := len(s.idx); n > 0 {
		pos = int64(s.idx[n-1].pos)
	}
	s.bytesSinceIdx = s.size - pos
	for pos < s.size {
		h, err := readHeaderAt(f, pos, &hb)
		if err != nil {
			return err
		}
		if h.MaxTimestamp > s.maxTs {
			s.maxTs, s.offMaxTs = h.MaxTimestamp, h.LastOffset()
		}
		s.next = h.LastOffset() + 1
		pos += h.Size()
	}
	if pos != s.size {
		return fmt.Errorf("last batch runs past the end of %s", s.files.path)
	}
	return nil
}

// recoverSegment checks every batch of a segment and rebuilds its indexes.
// At the first torn, corrupt or out-of-order batch the segment is cut; cut
// reports that. Gaps between batches are left by the cleaner and allowed.
// The index files are rewritten (wrote) unless indexesOK says they were
// read whole and they hold the rebuilt entries. The time index of the
// active segment is not sealed: it stays as appends and flushes keep it,
// and Close or a roll seals it.
func (l *Log) recoverSegment(s *segment, interval int64, indexesOK, active bool) (cut, wrote bool, err error) {
	f, err := s.files.acquire()
	if err != nil {
		return false, false, err
	}
	defer s.files.release()
	sc := newBatchScanner(f, 0, s.size)
	ib := newIndexBuilder(s.base, interval)
	for {
		h, _, pos, ok := sc.next()
		if !ok {
			break
		}
		if h.BaseOffset < ib.next || h.LastOffset()-s.base > math.MaxInt32 {
			sc.err = fmt.Errorf("batch at %d has offset %d, expected at least %d", pos, h.BaseOffset, ib.next)
			break
		}
		ib.add(h)
		l.epochs.assign(h.PartitionLeaderEpoch, h.BaseOffset)
	}
	if ib.size < s.size {
		l.logger.Warn("truncating damaged segment", "file", s.files.path, "validBytes", ib.size, "droppedBytes", s.size-ib.size, "reason", sc.err)
		if err := f.Truncate(ib.size); err != nil {
			return false, false, err
		}
		cut = true
	}
	if !active {
		ib.seal()
	}
	if !cut && indexesOK && slices.Equal(ib.idx, s.idx) && slices.Equal(ib.tidx, s.tidx) {
		// The index files, as read, hold what the rescan rebuilt. They
		// may still sit only in the page cache: unless they are empty
		// (nothing to lose) the next flush or Close fsyncs them, before
		// any recovery point past this segment is written.
		ib.apply(s)
		s.setIndexesOnDisk()
		if ib.size > 0 {
			s.markIndexesUnsynced()
		}
		return false, false, nil
	}
	if err := rewriteIndexes(l.dir, s.base, ib.idx, ib.tidx); err != nil {
		return false, false, err
	}
	ib.apply(s)
	s.setIndexesOnDisk()
	return cut, true, nil
}

// indexBuilder computes a segment's sparse indexes and summary from its
// batches in order, with the entries appends would have written.
type indexBuilder struct {
	base, interval int64
	idx            []offsetEntry
	tidx           []timeEntry
	maxTs          int64
	offMaxTs       int64
	rollTs         int64
	next           int64 // offset after the last batch; base when none
	size           int64
	sinceIdx       int64
}

func newIndexBuilder(base, interval int64) *indexBuilder {
	return &indexBuilder{base: base, interval: interval, maxTs: -1, offMaxTs: -1, rollTs: -1, next: base}
}

func (b *indexBuilder) add(h batch.Header) {
	if b.size == 0 {
		b.rollTs = h.MaxTimestamp
	}
	if h.MaxTimestamp > b.maxTs {
		b.maxTs, b.offMaxTs = h.MaxTimestamp, h.LastOffset()
	}
	if b.sinceIdx > b.interval {
		b.idx = append(b.idx, offsetEntry{rel: int32(h.LastOffset() - b.base), pos: int32(b.size)})
		if n := len(b.tidx); n == 0 || b.maxTs > b.tidx[n-1].ts {
			b.tidx = append(b.tidx, timeEntry{ts: b.maxTs, rel: int32(b.offMaxTs - b.base)})
		}
		b.sinceIdx = 0
	}
	b.sinceIdx += h.Size()
	b.size += h.Size()
	b.next = h.LastOffset() + 1
}

// seal adds the final largest timestamp as when a segment stops being
// active, so that the time index is trusted on the next clean start.
func (b *indexBuilder) seal() {
	if n := len(b.tidx); b.maxTs >= 0 && (n == 0 || b.maxTs > b.tidx[n-1].ts) {
		b.tidx = append(b.tidx, timeEntry{ts: b.maxTs, rel: int32(b.offMaxTs - b.base)})
	}
}

// apply gives s what the builder computed.
func (b *indexBuilder) apply(s *segment) {
	s.idx, s.tidx = b.idx, b.tidx
	s.size, s.next = b.size, b.next
	s.maxTs, s.offMaxTs, s.rollTs = b.maxTs, b.offMaxTs, b.rollTs
	s.bytesSinceIdx = b.sinceIdx
}

// rewriteIndexes replaces a segment's index files with the entries given,
// fsynced.
func rewriteIndexes(dir string, base int64, idx []offsetEntry, tidx []timeEntry) error {
	return errors.Join(
		writeSynced(segmentPath(dir, base, indexExt), encodeOffsetEntries(nil, idx)),
		writeSynced(segmentPath(dir, base, timeIndexExt), encodeTimeEntries(nil, tidx)),
	)
}

// dropSegmentsFrom unlinks segments i and later.
func (l *Log) dropSegmentsFrom(i int, why string) error {
	var errs []error
	for _, s := range l.segs[i:] {
		l.logger.Warn("deleting segment", "file", s.files.path, "why", why)
		errs = append(errs, s.unlink(l.dir))
	}
	l.segs = l.segs[:i]
	return errors.Join(errs...)
}

// checkContiguity drops empty segments that are neither the first (which the
// cleaner may leave empty, keeping the log start) nor the last, and cuts the
// log where a segment starts before the previous one's end. A segment may
// start after it: the cleaner removed the batches between.
func (l *Log) checkContiguity() error {
	for i := 0; i+1 < len(l.segs); {
		s := l.segs[i]
		if s.empty() && i > 0 {
			l.logger.Warn("deleting empty inner segment", "file", s.files.path)
			if err := s.unlink(l.dir); err != nil {
				return err
			}
			l.segs = append(l.segs[:i], l.segs[i+1:]...)
			continue
		}
		if next := l.segs[i+1]; next.base < s.next {
			return l.dropSegmentsFrom(i+1, fmt.Sprintf("segment %d overlaps the previous one ending at %d", next.base, s.next))
		}
		i++
	}
	return nil
}

// rebuildProducerState loads the newest snapshot at or below limit (and the
// LEO) and replays the batches after it, rebuilding the aborted transaction
// index from there; appendMu is held or the log is not shared yet. The
// caller writes the index files.
func (l *Log) rebuildProducerState(limit int64) error {
	snaps, err := listSnapshots(l.dir)
	if err != nil {
		return err
	}
	return l.rebuildProducerStateFrom(limit, snaps)
}

// rebuildProducerStateFrom is rebuildProducerState with the snapshot
// offsets the directory holds, ascending, already listed.
func (l *Log) rebuildProducerStateFrom(limit int64, snaps []int64) error {
	snaps, err := deleteSnapshotsAbove(l.dir, snaps, l.leo)
	if err != nil {
		return err
	}
	ps, from, err := loadLatestSnapshot(l.dir, snaps, min(limit, l.leo), func(path string, err error) {
		l.logger.Warn("removing unreadable producer snapshot", "file", path, "err", err)
		if rerr := removeIfExists(path); rerr != nil {
			l.logger.Warn("removing producer snapshot", "file", path, "err", rerr)
		}
	})
	if err != nil {
		return err
	}
	l.snapshotAt = from
	from = max(from, l.segs[0].base)
	l.dropAborted(-1, from)
	var rebuilt []AbortedTxn
	for _, s := range l.segs[l.segmentFor(from):] {
		if s.next <= from {
			continue
		}
		f, err := s.files.acquire()
		if err != nil {
			return err
		}
		sc := newBatchScanner(f, lookupPosition(s.idx, from-s.base), s.size)
		sc.headersOnly = true
		for sc.pos < s.size {
			h, _, pos, ok := sc.next()
			if !ok {
				// Only a segment trusted without a rescan can get here;
				// its readers will meet the damage too.
				l.logger.Error("producer state replay stopped at a damaged batch", "file", s.files.path, "err", sc.err)
				break
			}
			if h.BaseOffset < from {
				continue
			}
			var m *batch.Marker
			if h.Control() && h.ProducerID >= 0 {
				mk, err := readMarker(f, pos, h.Size())
				if err != nil {
					l.logger.Warn("control batch without a readable marker", "file", s.files.path, "offset", h.BaseOffset, "err", err)
				} else {
					m = &mk
				}
			}
			if done, closed := ps.apply(h, m); closed && done.aborted {
				rebuilt = append(rebuilt, AbortedTxn{ProducerID: done.producerID, FirstOffset: done.first, LastOffset: done.last, LastStableOffset: ps.stableAfter(done)})
			}
		}
		s.files.release()
	}
	ps.evictBefore(l.logStart)
	l.producers = ps
	l.mu.Lock()
	l.aborted = append(l.aborted, rebuilt...)
	l.mu.Unlock()
	l.publishTxnState()
	return nil
}

// readMarker reads the control batch of size bytes at pos and decodes its marker.
func readMarker(f *os.File, pos, size int64) (batch.Marker, error) {
	if size > 1<<16 {
		return batch.Marker{}, fmt.Errorf("control batch of %d bytes", size)
	}
	b := make([]byte, size)
	if _, err := f.ReadAt(b, pos); err != nil {
		return batch.Marker{}, err
	}
	return batch.MarkerOf(b)
}
