package log

import (
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
)

// The aborted transaction index, as Kafka keeps it: one %020d.txnindex file
// per segment, holding an entry for each ABORT marker in that segment, in
// marker order. An entry is 34 bytes, big-endian: version int16 (0),
// producerId int64, firstOffset int64 (the transaction's first data offset),
// lastOffset int64 (the marker's offset), lastStableOffset int64 (the LSO
// right after the marker). A segment without aborted transactions has no file.
//
// The entries also live in memory (Log.aborted, ordered by lastOffset): the
// files are rewritten from there whenever segments change, so a file is
// deleted with its segment and a truncated marker loses its entry.
const (
	txnIndexExt       = ".txnindex"
	txnEntrySize      = 34
	txnIndexVersion   = 0
	maxAbortedPerRead = 1 << 16
)

// AbortedTxn is an aborted transaction: its producer, the offsets from its
// first record to its ABORT marker, and the last stable offset after it.
type AbortedTxn struct {
	ProducerID       int64
	FirstOffset      int64
	LastOffset       int64
	LastStableOffset int64
}

func encodeTxnEntries(dst []byte, entries []AbortedTxn) []byte {
	for _, e := range entries {
		dst = binary.BigEndian.AppendUint16(dst, txnIndexVersion)
		dst = binary.BigEndian.AppendUint64(dst, uint64(e.ProducerID))
		dst = binary.BigEndian.AppendUint64(dst, uint64(e.FirstOffset))
		dst = binary.BigEndian.AppendUint64(dst, uint64(e.LastOffset))
		dst = binary.BigEndian.AppendUint64(dst, uint64(e.LastStableOffset))
	}
	return dst
}

// decodeTxnEntries reads a .txnindex file's entries for the segment
// [base, next). Entries that cannot belong there are an error.
func decodeTxnEntries(b []byte, base, next int64) ([]AbortedTxn, error) {
	if len(b)%txnEntrySize != 0 {
		return nil, fmt.Errorf("transaction index of %d bytes is not a whole number of %d-byte entries", len(b), txnEntrySize)
	}
	out := make([]AbortedTxn, 0, len(b)/txnEntrySize)
	prev := int64(-1)
	for ; len(b) > 0; b = b[txnEntrySize:] {
		if v := binary.BigEndian.Uint16(b); v != txnIndexVersion {
			return nil, fmt.Errorf("transaction index entry version %d", v)
		}
		e := AbortedTxn{
			ProducerID:       int64(binary.BigEndian.Uint64(b[2:])),
			FirstOffset:      int64(binary.BigEndian.Uint64(b[10:])),
			LastOffset:       int64(binary.BigEndian.Uint64(b[18:])),
			LastStableOffset: int64(binary.BigEndian.Uint64(b[26:])),
		}
		if e.LastOffset < base || e.LastOffset >= next || e.FirstOffset < 0 || e.FirstOffset >= e.LastOffset || e.LastOffset <= prev {
			return nil, fmt.Errorf("transaction index entry %+v does not fit segment [%d, %d)", e, base, next)
		}
		prev = e.LastOffset
		out = append(out, e)
	}
	return out, nil
}

// AbortedTxns lists the aborted transactions that overlap [from, upper): the
// ones whose marker is at or after from and whose data starts before upper,
// oldest marker first, at most maxAbortedPerRead.
func (l *Log) AbortedTxns(from, upper int64) []AbortedTxn {
	l.mu.Lock()
	defer l.mu.Unlock()
	i := sort.Search(len(l.aborted), func(i int) bool { return l.aborted[i].LastOffset >= from })
	var out []AbortedTxn
	for ; i < len(l.aborted) && len(out) < maxAbortedPerRead; i++ {
		e := l.aborted[i]
		if e.FirstOffset < upper {
			out = append(out, e)
		}
		// Every transaction still open after this marker started at or
		// after its last stable offset, so none later can overlap.
		if e.LastStableOffset >= upper {
			break
		}
	}
	return out
}

// AbortedForFetch lists the aborted transactions a read_committed fetch at
// from needs, the data returned being below lso: Read returns batches of one
// segment, so the segment after the one holding from bounds the range too
// (one more is taken, for a segment the cleaner emptied).
func (l *Log) AbortedForFetch(from, lso int64) []AbortedTxn {
	l.mu.Lock()
	upper := lso
	if i := l.segmentFor(from) + 2; i < len(l.segs) {
		upper = min(upper, l.segs[i].base)
	}
	l.mu.Unlock()
	return l.AbortedTxns(from, upper)
}

// LastStableOffset is the offset below which every transaction is decided:
// the first offset of the oldest open transaction, or the high watermark if
// that is smaller (or no transaction is open).
func (l *Log) LastStableOffset() int64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.lsoLocked()
}

func (l *Log) lsoLocked() int64 {
	if l.firstUnstable >= 0 && l.firstUnstable < l.hw {
		return max(l.firstUnstable, l.logStart)
	}
	return l.hw
}

// FirstUnstableOffset is the first offset of the oldest open transaction,
// -1 when none is open.
func (l *Log) FirstUnstableOffset() int64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.firstUnstable
}

// publishTxnState copies what readers need of the producer state; appendMu held.
func (l *Log) publishTxnState() {
	first := l.producers.firstUnstable()
	l.mu.Lock()
	l.firstUnstable = first
	l.mu.Unlock()
}

// recordAborted adds an aborted transaction whose marker was just appended
// to the active segment and appends it to that segment's index file;
// appendMu held.
func (l *Log) recordAborted(e AbortedTxn) error {
	l.mu.Lock()
	l.aborted = append(l.aborted, e)
	base := l.segs[l.segmentFor(e.LastOffset)].base
	n := l.countAbortedLocked(base)
	l.mu.Unlock()
	if l.txnFiles[base] != n-1 {
		return l.syncTxnIndexFiles()
	}
	f, err := os.OpenFile(segmentPath(l.dir, base, txnIndexExt), os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
	if err != nil {
		return storageError("open transaction index", err)
	}
	_, werr := f.Write(encodeTxnEntries(nil, []AbortedTxn{e}))
	if err := errors.Join(werr, f.Close()); err != nil {
		delete(l.txnFiles, base) // unknown content: rewritten by the next sync
		return storageError("append transaction index", err)
	}
	l.txnFiles[base] = n
	l.mu.Lock()
	l.txnDirty[base] = true
	l.mu.Unlock()
	return nil
}

// countAbortedLocked counts the entries in the segment starting at base; mu held.
func (l *Log) countAbortedLocked(base int64) int {
	i := l.segmentFor(base)
	end := int64(1<<63 - 1)
	if i+1 < len(l.segs) {
		end = l.segs[i+1].base
	}
	lo := sort.Search(len(l.aborted), func(j int) bool { return l.aborted[j].LastOffset >= base })
	hi := sort.Search(len(l.aborted), func(j int) bool { return l.aborted[j].LastOffset >= end })
	return hi - lo
}

// dropAborted keeps the entries whose marker lies in [from, to); appendMu held.
func (l *Log) dropAborted(from, to int64) {
	l.mu.Lock()
	kept := l.aborted[:0]
	for _, e := range l.aborted {
		if e.LastOffset >= from && e.LastOffset < to {
			kept = append(kept, e)
		}
	}
	clear(l.aborted[len(kept):])
	l.aborted = kept
	l.mu.Unlock()
}

// syncTxnIndexFiles makes the .txnindex files match the in-memory entries
// and the current segments: files of gone segments are deleted, files whose
// entry count differs are rewritten atomically. appendMu held.
func (l *Log) syncTxnIndexFiles() error {
	l.mu.Lock()
	want := make(map[int64][]AbortedTxn)
	j := 0
	for i, s := range l.segs {
		end := int64(1<<63 - 1)
		if i+1 < len(l.segs) {
			end = l.segs[i+1].base
		}
		for j < len(l.aborted) && l.aborted[j].LastOffset < s.base {
			j++
		}
		k := j
		for k < len(l.aborted) && l.aborted[k].LastOffset < end {
			k++
		}
		if k > j {
			want[s.base] = append([]AbortedTxn(nil), l.aborted[j:k]...)
		}
		j = k
	}
	l.mu.Unlock()
	var errs []error
	for base := range l.txnFiles {
		if _, ok := want[base]; !ok {
			errs = append(errs, removeIfExists(segmentPath(l.dir, base, txnIndexExt)))
			delete(l.txnFiles, base)
		}
	}
	for base, entries := range want {
		if n, ok := l.txnFiles[base]; ok && n == len(entries) {
			continue
		}
		name := segmentPath(l.dir, base, txnIndexExt)
		if err := writeFileAtomic(l.dir, name[len(l.dir)+1:], encodeTxnEntries(nil, entries)); err != nil {
			errs = append(errs, err)
			delete(l.txnFiles, base)
			continue
		}
		l.txnFiles[base] = len(entries)
	}
	if err := errors.Join(errs...); err != nil {
		return storageError("write transaction index", err)
	}
	return nil
}

// syncTxnIndexData fsyncs the index files appended to since the last flush;
// flushMu held.
func (l *Log) syncTxnIndexData() error {
	l.mu.Lock()
	dirty := l.txnDirty
	l.txnDirty = make(map[int64]bool)
	l.mu.Unlock()
	var errs []error
	for base := range dirty {
		f, err := os.Open(segmentPath(l.dir, base, txnIndexExt))
		if errors.Is(err, os.ErrNotExist) {
			continue
		}
		if err != nil {
			errs = append(errs, err)
			continue
		}
		errs = append(errs, f.Sync(), f.Close())
	}
	return errors.Join(errs...)
}

// loadTxnIndexes reads the index files of the segments at load. A file that
// cannot be read is logged; it returns the base of the first such segment
// (else the maximum offset), from where the index is rebuilt by a replay.
func (l *Log) loadTxnIndexes(files dirFiles) (int64, error) {
	l.aborted = nil
	damaged := int64(1<<63 - 1)
	for i, s := range l.segs {
		next := int64(1<<63 - 1)
		if i+1 < len(l.segs) {
			next = l.segs[i+1].base
		}
		path := segmentPath(l.dir, s.base, txnIndexExt)
		if !files.has(filepath.Base(path)) {
			continue
		}
		b, err := os.ReadFile(path)
		if errors.Is(err, os.ErrNotExist) {
			continue
		}
		if err != nil {
			return 0, err
		}
		entries, err := decodeTxnEntries(b, s.base, next)
		if err != nil {
			l.logger.Warn("rebuilding unreadable transaction index", "file", path, "err", err)
			l.txnFiles[s.base] = -1
			damaged = min(damaged, s.base)
			continue
		}
		l.aborted = append(l.aborted, entries...)
		l.txnFiles[s.base] = len(entries)
	}
	return damaged, nil
}
