package log

import (
	"bufio"
	"cmp"
	"context"
	"crypto/md5"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/ktoolhq/ktool/internal/batch"
)

const (
	cleanerCheckpointFile = "cleaner-offset-checkpoint"
	// swapManifestFile lists, while cleaned segments are being swapped in,
	// the offset range each one replaces, so that recovery finishes an
	// interrupted swap exactly.
	swapManifestFile = "cleaner-swap-ranges"
	cleanedSuffix    = ".cleaned"
	swapSuffix       = ".swap"

	// cleanerBytesPerKey is what one key of the cleaner's map costs: a
	// 16-byte MD5 digest and an 8-byte offset in a Go map, with the map's
	// own overhead.
	cleanerBytesPerKey = 48
)

// keyMap maps the MD5 digest of each key of the dirty section to the offset
// of its latest record there.
type keyMap map[[md5.Size]byte]int64

// CleanResult describes one cleaning pass; the zero value means there was
// nothing to do.
type CleanResult struct {
	SegmentsCleaned int   // segments read and replaced
	BytesBefore     int64 // their size
	BytesAfter      int64 // the size of what replaced them
	RecordsRemoved  int64
}

// cleanSeg is an inactive segment as a cleaning pass found it. The pass
// holds a reference to its files.
type cleanSeg struct {
	seg   *segment
	files *segFiles
	f     *os.File // the open log file, once the pass holds its reference
	idx   []offsetEntry
	size  int64
	end   int64 // base offset of the segment after it
	ts    int64 // segmentTimestamp
}

type cleanPlan struct {
	cfg        Config
	now        int64
	segs       []cleanSeg // every inactive segment, oldest first
	first      *segment   // the log's first segment, never removed so the log start stays
	firstDirty int64
	// uncleanable is where cleaning stops: the active segment, the high
	// watermark, the first offset of an open transaction, or the first
	// segment younger than min.compaction.lag.ms.
	uncleanable int64
	producers   map[int64]cleanProducer
	// aborted are the aborted transactions' offset ranges by producer,
	// ordered by first offset: their batches go and shadow no key.
	aborted map[int64][]AbortedTxn
	txns    cleanTxns
}

// cleanProducer is what a pass needs of a producer's state: the last offset
// of its newest data batch (-1 when it has none of its current epoch) and
// that epoch.
type cleanProducer struct {
	last  int64
	epoch int16
}

// txnKey names an aborted transaction by producer and marker offset.
type txnKey struct{ pid, marker int64 }

// cleanTxns follows transactions through a pass, which reads the log from its
// first segment in offset order, to decide which markers may go. As in
// Kafka, a marker stays while a batch of its transaction was met in the pass
// (a batch the pass removes counts: the marker goes in a later pass).
type cleanTxns struct {
	observed   map[txnKey]bool // aborted transactions with a batch met
	committing map[int64]bool  // producers with a batch met, not aborted, since their last marker
	// unindexed are aborted transactions with no batch left, whose index
	// entries go: a reader has nothing of theirs to skip.
	unindexed map[txnKey]bool
	// lastRemoved is the offset of the last marker the pass removes, -1
	// when it removes none.
	lastRemoved int64
}

// abortedTxn returns the aborted transaction data batch h belongs to.
func (p *cleanPlan) abortedTxn(h batch.Header) (AbortedTxn, bool) {
	if !h.Transactional() || h.Control() {
		return AbortedTxn{}, false
	}
	txns := p.aborted[h.ProducerID]
	i := sort.Search(len(txns), func(i int) bool { return txns[i].FirstOffset > h.BaseOffset })
	if i > 0 && h.BaseOffset < txns[i-1].LastOffset {
		return txns[i-1], true
	}
	return AbortedTxn{}, false
}

// isAborted reports whether data batch h belongs to an aborted transaction.
func (p *cleanPlan) isAborted(h batch.Header) bool {
	_, ok := p.abortedTxn(h)
	return ok
}

// dataRead notes a data batch the pass met and reports whether it belongs
// to an aborted transaction.
func (p *cleanPlan) dataRead(h batch.Header) bool {
	if !h.Transactional() {
		return false
	}
	if a, ok := p.abortedTxn(h); ok {
		p.txns.observed[txnKey{a.ProducerID, a.LastOffset}] = true
		return true
	}
	p.txns.committing[h.ProducerID] = true
	return false
}

// markerRead notes a marker the pass met and reports whether its
// transaction has no batch left in the log, so that the marker may go.
func (p *cleanPlan) markerRead(h batch.Header, m batch.Marker) bool {
	open := p.txns.committing[h.ProducerID]
	delete(p.txns.committing, h.ProducerID)
	if m.Type == batch.ControlAbort {
		k := txnKey{h.ProducerID, h.BaseOffset}
		if p.txns.observed[k] {
			return false
		}
		p.txns.unindexed[k] = true
	}
	return !open
}

// holdsEpoch reports whether control batch h is what the log keeps of its
// producer's current epoch when no data batch of that epoch is left: as in
// Kafka it stays, so that producer state rebuilt from the log still fences
// older epochs.
func (p *cleanPlan) holdsEpoch(h batch.Header) bool {
	e, ok := p.producers[h.ProducerID]
	return ok && e.last < 0 && e.epoch == h.ProducerEpoch
}

// horizon is the delete horizon the pass gives a batch it stamps:
// delete.retention.ms from now.
func (p *cleanPlan) horizon() int64 {
	return p.now + min(p.cfg.DeleteRetentionMs, math.MaxInt64/2-max(p.now, 0))
}

func (p *cleanPlan) release() {
	for _, cs := range p.segs {
		if cs.f != nil {
			cs.files.release()
		}
	}
}

// cleanedOut is a group of segments rewritten into one .cleaned segment.
type cleanedOut struct {
	group   []cleanSeg
	ib      *indexBuilder
	removed int64
}

func (o cleanedOut) base() int64 { return o.group[0].seg.base }
func (o cleanedOut) end() int64  { return o.group[len(o.group)-1].end }

// Clean runs one pass of the log cleaner when cleanup.policy includes compact
// and the log is due: the dirty section (from the cleaner checkpoint to the
// active segment, the high watermark or the first segment younger than
// min.compaction.lag.ms) makes up more than min.cleanable.dirty.ratio of the
// inactive bytes, or holds a batch older than max.compaction.lag.ms. It keeps
// the latest record of each key, drops tombstones past delete.retention.ms,
// never changes an offset, and swaps the rewritten segments in atomically.
// Appends and reads go on meanwhile; locks are held only to plan and to swap.
// Cancelling ctx, or closing the log, abandons the pass before the swap.
func (l *Log) Clean(ctx context.Context) (CleanResult, error) {
	l.cleanMu.Lock()
	defer l.cleanMu.Unlock()
	p, err := l.planClean()
	if p == nil || err != nil {
		return CleanResult{}, err
	}
	defer p.release()
	keys, end, err := l.buildKeyMap(ctx, p)
	if err != nil {
		return CleanResult{}, fmt.Errorf("clean %s: %w", l.dir, err)
	}
	var outs []cleanedOut
	var res CleanResult
	for _, g := range p.groups(end) {
		out, err := l.writeCleaned(ctx, p, g, keys, end)
		if err != nil {
			if cerr := l.abandoned(ctx); cerr == nil {
				err = storageError("clean "+l.dir, err)
			}
			return CleanResult{}, errors.Join(err, l.removeCleaned(append(outs, cleanedOut{group: g})))
		}
		outs = append(outs, out)
		res.SegmentsCleaned += len(g)
		for _, cs := range g {
			res.BytesBefore += cs.size
		}
		res.BytesAfter += out.ib.size
		res.RecordsRemoved += out.removed
	}
	swapped, err := l.swapIn(p, outs, end)
	if err != nil {
		return CleanResult{}, storageError("clean "+l.dir, err)
	}
	if !swapped {
		l.logger.Info("log changed while cleaning; the pass is dropped", "dir", l.dir)
		return CleanResult{}, l.removeCleaned(outs)
	}
	l.logger.Debug("cleaned log", "dir", l.dir, "segments", res.SegmentsCleaned, "bytesBefore", res.BytesBefore, "bytesAfter", res.BytesAfter, "recordsRemoved", res.RecordsRemoved, "cleanedTo", end)
	return res, nil
}

// planClean decides whether the log is due for cleaning and, if so, takes
// what the pass needs under the locks: nil means nothing to do.
func (l *Log) planClean() (*cleanPlan, error) {
	l.appendMu.Lock()
	defer l.appendMu.Unlock()
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return nil, ErrClosed
	}
	cfg := l.cfg
	if !cfg.Compact() || len(l.segs) < 2 {
		return nil, nil
	}
	now := cfg.now().UnixMilli()
	firstDirty := l.cleanerPoint
	if firstDirty < l.logStart || firstDirty > l.leo {
		firstDirty = l.logStart
	}
	uncleanable := min(l.active().base, l.hw)
	if l.firstUnstable >= 0 {
		// Undecided transactions are not cleaned, as Kafka: their records
		// may yet be aborted.
		uncleanable = min(uncleanable, l.firstUnstable)
	}
	p := &cleanPlan{cfg: cfg, now: now, first: l.segs[0], firstDirty: firstDirty}
	for i, s := range l.segs[:len(l.segs)-1] {
		cs := cleanSeg{seg: s, files: s.files, idx: s.idx, size: s.size, end: l.segs[i+1].base, ts: segmentTimestamp(s)}
		if cfg.MinCompactionLagMs > 0 && cs.end > firstDirty && cs.ts > now-cfg.MinCompactionLagMs {
			uncleanable = min(uncleanable, s.base)
		}
		p.segs = append(p.segs, cs)
	}
	p.uncleanable = uncleanable

	var cleanBytes, dirtyBytes int64
	earliest := int64(math.MaxInt64)
	for _, cs := range p.segs {
		switch {
		case cs.end <= firstDirty:
			cleanBytes += cs.size
		case cs.seg.base < uncleanable:
			dirtyBytes += cs.size
			if cs.seg.rollTs > 0 {
				earliest = min(earliest, cs.seg.rollTs)
			}
		}
	}
	if dirtyBytes == 0 || firstDirty >= uncleanable {
		return nil, nil
	}
	// As Kafka: the ratio must exceed min.cleanable.dirty.ratio, unless a
	// dirty batch is older than max.compaction.lag.ms.
	ratio := float64(dirtyBytes) / float64(cleanBytes+dirtyBytes)
	if ratio <= cfg.MinCleanableDirtyRatio && earliest >= now-cfg.MaxCompactionLagMs {
		return nil, nil
	}
	p.producers = make(map[int64]cleanProducer, len(l.producers.m))
	for pid, e := range l.producers.m {
		p.producers[pid] = cleanProducer{last: e.lastOffset(), epoch: e.epoch}
	}
	p.txns = cleanTxns{observed: map[txnKey]bool{}, committing: map[int64]bool{}, unindexed: map[txnKey]bool{}, lastRemoved: -1}
	p.aborted = make(map[int64][]AbortedTxn)
	for _, a := range l.aborted {
		if a.FirstOffset < uncleanable {
			p.aborted[a.ProducerID] = append(p.aborted[a.ProducerID], a)
		}
	}
	for _, txns := range p.aborted {
		sort.Slice(txns, func(i, j int) bool { return txns[i].FirstOffset < txns[j].FirstOffset })
	}
	for i := range p.segs {
		f, err := p.segs[i].files.acquire()
		if err != nil {
			p.release()
			return nil, storageError("clean "+l.dir, err)
		}
		p.segs[i].f = f
	}
	return p, nil
}

// abandoned reports why a pass must stop early: ctx is done or the log closed.
func (l *Log) abandoned(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if l.isClosed() {
		return ErrClosed
	}
	return nil
}

// buildKeyMap maps each key of the dirty section to its latest offset and
// returns where the map ends: records from there on are kept as they are.
// The map holds at most CleanerDedupeBufferSize/cleanerBytesPerKey keys; when
// it is full the pass cleans up to the record that did not fit and the next
// pass goes on from there.
func (l *Log) buildKeyMap(ctx context.Context, p *cleanPlan) (keyMap, int64, error) {
	maxKeys := int(min(p.cfg.CleanerDedupeBufferSize/cleanerBytesPerKey, math.MaxInt32))
	keys := make(keyMap)
	errFull := errors.New("key map full")
	end := p.uncleanable
	for _, cs := range p.segs {
		if cs.end <= p.firstDirty {
			continue
		}
		if cs.seg.base >= p.uncleanable {
			break
		}
		if err := l.abandoned(ctx); err != nil {
			return nil, 0, err
		}
		sc := newBatchScanner(cs.f, lookupPosition(cs.idx, p.firstDirty-cs.seg.base), cs.size)
		for {
			if err := ctx.Err(); err != nil {
				return nil, 0, err
			}
			h, b, _, ok := sc.next()
			if !ok {
				if sc.err != nil {
					return nil, 0, fmt.Errorf("segment %d: %w", cs.seg.base, sc.err)
				}
				break
			}
			if h.BaseOffset >= p.uncleanable {
				return keys, end, nil
			}
			if h.LastOffset() < p.firstDirty || h.Control() || p.isAborted(h) {
				continue
			}
			err := eachRecord(ctx, p.cfg.Codecs, h, b, func(r batch.Record) error {
				off := h.BaseOffset + int64(r.OffsetDelta)
				if off < p.firstDirty || off >= p.uncleanable || !r.HasKey() {
					return nil
				}
				k := md5.Sum(r.Key)
				if _, ok := keys[k]; !ok && len(keys) >= maxKeys {
					end = off
					return errFull
				}
				keys[k] = off
				return nil
			})
			if errors.Is(err, errFull) {
				return keys, end, nil
			}
			if err != nil {
				return nil, 0, fmt.Errorf("segment %d: %w", cs.seg.base, err)
			}
		}
	}
	return keys, end, nil
}

// groups splits the segments that start below end into runs that are
// rewritten into one segment each: at most segment.bytes of input and an
// offset span the index's relative offsets can hold, as Kafka groups them.
func (p *cleanPlan) groups(end int64) [][]cleanSeg {
	var groups [][]cleanSeg
	var size int64
	for _, cs := range p.segs {
		if cs.seg.base >= end {
			break
		}
		if n := len(groups); n > 0 {
			g := groups[n-1]
			if size+cs.size <= p.cfg.SegmentBytes && cs.end-1-g[0].seg.base <= math.MaxInt32 {
				groups[n-1] = append(g, cs)
				size += cs.size
				continue
			}
		}
		groups = append(groups, []cleanSeg{cs})
		size = cs.size
	}
	return groups
}

// retain decides whether a record stays: everything from end on, and before
// it the latest record of each key, tombstones only until their batch's
// delete horizon (KIP-534). Records without a key go, as in Kafka.
func retain(r batch.Record, off int64, keys keyMap, end int64, dropTombstones bool) bool {
	if off >= end {
		return true
	}
	if !r.HasKey() {
		return false
	}
	if latest, ok := keys[md5.Sum(r.Key)]; ok && latest > off {
		return false
	}
	return r.Value != nil || !dropTombstones
}

// filterBatch returns the batch as it is after cleaning (nil when it goes),
// its header and how many records it lost. A thinned batch keeps its base
// offset, last offset delta, record offsets, producer fields and codec; a
// producer's newest batch stays even when empty, as in Kafka, so that its
// sequence numbers survive a rebuild of producer state from the log. The
// first pass to keep a tombstone in a batch with no delete horizon stamps
// one, delete.retention.ms ahead: from then on the tombstone may go.
func (p *cleanPlan) filterBatch(ctx context.Context, h batch.Header, b []byte, keys keyMap, end int64) ([]byte, batch.Header, int64, error) {
	if h.BaseOffset >= end {
		return b, h, 0, nil
	}
	if h.Control() {
		return p.filterMarker(ctx, h, b)
	}
	aborted := p.dataRead(h)
	horizon, stamped := h.DeleteHorizon()
	dropTombstones := stamped && horizon <= p.now
	keep := func(r batch.Record) bool {
		return !aborted && retain(r, h.BaseOffset+int64(r.OffsetDelta), keys, end, dropTombstones)
	}
	var raw []byte
	kept := int32(0)
	maxTs := int64(-1)
	tombstones := false
	err := eachRecord(ctx, p.cfg.Codecs, h, b, func(r batch.Record) error {
		if keep(r) {
			raw = append(raw, r.Raw...)
			kept++
			maxTs = max(maxTs, h.FirstTimestamp+r.TimestampDelta)
			tombstones = tombstones || r.Value == nil
		}
		return nil
	})
	if err != nil {
		return nil, h, 0, err
	}
	removed := int64(h.NumRecords - kept)
	if kept == 0 {
		if e, ok := p.producers[h.ProducerID]; !ok || h.ProducerID < 0 || e.last != h.LastOffset() {
			return nil, h, removed, nil
		}
		if h.NumRecords == 0 {
			return b, h, 0, nil
		}
		nh := h
		nh.Attributes &^= batch.AttrCompressionMask | batch.AttrDeleteHorizon
		nh.FirstTimestamp = h.MaxTimestamp
		nh.NumRecords = 0
		nh.Length = batch.MinLength
		return batch.Encode(nh, nil), nh, removed, nil
	}
	nh := h
	switch {
	case tombstones && !stamped:
		horizon := p.horizon()
		rebased, fits, err := p.rebase(ctx, h, b, horizon, keep)
		if err != nil {
			return nil, h, 0, err
		}
		if !fits {
			if removed == 0 {
				return b, h, 0, nil
			}
			break
		}
		raw = rebased
		nh.FirstTimestamp = horizon
		nh.Attributes |= batch.AttrDeleteHorizon
	case removed == 0:
		return b, h, 0, nil
	}
	body, err := batch.Compress(ctx, p.cfg.Codecs, h.Compression(), raw)
	if err != nil {
		return nil, h, 0, fmt.Errorf("recompress batch %d: %w", h.BaseOffset, err)
	}
	nh.NumRecords = kept
	if !h.LogAppendTime() {
		nh.MaxTimestamp = maxTs
	}
	nh.Length = int32(batch.MinLength + len(body))
	return batch.Encode(nh, body), nh, removed, nil
}

// filterMarker decides a control batch's fate. A marker may go once no
// batch of its transaction is left in the log (then no reader needs it to
// end the transaction) and it is not what holds its producer's epoch: the
// first pass to find it so stamps its delete horizon, delete.retention.ms
// ahead, and the first pass after the horizon removes it, as KIP-534 does,
// so that a consumer that read the transaction's data has that long to read
// its marker too. A control batch without a readable marker stays.
func (p *cleanPlan) filterMarker(ctx context.Context, h batch.Header, b []byte) ([]byte, batch.Header, int64, error) {
	m, err := batch.MarkerOf(b)
	if err != nil || h.ProducerID < 0 || !p.markerRead(h, m) || p.holdsEpoch(h) {
		return b, h, 0, nil
	}
	if horizon, ok := h.DeleteHorizon(); ok {
		if horizon > p.now {
			return b, h, 0, nil
		}
		p.txns.lastRemoved = h.LastOffset()
		return nil, h, int64(h.NumRecords), nil
	}
	horizon := p.horizon()
	raw, fits, err := p.rebase(ctx, h, b, horizon, func(batch.Record) bool { return true })
	if err != nil || !fits {
		return b, h, 0, err
	}
	nh := h
	nh.FirstTimestamp = horizon
	nh.Attributes |= batch.AttrDeleteHorizon
	nh.Length = int32(batch.MinLength + len(raw))
	return batch.Encode(nh, raw), nh, 0, nil
}

// rebase re-encodes the records of batch b that keep keeps with timestamp
// deltas from base, which becomes the batch's first timestamp (its delete
// horizon), so that every record keeps its timestamp. fits is false when a
// delta does not fit an int64. The section returned is uncompressed.
func (p *cleanPlan) rebase(ctx context.Context, h batch.Header, b []byte, base int64, keep func(batch.Record) bool) ([]byte, bool, error) {
	var raw []byte
	fits := true
	err := eachRecord(ctx, p.cfg.Codecs, h, b, func(r batch.Record) error {
		if !keep(r) {
			return nil
		}
		ts := h.FirstTimestamp + r.TimestampDelta
		d := ts - base
		fits = fits && (d < ts) == (base > 0)
		raw = batch.AppendRecord(raw, d, r.OffsetDelta, r.Key, r.Value, r.Headers())
		return nil
	})
	return raw, fits, err
}

func cleanedPath(dir string, base int64, ext string) string {
	return segmentPath(dir, base, ext) + cleanedSuffix
}

// writeCleaned rewrites a group of segments into <base>.log.cleaned and its
// indexes, all fsynced. The log file keeps the newest modification time of
// the group, as Kafka's cleaned segments do.
func (l *Log) writeCleaned(ctx context.Context, p *cleanPlan, g []cleanSeg, keys keyMap, end int64) (cleanedOut, error) {
	out := cleanedOut{group: g, ib: newIndexBuilder(g[0].seg.base, int64(p.cfg.IndexIntervalBytes))}
	f, err := openFile(cleanedPath(l.dir, out.base(), logExt), os.O_RDWR|os.O_CREATE|os.O_TRUNC)
	if err != nil {
		return out, err
	}
	modTime, err := l.writeCleanedLog(ctx, p, f, &out, keys, end)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Chtimes(f.Name(), modTime, modTime)
	}
	if err != nil {
		return out, err
	}
	out.ib.seal()
	if err := writeSynced(cleanedPath(l.dir, out.base(), indexExt), encodeOffsetEntries(nil, out.ib.idx)); err != nil {
		return out, err
	}
	return out, writeSynced(cleanedPath(l.dir, out.base(), timeIndexExt), encodeTimeEntries(nil, out.ib.tidx))
}

func (l *Log) writeCleanedLog(ctx context.Context, p *cleanPlan, f *os.File, out *cleanedOut, keys keyMap, end int64) (time.Time, error) {
	w := bufio.NewWriterSize(f, 256<<10)
	var modTime time.Time
	for _, cs := range out.group {
		if err := l.abandoned(ctx); err != nil {
			return modTime, err
		}
		st, err := cs.f.Stat()
		if err != nil {
			return modTime, err
		}
		if st.ModTime().After(modTime) {
			modTime = st.ModTime()
		}
		sc := newBatchScanner(cs.f, 0, cs.size)
		for {
			if err := ctx.Err(); err != nil {
				return modTime, err
			}
			h, b, _, ok := sc.next()
			if !ok {
				if sc.err != nil {
					return modTime, fmt.Errorf("segment %d: %w", cs.seg.base, sc.err)
				}
				break
			}
			nb, nh, removed, err := p.filterBatch(ctx, h, b, keys, end)
			if err != nil {
				return modTime, fmt.Errorf("segment %d: %w", cs.seg.base, err)
			}
			out.removed += removed
			if nb == nil {
				continue
			}
			if out.ib.size+nh.Size() > math.MaxInt32 {
				return modTime, fmt.Errorf("cleaned segment %d outgrows what an index can address", out.base())
			}
			if _, err := w.Write(nb); err != nil {
				return modTime, err
			}
			out.ib.add(nh)
		}
	}
	return modTime, w.Flush()
}

func writeSynced(path string, data []byte) error {
	f, err := openFile(path, os.O_WRONLY|os.O_CREATE|os.O_TRUNC)
	if err != nil {
		return err
	}
	_, err = f.Write(data)
	if err == nil {
		err = f.Sync()
	}
	return errors.Join(err, f.Close())
}

// removeCleaned deletes the .cleaned files of a pass that did not swap in.
func (l *Log) removeCleaned(outs []cleanedOut) error {
	var errs []error
	for _, o := range outs {
		for _, ext := range []string{logExt, indexExt, timeIndexExt} {
			errs = append(errs, removeIfExists(cleanedPath(l.dir, o.base(), ext)))
		}
	}
	return errors.Join(errs...)
}

// swapIn replaces the cleaned groups' segments with their rewrites, unless
// the log changed under the pass (retention, truncation, close): then it
// reports false and touches nothing. On disk: the manifest of ranges, the
// .cleaned files renamed to .swap (the commit point), then completeSwaps; a
// crash anywhere is finished or undone by Open.
func (l *Log) swapIn(p *cleanPlan, outs []cleanedOut, end int64) (bool, error) {
	l.appendMu.Lock()
	defer l.appendMu.Unlock()
	l.flushMu.Lock()
	defer l.flushMu.Unlock()
	l.mu.Lock()
	ok := !l.closed && l.unchanged(outs)
	l.mu.Unlock()
	if !ok {
		return false, nil
	}

	if err := l.forgetCleanedTxns(&p.txns); err != nil {
		return false, err
	}
	ranges := make([]swapRange, len(outs))
	for i, o := range outs {
		ranges[i] = swapRange{base: o.base(), end: o.end()}
	}
	if err := writeFileAtomic(l.dir, swapManifestFile, encodeSwapManifest(ranges)); err != nil {
		return false, err
	}
	for _, o := range outs {
		// The log goes last: a .log.swap means the whole segment is there.
		for _, ext := range []string{indexExt, timeIndexExt, logExt} {
			if err := os.Rename(cleanedPath(l.dir, o.base(), ext), segmentPath(l.dir, o.base(), ext)+swapSuffix); err != nil {
				return false, err
			}
		}
	}
	if err := syncDir(l.dir); err != nil {
		return false, err
	}
	if err := completeSwaps(l.dir, ranges); err != nil {
		return false, err
	}

	replaced := make(map[*segment]*segment)
	for _, o := range outs {
		var ns *segment
		if o.ib.size > 0 || o.group[0].seg == p.first {
			ns = &segment{base: o.base(), files: l.inactiveFiles(o.base()), created: p.cfg.now()}
			o.ib.apply(ns)
			ns.setIndexesOnDisk()
		} else if err := removeSegmentFiles(l.dir, o.base()); err != nil {
			return false, err
		}
		for _, cs := range o.group {
			replaced[cs.seg] = nil
		}
		replaced[o.group[0].seg] = ns
	}
	if err := errors.Join(removeIfExists(filepath.Join(l.dir, swapManifestFile)), syncDir(l.dir)); err != nil {
		l.logger.Warn("removing the cleaner's swap manifest", "dir", l.dir, "err", err)
	}

	l.mu.Lock()
	segs := make([]*segment, 0, len(l.segs))
	for _, s := range l.segs {
		ns, ok := replaced[s]
		if !ok {
			segs = append(segs, s)
		} else if ns != nil {
			segs = append(segs, ns)
		}
	}
	l.segs = segs
	l.cleanerPoint = end
	l.mu.Unlock()
	for s := range replaced {
		s.files.drop()
	}
	if err := l.syncTxnIndexFiles(); err != nil {
		return true, err
	}
	return true, l.writeCheckpointsLocked()
}

// unchanged reports whether every segment of the pass is still in the log,
// inactive, with the same files, size and successor; mu is held.
func (l *Log) unchanged(outs []cleanedOut) bool {
	pos := make(map[*segment]int, len(l.segs))
	for i, s := range l.segs {
		pos[s] = i
	}
	for _, o := range outs {
		for _, cs := range o.group {
			i, ok := pos[cs.seg]
			if !ok || i+1 >= len(l.segs) || cs.seg.files != cs.files || cs.seg.size != cs.size || l.segs[i+1].base != cs.end {
				return false
			}
		}
	}
	return true
}

// forgetCleanedTxns makes the transaction state on disk agree with the
// cleaned segments before they are swapped in (it agrees with the old ones
// too): the index entries of aborted transactions with no batch left go,
// and so do the producer snapshots at or below the last marker removed,
// since replaying the log from one of them would reopen a transaction whose
// marker is gone. appendMu held.
func (l *Log) forgetCleanedTxns(t *cleanTxns) error {
	if len(t.unindexed) > 0 {
		l.mu.Lock()
		kept := l.aborted[:0]
		for _, e := range l.aborted {
			if !t.unindexed[txnKey{e.ProducerID, e.LastOffset}] {
				kept = append(kept, e)
			}
		}
		clear(l.aborted[len(kept):])
		l.aborted = kept
		l.mu.Unlock()
		if err := l.syncTxnIndexFiles(); err != nil {
			return err
		}
	}
	if t.lastRemoved < 0 {
		return nil
	}
	offs, err := listSnapshots(l.dir)
	if err != nil {
		return err
	}
	var errs []error
	for _, off := range offs {
		if off <= t.lastRemoved {
			errs = append(errs, removeIfExists(segmentPath(l.dir, off, snapshotExt)))
		}
	}
	if l.snapshotAt <= t.lastRemoved {
		l.snapshotAt = -1
	}
	return errors.Join(append(errs, syncDir(l.dir))...)
}

func removeSegmentFiles(dir string, base int64) error {
	var errs []error
	for _, ext := range []string{logExt, indexExt, timeIndexExt} {
		errs = append(errs, removeIfExists(segmentPath(dir, base, ext)))
	}
	return errors.Join(errs...)
}

// swapRange says that the swapped-in segment at base replaces every old
// segment starting in [base, end).
type swapRange struct{ base, end int64 }

func encodeSwapManifest(rs []swapRange) []byte {
	b := fmt.Appendf(nil, "%d\n%d\n", checkpointVersion, len(rs))
	for _, r := range rs {
		b = fmt.Appendf(b, "%d %d\n", r.base, r.end)
	}
	return b
}

func readSwapManifest(path string) ([]swapRange, error) {
	lines, err := readCheckpointLines(path)
	if err != nil {
		return nil, err
	}
	rs := make([]swapRange, 0, len(lines))
	for _, f := range lines {
		if len(f) != 2 {
			return nil, fmt.Errorf("swap manifest %s: want \"base end\" lines", path)
		}
		base, err1 := strconv.ParseInt(f[0], 10, 64)
		end, err2 := strconv.ParseInt(f[1], 10, 64)
		if err := errors.Join(err1, err2); err != nil {
			return nil, fmt.Errorf("swap manifest %s: %w", path, err)
		}
		rs = append(rs, swapRange{base: base, end: end})
	}
	return rs, nil
}

// completeSwaps moves swapped-in segments into place, oldest first: the old
// segments starting inside a range go, then the .swap files take their names,
// the log file last. Ranges whose .log.swap is gone are done already.
func completeSwaps(dir string, ranges []swapRange) error {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return err
	}
	var bases []int64
	for _, e := range entries {
		if base, ok := segmentBase(e.Name(), logExt); ok {
			bases = append(bases, base)
		}
	}
	slices.Sort(bases)
	for _, r := range ranges {
		if _, err := os.Stat(segmentPath(dir, r.base, logExt) + swapSuffix); err != nil {
			if errors.Is(err, os.ErrNotExist) {
				continue
			}
			return err
		}
		for _, b := range bases {
			if b > r.base && b < r.end {
				if err := removeSegmentFiles(dir, b); err != nil {
					return err
				}
			}
		}
		for _, ext := range []string{indexExt, timeIndexExt, logExt} {
			p := segmentPath(dir, r.base, ext)
			if err := os.Rename(p+swapSuffix, p); err != nil && !errors.Is(err, os.ErrNotExist) {
				return err
			}
		}
	}
	return syncDir(dir)
}

// finishSwaps completes a swap of cleaned segments that a crash interrupted
// after its commit point, before the directory is loaded. A .log.swap missing
// from the manifest (unreadable) replaces, as in Kafka, the old segments
// starting below the end of its last batch. changed reports that it renamed
// or removed files, so that entries no longer list the directory.
func (l *Log) finishSwaps(entries []os.DirEntry) (changed bool, err error) {
	pending := false
	for _, e := range entries {
		if e.Name() == swapManifestFile || strings.HasSuffix(e.Name(), swapSuffix) {
			pending = true
			break
		}
	}
	if !pending {
		return false, nil
	}
	manifest := filepath.Join(l.dir, swapManifestFile)
	ranges, err := readSwapManifest(manifest)
	if err != nil {
		l.logger.Warn("ignoring unreadable swap manifest", "dir", l.dir, "err", err)
		ranges = nil
	}
	listed := make(map[int64]bool, len(ranges))
	for _, r := range ranges {
		listed[r.base] = true
	}
	swaps := 0
	for _, e := range entries {
		name, ok := strings.CutSuffix(e.Name(), swapSuffix)
		if !ok {
			continue
		}
		base, ok := segmentBase(name, logExt)
		if !ok {
			continue
		}
		swaps++
		if !listed[base] {
			end, err := swapEnd(segmentPath(l.dir, base, logExt) + swapSuffix)
			if err != nil {
				return false, err
			}
			ranges = append(ranges, swapRange{base: base, end: max(end, base+1)})
		}
	}
	_, statErr := os.Stat(manifest)
	if swaps == 0 && errors.Is(statErr, os.ErrNotExist) {
		return false, nil
	}
	slices.SortFunc(ranges, func(a, b swapRange) int { return cmp.Compare(a.base, b.base) })
	if swaps > 0 {
		l.logger.Warn("finishing an interrupted swap of cleaned segments", "dir", l.dir, "segments", swaps)
		if err := completeSwaps(l.dir, ranges); err != nil {
			return true, err
		}
	}
	return true, errors.Join(removeIfExists(manifest), syncDir(l.dir))
}

// swapEnd is the offset after the last whole batch of a swap file.
func swapEnd(path string) (int64, error) {
	f, err := os.Open(path)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return 0, err
	}
	sc := newBatchScanner(f, 0, st.Size())
	sc.headersOnly = true
	end := int64(0)
	for {
		h, _, _, ok := sc.next()
		if !ok {
			return end, nil
		}
		end = h.LastOffset() + 1
	}
}
