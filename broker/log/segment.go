package log

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/ktoolhq/ktool/internal/batch"
)

const (
	logExt       = ".log"
	indexExt     = ".index"
	timeIndexExt = ".timeindex"
	snapshotExt  = ".snapshot"
)

func segmentPath(dir string, base int64, ext string) string {
	return filepath.Join(dir, fmt.Sprintf("%020d%s", base, ext))
}

// segment is one log file with its indexes. Fields are written only with the
// Log's appendMu and mu both held; readers hold one of them.
//
// The indexes live in memory (idx, tidx) and their files hold no
// descriptor: entries reach the files when the segment is flushed, rolled or
// cut (writeIndexes), each time by opening the file, writing what it lacks
// and closing it. After a crash a file may lack entries that were not
// flushed; recovery rebuilds the indexes of every segment from the recovery
// point, and entries below it were written and fsynced by the flush that
// moved it.
type segment struct {
	base  int64
	files *segFiles
	size  int64 // bytes of complete batches: what readers may see
	next  int64 // offset after the last batch; base when empty

	idx  []offsetEntry
	tidx []timeEntry

	maxTs    int64 // largest batch maxTimestamp, -1 when none
	offMaxTs int64 // last offset of the first batch carrying maxTs
	rollTs   int64 // maxTimestamp of the first batch: segment.ms counts from it
	created  time.Time

	bytesSinceIdx int64

	ixMu       sync.Mutex // the index files and the counts below
	idxOnDisk  int        // entries of idx in the offset index file
	tidxOnDisk int        // entries of tidx in the time index file
	ixUnsynced bool       // index bytes written since the last fsync
}

func openFile(path string, flag int) (*os.File, error) {
	return os.OpenFile(path, flag, 0o644)
}

// createSegment starts an empty active segment at base, replacing stale
// files of the same name.
func createSegment(dir string, base int64, now time.Time, cache *FileCache, logger *slog.Logger) (*segment, error) {
	path := segmentPath(dir, base, logExt)
	lf, err := openFile(path, os.O_RDWR|os.O_CREATE|os.O_TRUNC)
	if err != nil {
		return nil, err
	}
	for _, ext := range []string{indexExt, timeIndexExt} {
		f, err := openFile(segmentPath(dir, base, ext), os.O_WRONLY|os.O_CREATE|os.O_TRUNC)
		if err == nil {
			err = f.Close()
		}
		if err != nil {
			return nil, errors.Join(err, lf.Close())
		}
	}
	return &segment{base: base, files: newSegFiles(path, lf, cache, logger), next: base, maxTs: -1, offMaxTs: -1, rollTs: -1, created: now}, nil
}

// writeIndexes appends the index entries the files lack, without fsync.
// idx and tidx are the segment's slices, read with appendMu or mu held:
// appends only add entries past them, and truncation (which holds flushMu
// and appendMu, so runs alone) resets the counts.
func (s *segment) writeIndexes(dir string, idx []offsetEntry, tidx []timeEntry) error {
	s.ixMu.Lock()
	defer s.ixMu.Unlock()
	return s.writeIndexesLocked(dir, idx, tidx)
}

func (s *segment) writeIndexesLocked(dir string, idx []offsetEntry, tidx []timeEntry) error {
	if s.idxOnDisk < len(idx) {
		if err := writeAtPath(segmentPath(dir, s.base, indexExt), encodeOffsetEntries(nil, idx[s.idxOnDisk:]), int64(s.idxOnDisk)*offsetEntrySize); err != nil {
			return fmt.Errorf("append offset index: %w", err)
		}
		s.idxOnDisk = len(idx)
		s.ixUnsynced = true
	}
	if s.tidxOnDisk < len(tidx) {
		if err := writeAtPath(segmentPath(dir, s.base, timeIndexExt), encodeTimeEntries(nil, tidx[s.tidxOnDisk:]), int64(s.tidxOnDisk)*timeEntrySize); err != nil {
			return fmt.Errorf("append time index: %w", err)
		}
		s.tidxOnDisk = len(tidx)
		s.ixUnsynced = true
	}
	return nil
}

// writeAtPath writes b at off in the file at path and cuts the file there,
// so that it holds exactly its entries.
func writeAtPath(path string, b []byte, off int64) error {
	f, err := openFile(path, os.O_WRONLY|os.O_CREATE)
	if err != nil {
		return err
	}
	_, err = f.WriteAt(b, off)
	if err == nil {
		err = f.Truncate(off + int64(len(b)))
	}
	return errors.Join(err, f.Close())
}

// indexesSynced reports whether the index files hold idx and tidx, fsynced.
func (s *segment) indexesSynced(idx []offsetEntry, tidx []timeEntry) bool {
	s.ixMu.Lock()
	defer s.ixMu.Unlock()
	return s.idxOnDisk == len(idx) && s.tidxOnDisk == len(tidx) && !s.ixUnsynced
}

// setIndexesOnDisk records that the index files hold exactly the segment's
// entries, fsynced (recovery and the cleaner wrote them so).
func (s *segment) setIndexesOnDisk() {
	s.ixMu.Lock()
	s.idxOnDisk, s.tidxOnDisk, s.ixUnsynced = len(s.idx), len(s.tidx), false
	s.ixMu.Unlock()
}

// markIndexesUnsynced records that the index files hold the entries but
// may not be on stable storage, so that the next sync fsyncs them.
func (s *segment) markIndexesUnsynced() {
	s.ixMu.Lock()
	s.ixUnsynced = true
	s.ixMu.Unlock()
}

// cutIndexFiles shortens the index files to the segment's entries after a
// truncation removed some; appendMu and flushMu are held.
func (s *segment) cutIndexFiles(dir string) error {
	s.ixMu.Lock()
	defer s.ixMu.Unlock()
	var errs []error
	if s.idxOnDisk > len(s.idx) {
		s.idxOnDisk = len(s.idx)
		errs = append(errs, os.Truncate(segmentPath(dir, s.base, indexExt), int64(s.idxOnDisk)*offsetEntrySize))
	}
	if s.tidxOnDisk > len(s.tidx) {
		s.tidxOnDisk = len(s.tidx)
		errs = append(errs, os.Truncate(segmentPath(dir, s.base, timeIndexExt), int64(s.tidxOnDisk)*timeEntrySize))
	}
	s.ixUnsynced = true
	return errors.Join(errs...)
}

func (s *segment) empty() bool { return s.size == 0 }

// lastTimeEntryTs is the timestamp a new time index entry must exceed.
func (s *segment) lastTimeEntryTs() int64 {
	if n := len(s.tidx); n > 0 {
		return s.tidx[n-1].ts
	}
	return -1
}

// sealTimeIndex appends the segment's final largest timestamp to the time
// index, as Kafka does when a segment stops being active, so that retention
// and timestamp lookups need no scan after a restart. mu is held; the entry
// reaches the file with writeIndexes.
func (s *segment) sealTimeIndex() error {
	if s.maxTs < 0 || s.maxTs <= s.lastTimeEntryTs() {
		return nil
	}
	e := timeEntry{ts: s.maxTs, rel: int32(s.offMaxTs - s.base)}
	if n := len(s.tidx); n > 0 && e.rel < s.tidx[n-1].rel {
		return nil
	}
	s.tidx = append(s.tidx, e)
	return nil
}

// unlink removes the segment's files from the directory. Open references keep
// the data readable; the files close when the last one is released.
func (s *segment) unlink(dir string) error {
	var errs []error
	for _, ext := range []string{logExt, indexExt, timeIndexExt} {
		if err := os.Remove(segmentPath(dir, s.base, ext)); err != nil && !errors.Is(err, os.ErrNotExist) {
			errs = append(errs, err)
		}
	}
	s.files.drop()
	return errors.Join(errs...)
}

// sync writes the index entries the files lack and fsyncs the log f (the
// caller holds a reference) and any index file written since the last sync.
func (s *segment) sync(dir string, f *os.File, idx []offsetEntry, tidx []timeEntry) error {
	s.ixMu.Lock()
	defer s.ixMu.Unlock()
	err := s.writeIndexesLocked(dir, idx, tidx)
	if err == nil {
		err = f.Sync()
	}
	if err == nil && s.ixUnsynced {
		err = errors.Join(syncPath(segmentPath(dir, s.base, indexExt)), syncPath(segmentPath(dir, s.base, timeIndexExt)))
		if err == nil {
			s.ixUnsynced = false
		}
	}
	return err
}

// syncPath fsyncs the file at path.
func syncPath(path string) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	return errors.Join(f.Sync(), f.Close())
}

// readHeaderAt reads the batch header at pos without reading record bytes.
func readHeaderAt(f *os.File, pos int64, buf *[batch.HeaderSize]byte) (batch.Header, error) {
	n, err := f.ReadAt(buf[:], pos)
	if n < batch.HeaderSize {
		if err == nil || errors.Is(err, io.EOF) {
			err = fmt.Errorf("short batch header at %d in %s", pos, f.Name())
		}
		return batch.Header{}, err
	}
	return batch.ParseHeader(buf[:])
}

// readOffsetAndLength reads the 12 bytes every batch starts with.
func readOffsetAndLength(f *os.File, pos int64) (int64, int64, error) {
	var b [batch.LogOverhead]byte
	if _, err := f.ReadAt(b[:], pos); err != nil {
		return 0, 0, fmt.Errorf("read batch at %d in %s: %w", pos, f.Name(), err)
	}
	length := batch.PeekLength(b[:])
	if length < batch.MinLength {
		return 0, 0, fmt.Errorf("batch at %d in %s has length %d", pos, f.Name(), length)
	}
	return batch.PeekBaseOffset(b[:]), batch.LogOverhead + int64(length), nil
}

// batchScanner reads whole batches sequentially from a segment file, for
// recovery and rebuilding state, where every byte has to be checked anyway.
type batchScanner struct {
	r   *bufio.Reader
	pos int64
	end int64 // a batch running past end is torn, whatever its length says
	buf []byte
	err error // why the scan stopped early; nil at a clean end of file

	// headersOnly skips record bytes unchecked, for replays of batches
	// that recovery has already checked or trusts.
	headersOnly bool
}

// maxScanBuffer is the largest read-ahead of a batchScanner.
const maxScanBuffer = 256 << 10

// newBatchScanner reads f from from to end, with a read-ahead no larger than
// that section: a start-up after a crash scans 10,000 active segments, most
// of them empty or small, and a fixed 256 KiB each was most of its
// allocation (and the zeroing of it most of its CPU).
func newBatchScanner(f *os.File, from, end int64) *batchScanner {
	size := int(min(max(end-from, 0), maxScanBuffer))
	return &batchScanner{r: bufio.NewReaderSize(io.NewSectionReader(f, from, end-from), size), pos: from, end: end}
}

// next returns the next valid batch and its position, or false at the end of
// the file or at the first torn or corrupt batch (then err says which).
func (sc *batchScanner) next() (batch.Header, []byte, int64, bool) {
	var lenBuf [batch.LogOverhead]byte
	n, err := io.ReadFull(sc.r, lenBuf[:])
	if err != nil {
		if n > 0 {
			sc.err = fmt.Errorf("torn batch header at %d: %d of %d bytes", sc.pos, n, batch.LogOverhead)
		} else if !errors.Is(err, io.EOF) {
			sc.err = err
		}
		return batch.Header{}, nil, 0, false
	}
	length := batch.PeekLength(lenBuf[:])
	if length < batch.MinLength {
		sc.err = fmt.Errorf("batch at %d has length %d", sc.pos, length)
		return batch.Header{}, nil, 0, false
	}
	size := batch.LogOverhead + int(length)
	if sc.pos+int64(size) > sc.end {
		sc.err = fmt.Errorf("torn batch at %d: length %d runs past the end at %d", sc.pos, length, sc.end)
		return batch.Header{}, nil, 0, false
	}
	if sc.headersOnly {
		return sc.nextHeader(lenBuf, size)
	}
	if cap(sc.buf) < size {
		sc.buf = make([]byte, size)
	}
	b := sc.buf[:size]
	copy(b, lenBuf[:])
	if n, err := io.ReadFull(sc.r, b[batch.LogOverhead:]); err != nil {
		sc.err = fmt.Errorf("torn batch at %d: %d of %d bytes", sc.pos, batch.LogOverhead+n, size)
		return batch.Header{}, nil, 0, false
	}
	h, err := batch.ParseHeader(b)
	if err == nil {
		err = batch.CheckCount(h, false)
	}
	if err == nil && batch.Checksum(b) != h.CRC {
		err = fmt.Errorf("crc mismatch")
	}
	if err != nil {
		sc.err = fmt.Errorf("batch at %d: %w", sc.pos, err)
		return batch.Header{}, nil, 0, false
	}
	pos := sc.pos
	sc.pos += int64(size)
	return h, b, pos, true
}

func (sc *batchScanner) nextHeader(lenBuf [batch.LogOverhead]byte, size int) (batch.Header, []byte, int64, bool) {
	var hb [batch.HeaderSize]byte
	copy(hb[:], lenBuf[:])
	_, err := io.ReadFull(sc.r, hb[batch.LogOverhead:])
	if err == nil {
		_, err = sc.r.Discard(size - batch.HeaderSize)
	}
	if err != nil {
		sc.err = fmt.Errorf("torn batch at %d: %w", sc.pos, err)
		return batch.Header{}, nil, 0, false
	}
	h, err := batch.ParseHeader(hb[:])
	if err != nil {
		sc.err = fmt.Errorf("batch at %d: %w", sc.pos, err)
		return batch.Header{}, nil, 0, false
	}
	pos := sc.pos
	sc.pos += int64(size)
	return h, nil, pos, true
}
