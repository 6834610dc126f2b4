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
}

func (e *producerEntry) clone() *producerEntry {
	return &producerEntry{epoch: e.epoch, batches: append([]producerBatch(nil), e.batches...)}
}

func (e *producerEntry) lastOffset() int64 {
	if n := len(e.batches); n > 0 {
		return e.batches[n-1].lastOffset
	}
	return -1
}

// add records an appended batch; a new epoch forgets the old epoch's batches.
func (e *producerEntry) add(h batch.Header) {
	if h.ProducerEpoch != e.epoch {
		e.epoch = h.ProducerEpoch
		e.batches = e.batches[:0]
	}
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
}

// producerState is the idempotence state of one partition, keyed by producer id.
type producerState struct {
	m map[int64]*producerEntry
}

func newProducerState() *producerState { return &producerState{m: make(map[int64]*producerEntry)} }

// apply records a batch already in the log (replication, recovery).
func (ps *producerState) apply(h batch.Header) {
	if h.ProducerID < 0 {
		return
	}
	e := ps.m[h.ProducerID]
	if e == nil {
		e = &producerEntry{epoch: h.ProducerEpoch}
		ps.m[h.ProducerID] = e
	}
	e.add(h)
}

// evictBefore forgets producers whose last batch lies below the log start.
func (ps *producerState) evictBefore(logStart int64) {
	for pid, e := range ps.m {
		if e.lastOffset() < logStart {
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

// Producer snapshot file, version 1, all integers big-endian:
//
//	magic "KTPS" | version uint16 | crc32c uint32 of the rest | offset int64 | count uint32
//	count x (producerId int64 | epoch int16 | n uint8 |
//	         n x (firstSeq int32 | lastSeq int32 | firstOffset int64 | lastOffset int64 | maxTimestamp int64))
const (
	snapshotMagic   = "KTPS"
	snapshotVersion = 1
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
	b := make([]byte, snapshotHeader, snapshotHeader+12+len(pids)*(11+maxProducerBatches*32))
	copy(b, snapshotMagic)
	binary.BigEndian.PutUint16(b[4:], snapshotVersion)
	b = binary.BigEndian.AppendUint64(b, uint64(offset))
	b = binary.BigEndian.AppendUint32(b, uint32(len(pids)))
	for _, pid := range pids {
		e := ps.m[pid]
		b = binary.BigEndian.AppendUint64(b, uint64(pid))
		b = binary.BigEndian.AppendUint16(b, uint16(e.epoch))
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
	if v := binary.BigEndian.Uint16(b[4:]); v != snapshotVersion {
		return nil, 0, fmt.Errorf("producer snapshot version %d", v)
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
		if len(r) < 11 {
			return nil, 0, errors.New("producer snapshot truncated")
		}
		pid := int64(binary.BigEndian.Uint64(r))
		e := &producerEntry{epoch: int16(binary.BigEndian.Uint16(r[8:]))}
		n := int(r[10])
		r = r[11:]
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
		ps.m[pid] = e
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
		off, err := strconv.ParseInt(strings.TrimSuffix(filepath.Base(n), snapshotExt), 10, 64)
		if err == nil {
			offs = append(offs, off)
		}
	}
	sort.Slice(offs, func(i, j int) bool { return offs[i] < offs[j] })
	return offs, nil
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

// deleteSnapshotsAbove removes snapshots taken past offset: after a
// truncation they describe records that no longer exist.
func deleteSnapshotsAbove(dir string, offset int64) error {
	offs, err := listSnapshots(dir)
	if err != nil {
		return err
	}
	var errs []error
	for _, off := range offs {
		if off > offset {
			errs = append(errs, removeIfExists(segmentPath(dir, off, snapshotExt)))
		}
	}
	return errors.Join(errs...)
}

// loadLatestSnapshot returns the newest readable snapshot at or below maxOffset,
// or an empty state at offset -1 when there is none.
func loadLatestSnapshot(dir string, maxOffset int64, onBad func(path string, err error)) (*producerState, int64, error) {
	offs, err := listSnapshots(dir)
	if err != nil {
		return nil, 0, err
	}
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
