package log

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/ktoolhq/ktool/internal/batch"
)

// maxProducerBatches is how many recent batches per producer are kept for
// duplicate detection; clients cap in-flight requests at the same number.
const maxProducerBatches = 5

type producerBatch struct {
	firstSeq, lastSeq       int32
	firstOffset, lastOffset int64
	maxTs                   int64
}

type producerEntry struct {
	epoch   int16
	batches []producerBatch // oldest first
	// coordEpoch is the coordinator epoch of the producer's last marker (-1
	// before one): a marker from an older coordinator is fenced.
	coordEpoch int32
	// txnFirst is the first offset of the producer's open transaction, -1
	// when none is open.
	txnFirst int64
	// lastMarker is the offset of the producer's last marker seen since the
	// state was loaded, -1 before one; transaction verification uses it to
	// see that no marker landed while the coordinator was asked.
	lastMarker int64
}

func newProducerEntry(epoch int16) *producerEntry {
	return &producerEntry{epoch: epoch, coordEpoch: -1, txnFirst: -1, lastMarker: -1}
}

// lastOffset is the last offset of the producer's newest batch, -1 before one.
func (e *producerEntry) lastOffset() int64 {
	if n := len(e.batches); n > 0 {
		return e.batches[n-1].lastOffset
	}
	return -1
}

// add records an appended data batch; a new epoch forgets the old epoch's
// batches. A transactional batch opens the producer's transaction when none is.
func (e *producerEntry) add(h batch.Header) {
	e.setEpoch(h.ProducerEpoch)
	if len(e.batches) == maxProducerBatches {
		e.batches = append(e.batches[:0], e.batches[1:]...)
	}
	e.batches = append(e.batches, producerBatch{
		firstSeq:    h.BaseSequence,
		lastSeq:     h.LastSequence(),
		firstOffset: h.BaseOffset,
		lastOffset:  h.LastOffset(),
		maxTs:       h.MaxTimestamp,
	})
	if h.Transactional() && e.txnFirst < 0 {
		e.txnFirst = h.BaseOffset
	}
}

func (e *producerEntry) setEpoch(epoch int16) {
	if epoch != e.epoch {
		e.epoch = epoch
		e.batches = e.batches[:0]
	}
}

// completedTxn is a transaction a marker closed: first offset of its data
// (-1 when the marker closed nothing) and the marker's offset.
type completedTxn struct {
	producerID  int64
	first, last int64
	aborted     bool
}

// end applies a marker at offset: it closes the open transaction, if any.
func (e *producerEntry) end(pid int64, h batch.Header, m batch.Marker) completedTxn {
	e.setEpoch(h.ProducerEpoch)
	done := completedTxn{producerID: pid, first: e.txnFirst, last: h.BaseOffset, aborted: m.Type == batch.ControlAbort}
	e.txnFirst = -1
	e.coordEpoch = m.CoordinatorEpoch
	e.lastMarker = h.BaseOffset
	return done
}

// checkMarker applies the fencing rules to a marker the leader is asked to
// append for the producer's entry e (nil when unknown): an older producer
// epoch cannot close the transaction of a newer one (KIP-890), and a
// coordinator older than the one that wrote the last marker is fenced.
func checkMarker(e *producerEntry, pid int64, epoch int16, coordEpoch int32) error {
	if e == nil {
		return nil
	}
	if epoch < e.epoch {
		return fmt.Errorf("marker for producer %d epoch %d is older than epoch %d: %w", pid, epoch, e.epoch, kerr.InvalidProducerEpoch)
	}
	if coordEpoch < e.coordEpoch {
		return fmt.Errorf("marker for producer %d from coordinator epoch %d, older than %d: %w", pid, coordEpoch, e.coordEpoch, kerr.TransactionCoordinatorFenced)
	}
	return nil
}

// checkTxnBatch applies the transaction rules to a client data batch: a
// producer with an open transaction writes only transactional batches, and
// one without starts a transaction only once verified (verify, when not nil,
// says whether the coordinator confirmed it).
func checkTxnBatch(e *producerEntry, h batch.Header, verify func(e *producerEntry) bool) error {
	open := e != nil && e.txnFirst >= 0
	switch {
	case !h.Transactional() && open:
		return fmt.Errorf("producer %d wrote a non-transactional batch inside its open transaction: %w", h.ProducerID, kerr.InvalidTxnState)
	case h.Transactional() && !open && verify != nil && !verify(e):
		return fmt.Errorf("producer %d epoch %d has no verified transaction at this partition: %w", h.ProducerID, h.ProducerEpoch, kerr.InvalidTxnState)
	}
	return nil
}

// producerState is the idempotence and transaction state of one partition,
// keyed by producer id.
type producerState struct {
	m map[int64]*producerEntry
	// ongoing maps the producers with an open transaction to its first offset.
	ongoing map[int64]int64
}

func newProducerState() *producerState {
	return &producerState{m: make(map[int64]*producerEntry), ongoing: make(map[int64]int64)}
}

// put installs e as pid's entry and keeps ongoing in step with it.
func (ps *producerState) put(pid int64, e *producerEntry) {
	ps.m[pid] = e
	if e.txnFirst >= 0 {
		ps.ongoing[pid] = e.txnFirst
	} else {
		delete(ps.ongoing, pid)
	}
}

// apply records a batch already in the log (replication, recovery); m is
// the marker of a control batch. It returns the transaction a marker closed.
func (ps *producerState) apply(h batch.Header, m *batch.Marker) (completedTxn, bool) {
	if h.ProducerID < 0 {
		return completedTxn{}, false
	}
	e := ps.m[h.ProducerID]
	if e == nil {
		e = newProducerEntry(h.ProducerEpoch)
	}
	var done completedTxn
	closed := false
	if h.Control() {
		if m == nil {
			return completedTxn{}, false
		}
		done = e.end(h.ProducerID, h, *m)
		closed = done.first >= 0
	} else {
		e.add(h)
	}
	ps.put(h.ProducerID, e)
	return done, closed
}

// firstUnstable is the first offset of the oldest open transaction, -1 when
// none is open.
func (ps *producerState) firstUnstable() int64 {
	first := int64(-1)
	for _, off := range ps.ongoing {
		if first < 0 || off < first {
			first = off
		}
	}
	return first
}

// stableAfter is the last stable offset right after done completed, as
// Kafka's transaction index records it: the first offset of the oldest other
// open transaction, else the offset after the marker.
func (ps *producerState) stableAfter(done completedTxn) int64 {
	lso := done.last + 1
	for pid, off := range ps.ongoing {
		if pid != done.producerID && off < lso {
			lso = off
		}
	}
	return lso
}

// evictBefore forgets producers whose last batch lies below the log start,
// except those with an open transaction, whose coordinator still has to
// close it.
func (ps *producerState) evictBefore(logStart int64) {
	for pid, e := range ps.m {
		if e.lastOffset() < logStart && e.txnFirst < 0 && e.lastMarker < logStart {
			delete(ps.m, pid)
		}
	}
}

func inSequence(last, next int32) bool {
	return int64(next) == int64(last)+1 || (next == 0 && last == math.MaxInt32)
}

// checkProducerBatch applies Kafka's idempotence rules to a client batch
// against the producer's entry (nil when unknown). It returns the original
// batch when h duplicates one of the last five. An unknown producer may start
// at any sequence (KIP-360), except on a partition that never held a record,
// where only sequence 0 is safe (KAFKA-15591): otherwise two in-flight
// requests to a new partition could be appended out of order.
func checkProducerBatch(e *producerEntry, h batch.Header, neverWritten bool) (*producerBatch, error) {
	cur := int16(-1)
	if e != nil {
		cur = e.epoch
		if h.ProducerEpoch == cur {
			lastSeq := h.LastSequence()
			for i := range e.batches {
				if b := &e.batches[i]; b.firstSeq == h.BaseSequence && b.lastSeq == lastSeq {
					return b, nil
				}
			}
		}
	}
	if h.ProducerEpoch < cur {
		return nil, fmt.Errorf("producer %d epoch %d is older than %d: %w", h.ProducerID, h.ProducerEpoch, cur, kerr.InvalidProducerEpoch)
	}
	if h.ProducerEpoch != cur {
		if h.BaseSequence != 0 && (cur != -1 || neverWritten) {
			return nil, fmt.Errorf("producer %d epoch %d starts at sequence %d, not 0: %w", h.ProducerID, h.ProducerEpoch, h.BaseSequence, kerr.OutOfOrderSequenceNumber)
		}
		return nil, nil
	}
	last := int32(-1)
	if n := len(e.batches); n > 0 {
		last = e.batches[n-1].lastSeq
	}
	if !inSequence(last, h.BaseSequence) {
		return nil, fmt.Errorf("producer %d sequence %d does not follow %d: %w", h.ProducerID, h.BaseSequence, last, kerr.OutOfOrderSequenceNumber)
	}
	return nil, nil
}

// Producer snapshot file, version 2, all integers big-endian:
//
//	magic "KTPS" | version uint16 | crc32c uint32 of the rest | offset int64 | count uint32
//	count x (producerId int64 | epoch int16 | coordinatorEpoch int32 | txnFirstOffset int64 | n uint8 |
//	         n x (firstSeq int32 | lastSeq int32 | firstOffset int64 | lastOffset int64 | maxTimestamp int64))
//
// txnFirstOffset is -1 when the producer has no open transaction. Version 1
// (read, no longer written) lacks coordinatorEpoch and txnFirstOffset.
const (
	snapshotMagic   = "KTPS"
	snapshotVersion = 2
	snapshotHeader  = 4 + 2 + 4
	snapshotsKept   = 2
)

// castagnoli is the CRC table of producer snapshots, which use CRC32C as batches do.
var castagnoli = crc32.MakeTable(crc32.Castagnoli)

func (ps *producerState) encodeSnapshot(offset int64) []byte {
	pids := make([]int64, 0, len(ps.m))
	for pid := range ps.m {
		pids = append(pids, pid)
	}
	sort.Slice(pids, func(i, j int) bool { return pids[i] < pids[j] })
	b := make([]byte, snapshotHeader, snapshotHeader+12+len(pids)*(23+maxProducerBatches*32))
	copy(b, snapshotMagic)
	binary.BigEndian.PutUint16(b[4:], snapshotVersion)
	b = binary.BigEndian.AppendUint64(b, uint64(offset))
	b = binary.BigEndian.AppendUint32(b, uint32(len(pids)))
	for _, pid := range pids {
		e := ps.m[pid]
		b = binary.BigEndian.AppendUint64(b, uint64(pid))
		b = binary.BigEndian.AppendUint16(b, uint16(e.epoch))
		b = binary.BigEndian.AppendUint32(b, uint32(e.coordEpoch))
		b = binary.BigEndian.AppendUint64(b, uint64(e.txnFirst))
		b = append(b, byte(len(e.batches)))
		for _, pb := range e.batches {
			b = binary.BigEndian.AppendUint32(b, uint32(pb.firstSeq))
			b = binary.BigEndian.AppendUint32(b, uint32(pb.lastSeq))
			b = binary.BigEndian.AppendUint64(b, uint64(pb.firstOffset))
			b = binary.BigEndian.AppendUint64(b, uint64(pb.lastOffset))
			b = binary.BigEndian.AppendUint64(b, uint64(pb.maxTs))
		}
	}
	binary.BigEndian.PutUint32(b[6:], crc32.Checksum(b[snapshotHeader:], castagnoli))
	return b
}

func decodeSnapshot(b []byte) (*producerState, int64, error) {
	if len(b) < snapshotHeader+12 || string(b[:4]) != snapshotMagic {
		return nil, 0, errors.New("not a producer snapshot")
	}
	version := binary.BigEndian.Uint16(b[4:])
	if version != 1 && version != snapshotVersion {
		return nil, 0, fmt.Errorf("producer snapshot version %d", version)
	}
	fixed := 11
	if version >= 2 {
		fixed = 23
	}
	if crc32.Checksum(b[snapshotHeader:], castagnoli) != binary.BigEndian.Uint32(b[6:]) {
		return nil, 0, errors.New("producer snapshot crc mismatch")
	}
	r := b[snapshotHeader:]
	offset := int64(binary.BigEndian.Uint64(r))
	count := binary.BigEndian.Uint32(r[8:])
	r = r[12:]
	ps := newProducerState()
	for range count {
		if len(r) < fixed {
			return nil, 0, errors.New("producer snapshot truncated")
		}
		pid := int64(binary.BigEndian.Uint64(r))
		e := newProducerEntry(int16(binary.BigEndian.Uint16(r[8:])))
		if version >= 2 {
			e.coordEpoch = int32(binary.BigEndian.Uint32(r[10:]))
			e.txnFirst = int64(binary.BigEndian.Uint64(r[14:]))
			if e.txnFirst < -1 {
				return nil, 0, fmt.Errorf("producer snapshot: producer %d transaction at offset %d", pid, e.txnFirst)
			}
		}
		n := int(r[fixed-1])
		r = r[fixed:]
		if n > maxProducerBatches || len(r) < n*32 {
			return nil, 0, errors.New("producer snapshot truncated")
		}
		for range n {
			e.batches = append(e.batches, producerBatch{
				firstSeq:    int32(binary.BigEndian.Uint32(r)),
				lastSeq:     int32(binary.BigEndian.Uint32(r[4:])),
				firstOffset: int64(binary.BigEndian.Uint64(r[8:])),
				lastOffset:  int64(binary.BigEndian.Uint64(r[16:])),
				maxTs:       int64(binary.BigEndian.Uint64(r[24:])),
			})
			r = r[32:]
		}
		ps.put(pid, e)
	}
	if len(r) != 0 {
		return nil, 0, errors.New("producer snapshot has trailing bytes")
	}
	return ps, offset, nil
}

// listSnapshots returns the offsets of the snapshot files in dir, ascending.
func listSnapshots(dir string) ([]int64, error) {
	names, err := filepath.Glob(filepath.Join(dir, "*"+snapshotExt))
	if err != nil {
		return nil, err
	}
	var offs []int64
	for _, n := range names {
		if off, ok := snapshotOffset(filepath.Base(n)); ok {
			offs = append(offs, off)
		}
	}
	sort.Slice(offs, func(i, j int) bool { return offs[i] < offs[j] })
	return offs, nil
}

// snapshotOffset parses a snapshot file name "<offset>.snapshot".
func snapshotOffset(name string) (int64, bool) {
	digits, ok := strings.CutSuffix(name, snapshotExt)
	if !ok {
		return 0, false
	}
	off, err := strconv.ParseInt(digits, 10, 64)
	return off, err == nil
}

func writeSnapshot(dir string, ps *producerState, offset int64) error {
	if err := writeFileAtomic(dir, filepath.Base(segmentPath(dir, offset, snapshotExt)), ps.encodeSnapshot(offset)); err != nil {
		return err
	}
	offs, err := listSnapshots(dir)
	if err != nil {
		return err
	}
	var errs []error
	for i := 0; i < len(offs)-snapshotsKept; i++ {
		errs = append(errs, removeIfExists(segmentPath(dir, offs[i], snapshotExt)))
	}
	return errors.Join(errs...)
}

// deleteSnapshotsAbove removes the snapshots of offs (those dir holds,
// ascending) taken past offset: after a truncation they describe records
// that no longer exist. It returns the others.
func deleteSnapshotsAbove(dir string, offs []int64, offset int64) ([]int64, error) {
	var errs []error
	kept := offs[:0:0]
	for _, off := range offs {
		if off > offset {
			errs = append(errs, removeIfExists(segmentPath(dir, off, snapshotExt)))
		} else {
			kept = append(kept, off)
		}
	}
	return kept, errors.Join(errs...)
}

// removeSnapshotsAbove lists dir's snapshots and removes those past offset.
func removeSnapshotsAbove(dir string, offset int64) error {
	offs, err := listSnapshots(dir)
	if err != nil {
		return err
	}
	_, err = deleteSnapshotsAbove(dir, offs, offset)
	return err
}

// loadLatestSnapshot returns the newest readable snapshot of offs (those dir
// holds, ascending) at or below maxOffset, or an empty state at offset -1
// when there is none.
func loadLatestSnapshot(dir string, offs []int64, maxOffset int64, onBad func(path string, err error)) (*producerState, int64, error) {
	for i := len(offs) - 1; i >= 0; i-- {
		if offs[i] > maxOffset {
			continue
		}
		path := segmentPath(dir, offs[i], snapshotExt)
		b, err := os.ReadFile(path)
		if err != nil {
			return nil, 0, err
		}
		ps, off, err := decodeSnapshot(b)
		if err == nil && off != offs[i] {
			err = fmt.Errorf("snapshot holds offset %d", off)
		}
		if err != nil {
			onBad(path, err)
			continue
		}
		return ps, off, nil
	}
	return newProducerState(), -1, nil
}
