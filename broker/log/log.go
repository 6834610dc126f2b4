package log

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"os"
	"path/filepath"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/ktoolhq/ktool/internal/batch"
)

// ErrClosed is returned by every operation on a closed Log.
var ErrClosed = errors.New("partition log is closed")

// Log is the durable, segmented log of one partition.
//
// Lock order: cleanMu, then appendMu, then flushMu, then syncMu, then mu.
// cleanMu serializes cleaning passes, which hold the others only to plan and
// to swap; appendMu serializes every change (appends, rolls, truncation,
// retention); flushMu serializes fsyncs and checkpoint writes so that they
// run without blocking appends; syncMu serializes the data syncs of
// flush.messages (Sync), apart from Flush so that an acknowledgement never
// waits for checkpoint writes; mu guards what readers look at and is only
// held for in-memory work.
type Log struct {
	dir    string
	logger *slog.Logger

	appendMu  sync.Mutex
	producers *producerState // appendMu
	txnFiles  map[int64]int  // appendMu: entries in each .txnindex file on disk, by segment base

	flushMu      sync.Mutex
	checkpointed map[string]int64 // flushMu: the offset each checkpoint file holds
	checkpointAt time.Time        // flushMu: when checkpoints were last written

	cleanMu sync.Mutex // one cleaning pass at a time

	syncMu sync.Mutex   // one Sync at a time; the next one covers whatever waited
	syncs  atomic.Int64 // syncs Sync did (group commit shares them), for tests

	epochFileMu sync.Mutex // serializes writes of the leader epoch checkpoint

	mu            sync.Mutex
	cfg           Config
	segs          []*segment
	logStart      int64
	leo           int64
	hw            int64
	recoveryPoint int64
	synced        int64  // offsets below are on stable storage (Sync or Flush); >= recoveryPoint
	rewrites      uint64 // bumped when the LEO moves back, so a sync begun before does not vouch for what follows
	dirDirty      bool   // a segment file was created since the directory was last synced
	cleanerPoint  int64  // where the cleaner's next dirty section starts; -1 before the first pass
	lastFlush     time.Time
	epochs        epochCache
	epochsDirty   bool // the epoch checkpoint is behind the cache
	closed        bool
	firstUnstable int64          // first offset of the oldest open transaction, -1 if none
	aborted       []AbortedTxn   // the aborted transaction index, by marker offset
	txnDirty      map[int64]bool // .txnindex files appended to since the last flush

	fds *FileCache // descriptors of inactive segments, shared by the broker's logs
	// snapshotAt is the offset of the producer snapshot on disk that holds
	// the producer state at the LEO while the LEO is there (appendMu): Close
	// writes none then. -1 when there is none.
	snapshotAt int64
}

// AppendResult describes a successful append.
type AppendResult struct {
	BaseOffset, LastOffset int64
	LogAppendTime          int64 // -1 unless the topic uses LogAppendTime
	LogStartOffset         int64
	Duplicate              bool // a retry of an already appended batch; nothing was written
	NumRecords             int
	// Sync is set when flush.messages asks for the records to be on stable
	// storage before they are acknowledged: the caller calls
	// Log.Sync(LastOffset+1) (outside its own locks, so that concurrent
	// appends share the sync) and acknowledges once it returns.
	Sync bool
}

// Dir is the partition directory.
func (l *Log) Dir() string { return l.dir }

// SetConfig applies changed topic settings. An invalid configuration is
// logged and ignored; check it with Config.Validate first.
func (l *Log) SetConfig(cfg Config) {
	if err := cfg.Validate(); err != nil {
		l.logger.Error("ignoring invalid log config", "dir", l.dir, "err", err)
		return
	}
	l.mu.Lock()
	l.cfg = cfg
	l.mu.Unlock()
}

func (l *Log) config() Config {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.cfg
}

// LogStartOffset is the first offset a consumer may read.
func (l *Log) LogStartOffset() int64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.logStart
}

// LogEndOffset is the offset the next record will get.
func (l *Log) LogEndOffset() int64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.leo
}

// HighWatermark is the value last given to SetHighWatermark (or loaded from
// the checkpoint), clamped to the log's current range.
func (l *Log) HighWatermark() int64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.hw
}

// SetHighWatermark stores hw, clamped to [LogStartOffset, LogEndOffset]. It
// is written to disk by the next Flush, MaybeFlush or Close.
func (l *Log) SetHighWatermark(hw int64) {
	l.mu.Lock()
	l.hw = min(max(hw, l.logStart), l.leo)
	l.mu.Unlock()
}

// Size is the number of bytes of all segments.
func (l *Log) Size() int64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	var n int64
	for _, s := range l.segs {
		n += s.size
	}
	return n
}

// LatestEpoch is the newest leader epoch in the epoch cache, -1 if none.
func (l *Log) LatestEpoch() int32 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.epochs.latest()
}

// LatestEpochStart is the newest leader epoch in the epoch cache and the
// offset it starts at; (-1, -1) if none. A leader's epoch that has written
// nothing yet is known only here: its batches do not carry it.
func (l *Log) LatestEpochStart() (int32, int64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := len(l.epochs.entries)
	if n == 0 {
		return -1, -1
	}
	e := l.epochs.entries[n-1]
	return e.epoch, e.start
}

// EndOffsetForEpoch answers OffsetForLeaderEpoch: the largest known epoch <=
// epoch and the offset where it ends; (-1, -1) when there is none.
func (l *Log) EndOffsetForEpoch(epoch int32) (int32, int64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.epochs.endOffsetFor(epoch, l.leo)
}

// AssignEpochStart records that epoch starts at offset; a new leader calls it
// with its LEO. The entry goes into the cache, which answers
// OffsetForLeaderEpoch and truncation, and the checkpoint file is left for
// the next flush or Close to write: a failover makes thousands of partitions
// leaders at once, and an fsync each cost seconds (issue 18).
//
// Why a crash cannot lose an acknowledged record or make a follower truncate
// one:
//   - While no record of the epoch is in the log, the entry changes no answer:
//     the latest epoch ends at the LEO, which is where this one starts (a
//     leader's LEO moves only by its own appends), so a follower asking for
//     an older epoch is told the same offset with or without the entry. A
//     crash that loses it loses nothing.
//   - Once records of the epoch are appended, the entry describes them. A
//     restart that is not clean recovers from the recovery point and assigns
//     the epoch of every batch it rescans, so the entry is rebuilt from the
//     records themselves.
//   - The recovery point moves only in flushLocked, which writes a dirty
//     checkpoint (fsynced) before the recovery-point file, so records below
//     the recovery point never depend on an entry that is not on disk; a
//     clean shutdown writes it in Close before the clean-shutdown marker.
//
// TestLazyEpochEntryCrash checks each case.
func (l *Log) AssignEpochStart(epoch int32, offset int64) {
	l.appendMu.Lock()
	defer l.appendMu.Unlock()
	l.mu.Lock()
	defer l.mu.Unlock()
	if !l.closed && l.epochs.assign(epoch, offset) {
		l.epochsDirty = true
	}
}

// assignEpoch updates the epoch cache and its checkpoint; appendMu held.
func (l *Log) assignEpoch(epoch int32, offset int64) error {
	l.mu.Lock()
	changed := l.epochs.assign(epoch, offset)
	l.mu.Unlock()
	if !changed {
		return nil
	}
	return l.writeEpochCheckpoint()
}

// writeEpochCheckpoint writes the current epoch cache. A failed write leaves
// the cache marked so that the next flush retries it.
func (l *Log) writeEpochCheckpoint() error {
	l.epochFileMu.Lock()
	defer l.epochFileMu.Unlock()
	l.mu.Lock()
	entries := l.epochs.clone()
	l.epochsDirty = false
	l.mu.Unlock()
	err := rewriteCheckpoint(l.dir, leaderEpochFile, encodeEpochCheckpoint(entries))
	if err != nil {
		l.mu.Lock()
		l.epochsDirty = true
		l.mu.Unlock()
	}
	return err
}

func (l *Log) active() *segment { return l.segs[len(l.segs)-1] }

func (l *Log) isClosed() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.closed
}

func storageError(op string, err error) error {
	return fmt.Errorf("%s: %w: %w", op, kerr.KafkaStorageError, err)
}

// AppendAsLeader validates the one batch of a produce request (batch.CheckProduce:
// header, CRC, every record, timestamps, keys on a compacted topic), assigns offsets,
// the leader epoch and (with LogAppendTime) timestamps in place, and writes
// all batches with one write. Errors wrap kerr values (use errors.As or
// errors.Is) and mean nothing was written. When flush.messages is reached the
// result says Sync: the append itself never waits for the disk.
//
// Idempotent batches (producer id >= 0) follow Kafka: a repeat of one of the
// producer's last five batches returns Duplicate with the original offsets; an
// older epoch is INVALID_PRODUCER_EPOCH; a sequence gap, or a new epoch not
// starting at 0, is OUT_OF_ORDER_SEQUENCE_NUMBER. A producer the partition
// does not know may start at any sequence (KIP-360), except on a partition
// that never held a record, where it must start at 0 (KAFKA-15591).
func (l *Log) AppendAsLeader(records []byte, leaderEpoch int32) (AppendResult, error) {
	return l.AppendAsLeaderTxn(records, leaderEpoch, nil)
}

// TxnVerification is the transaction coordinator's answer for a
// transactional batch whose producer has no open transaction here (KIP-890):
// Token is what TxnVerificationToken returned before the coordinator was
// asked, OK whether it confirmed that the partition is in the producer's
// ongoing transaction.
type TxnVerification struct {
	Token int64
	OK    bool
}

// TxnVerificationToken says whether a transactional batch of producer pid at
// epoch would start a transaction here, so needs the coordinator's
// confirmation first, and the token to hand back in TxnVerification. A
// marker for the producer landing in between makes the token stale.
func (l *Log) TxnVerificationToken(pid int64, epoch int16) (int64, bool) {
	l.appendMu.Lock()
	defer l.appendMu.Unlock()
	e := l.producers.m[pid]
	switch {
	case e == nil:
		return -1, true
	case e.txnFirst >= 0 || epoch < e.epoch:
		return 0, false
	}
	return e.lastMarker, true
}

// ActiveProducer is one producer's entry in a partition's producer state, as
// DescribeProducers (KIP-664) shows it.
type ActiveProducer struct {
	ProducerID    int64
	ProducerEpoch int16
	// LastSequence and LastTimestamp are those of the producer's newest data
	// batch of its current epoch, -1 before one.
	LastSequence  int32
	LastTimestamp int64
	// CoordinatorEpoch is that of the producer's last marker, -1 before one.
	CoordinatorEpoch int32
	// TxnStartOffset is the first offset of the open transaction, -1 when none is open.
	TxnStartOffset int64
}

// ActiveProducers lists the partition's producer state, by producer id.
func (l *Log) ActiveProducers() []ActiveProducer {
	l.appendMu.Lock()
	defer l.appendMu.Unlock()
	out := make([]ActiveProducer, 0, len(l.producers.m))
	for pid, e := range l.producers.m {
		ap := ActiveProducer{ProducerID: pid, ProducerEpoch: e.epoch, LastSequence: -1, LastTimestamp: -1,
			CoordinatorEpoch: e.coordEpoch, TxnStartOffset: e.txnFirst}
		if n := len(e.batches); n > 0 {
			ap.LastSequence, ap.LastTimestamp = e.batches[n-1].lastSeq, e.batches[n-1].maxTs
		}
		out = append(out, ap)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ProducerID < out[j].ProducerID })
	return out
}

// AppendAsLeaderTxn is AppendAsLeader with the transaction rules: a producer
// with an open transaction appends only transactional batches
// (INVALID_TXN_STATE otherwise); with verified set, a transactional batch
// that would start a transaction is refused with INVALID_TXN_STATE unless
// verified confirms it and no marker for the producer landed since its token.
// With verified nil such a batch starts a transaction unverified.
func (l *Log) AppendAsLeaderTxn(records []byte, leaderEpoch int32, verified *TxnVerification) (AppendResult, error) {
	return l.appendAsLeader(records, leaderEpoch, verified, false)
}

// AppendAsCoordinator appends a batch a coordinator built (the group
// coordinator's transactional offset commits): like AppendAsLeader, but
// sequence numbers are not checked, as Kafka does for its coordinators'
// appends; producer epochs and the transaction rules are.
func (l *Log) AppendAsCoordinator(records []byte, leaderEpoch int32) (AppendResult, error) {
	return l.appendAsLeader(records, leaderEpoch, nil, true)
}

func (l *Log) appendAsLeader(records []byte, leaderEpoch int32, verified *TxnVerification, coordinator bool) (AppendResult, error) {
	var verify func(e *producerEntry) bool
	if verified != nil {
		verify = func(e *producerEntry) bool {
			token := int64(-1)
			if e != nil {
				token = e.lastMarker
			}
			return verified.OK && token == verified.Token
		}
	}
	cfg := l.config()
	nowTime := cfg.now()
	now := nowTime.UnixMilli()
	h, err := batch.CheckProduce(context.Background(), records, batch.Rules{
		Codecs:             cfg.Codecs,
		MaxMessageBytes:    cfg.MaxMessageBytes,
		DecompressRatio:    cfg.DecompressRatio,
		CreateTime:         cfg.TimestampType == CreateTime,
		TimestampDiffMaxMs: cfg.MessageTimestampDifferenceMaxMs,
		Now:                now,
		RequireKeys:        cfg.Compact(),
	})
	if err != nil {
		return AppendResult{}, err
	}
	if int64(len(records)) > cfg.SegmentBytes {
		return AppendResult{}, fmt.Errorf("%d bytes of batches exceed segment.bytes %d: %w", len(records), cfg.SegmentBytes, kerr.RecordListTooLarge)
	}
	logAppendTime := cfg.TimestampType == LogAppendTime

	l.appendMu.Lock()
	defer l.appendMu.Unlock()
	if l.isClosed() {
		return AppendResult{}, ErrClosed
	}
	leo, logStart := l.leo, l.logStart

	h.BaseOffset = leo
	h.PartitionLeaderEpoch = leaderEpoch
	if logAppendTime {
		h.FirstTimestamp, h.MaxTimestamp = now, now
		h.Attributes |= batch.AttrLogAppendTime
	}
	// The producer's entry is checked here and changed (in place, as
	// replication and recovery change it) only once the batch is in the
	// log: a refused or failed append leaves it as it was, and an
	// idempotent append allocates nothing for it.
	var e *producerEntry
	if h.ProducerID >= 0 {
		e = l.producers.m[h.ProducerID]
		var dup *producerBatch
		if coordinator {
			if e != nil && h.ProducerEpoch < e.epoch {
				err = fmt.Errorf("producer %d epoch %d is older than %d: %w", h.ProducerID, h.ProducerEpoch, e.epoch, kerr.InvalidProducerEpoch)
			}
		} else {
			dup, err = checkProducerBatch(e, h, leo == 0)
		}
		if err != nil {
			return AppendResult{}, err
		}
		if dup == nil {
			err = checkTxnBatch(e, h, verify)
		}
		if err != nil {
			return AppendResult{}, err
		}
		if dup != nil {
			return AppendResult{
				BaseOffset:     dup.firstOffset,
				LastOffset:     dup.lastOffset,
				LogAppendTime:  -1,
				LogStartOffset: logStart,
				Duplicate:      true,
				NumRecords:     int(dup.lastOffset - dup.firstOffset + 1),
				// The original may still wait for its sync: the retry's
				// answer must not come first.
				Sync: cfg.FlushIntervalMessages != math.MaxInt64 && !l.isSynced(dup.lastOffset+1),
			}, nil
		}
	}

	batch.SetBaseOffset(records, h.BaseOffset)
	batch.SetLeaderEpoch(records, leaderEpoch)
	if logAppendTime {
		batch.SetLogAppendTime(records, now)
	}
	hdrs := [1]batch.Header{h}
	if err := l.appendLocked(records, hdrs[:], cfg, nowTime); err != nil {
		return AppendResult{}, err
	}
	l.producers.apply(h, nil)
	l.publishTxnState()
	res := AppendResult{
		BaseOffset:     h.BaseOffset,
		LastOffset:     h.LastOffset(),
		LogAppendTime:  -1,
		LogStartOffset: logStart,
		NumRecords:     int(h.LastOffset() - h.BaseOffset + 1),
	}
	if logAppendTime {
		res.LogAppendTime = now
	}
	res.Sync = l.syncDue(cfg)
	return res, nil
}

// AppendAsFollower appends batches fetched from the leader. Their offsets are
// kept; batches below the LEO are skipped and the rest must follow it, with
// gaps where the leader's cleaner removed whole batches.
func (l *Log) AppendAsFollower(records []byte) (AppendResult, error) {
	hdrs, err := batch.ValidateLog(records)
	if err != nil {
		return AppendResult{}, err
	}
	cfg := l.config()

	l.appendMu.Lock()
	defer l.appendMu.Unlock()
	if l.isClosed() {
		return AppendResult{}, ErrClosed
	}
	leo, logStart := l.leo, l.logStart
	skip, skipBytes := 0, int64(0)
	for skip < len(hdrs) && hdrs[skip].LastOffset() < leo {
		skipBytes += hdrs[skip].Size()
		skip++
	}
	hdrs, records = hdrs[skip:], records[skipBytes:]
	if len(hdrs) == 0 {
		return AppendResult{BaseOffset: leo, LastOffset: leo - 1, LogAppendTime: -1, LogStartOffset: logStart}, nil
	}
	want := leo
	for _, h := range hdrs {
		if h.BaseOffset < want {
			return AppendResult{}, fmt.Errorf("batch at offset %d overlaps the log ending at %d: %w", h.BaseOffset, want, kerr.OffsetOutOfRange)
		}
		want = h.LastOffset() + 1
	}
	if err := l.appendLocked(records, hdrs, cfg, cfg.now()); err != nil {
		return AppendResult{}, err
	}
	if err := l.applyAppended(records, hdrs); err != nil {
		return AppendResult{}, err
	}
	res := AppendResult{
		BaseOffset:     hdrs[0].BaseOffset,
		LastOffset:     hdrs[len(hdrs)-1].LastOffset(),
		LogAppendTime:  -1,
		LogStartOffset: logStart,
		NumRecords:     int(want - hdrs[0].BaseOffset),
		Sync:           l.syncDue(cfg),
	}
	return res, nil
}

// applyAppended updates the producer state and the aborted transaction
// index with batches appended as a follower; appendMu held.
func (l *Log) applyAppended(records []byte, hdrs []batch.Header) error {
	var errs []error
	pos := int64(0)
	for _, h := range hdrs {
		var m *batch.Marker
		if h.Control() && h.ProducerID >= 0 {
			mk, err := batch.MarkerOf(records[pos : pos+h.Size()])
			if err != nil {
				l.logger.Warn("control batch without a readable marker", "dir", l.dir, "offset", h.BaseOffset, "err", err)
			} else {
				m = &mk
			}
		}
		pos += h.Size()
		if done, closed := l.producers.apply(h, m); closed && done.aborted {
			errs = append(errs, l.recordAborted(AbortedTxn{ProducerID: done.producerID, FirstOffset: done.first, LastOffset: done.last, LastStableOffset: l.producers.stableAfter(done)}))
		}
	}
	l.publishTxnState()
	return errors.Join(errs...)
}

// AppendMarker appends, as leader, the COMMIT or ABORT marker the
// transaction coordinator sends for producer pid at epoch: it closes the
// producer's open transaction (an ABORT enters the aborted transaction
// index). A marker of an older producer epoch is INVALID_PRODUCER_EPOCH and
// one of an older coordinator epoch than the producer's last marker is
// TRANSACTION_COORDINATOR_FENCED; nothing is written then. A marker for a
// producer without an open transaction is appended too, as Kafka does
// (a coordinator retrying after a failover).
func (l *Log) AppendMarker(pid int64, epoch int16, m batch.Marker, leaderEpoch int32) (AppendResult, error) {
	if pid < 0 || epoch < 0 || (m.Type != batch.ControlAbort && m.Type != batch.ControlCommit) {
		return AppendResult{}, fmt.Errorf("marker %s for producer %d epoch %d: %w", m.Type, pid, epoch, kerr.InvalidRequest)
	}
	cfg := l.config()
	nowTime := cfg.now()
	records := batch.EncodeMarker(pid, epoch, m, nowTime.UnixMilli())
	h, err := batch.ParseHeader(records)
	if err != nil {
		return AppendResult{}, err
	}

	l.appendMu.Lock()
	defer l.appendMu.Unlock()
	if l.isClosed() {
		return AppendResult{}, ErrClosed
	}
	e := l.producers.m[pid]
	if err := checkMarker(e, pid, epoch, m.CoordinatorEpoch); err != nil {
		return AppendResult{}, err
	}
	l.mu.Lock()
	h.BaseOffset, h.PartitionLeaderEpoch = l.leo, leaderEpoch
	logStart := l.logStart
	l.mu.Unlock()
	batch.SetBaseOffset(records, h.BaseOffset)
	batch.SetLeaderEpoch(records, leaderEpoch)
	if err := l.appendLocked(records, []batch.Header{h}, cfg, nowTime); err != nil {
		return AppendResult{}, err
	}
	done, _ := l.producers.apply(h, &m)
	var ierr error
	if done.aborted && done.first >= 0 {
		ierr = l.recordAborted(AbortedTxn{ProducerID: pid, FirstOffset: done.first, LastOffset: done.last, LastStableOffset: l.producers.stableAfter(done)})
	}
	l.publishTxnState()
	res := AppendResult{BaseOffset: h.BaseOffset, LastOffset: h.BaseOffset, LogAppendTime: -1, LogStartOffset: logStart, NumRecords: 1}
	if ierr != nil {
		return res, ierr
	}
	// Markers are rare: synced here, before the answer to WriteTxnMarkers.
	if l.syncDue(cfg) {
		return res, l.Sync(res.LastOffset + 1)
	}
	return res, nil
}

// shouldRoll applies Kafka's reasons to start a new segment: the batches do
// not fit, segment.ms has passed since the first batch's timestamp, or the
// offsets would not fit the index's 32-bit relative offsets.
func shouldRoll(s *segment, cfg Config, size int64, maxTs int64, lastOffset int64, now time.Time) bool {
	if s.empty() {
		return false
	}
	if s.size+size > cfg.SegmentBytes {
		return true
	}
	waited := now.Sub(s.created).Milliseconds()
	if s.rollTs >= 0 {
		waited = maxTs - s.rollTs
	}
	if waited > cfg.SegmentMs {
		return true
	}
	return lastOffset-s.base > math.MaxInt32
}

// appendLocked writes batches with assigned offsets at the end of the log.
// appendMu is held. On error nothing stays written.
func (l *Log) appendLocked(data []byte, hdrs []batch.Header, cfg Config, now time.Time) error {
	first, last := hdrs[0], hdrs[len(hdrs)-1]
	if last.LastOffset()-first.BaseOffset > math.MaxInt32 {
		return fmt.Errorf("batches span %d offsets: %w", last.LastOffset()-first.BaseOffset, kerr.InvalidRecord)
	}
	maxTs := int64(-1)
	for _, h := range hdrs {
		maxTs = max(maxTs, h.MaxTimestamp)
	}
	s := l.active()
	if shouldRoll(s, cfg, int64(len(data)), maxTs, last.LastOffset(), now) {
		var err error
		if s, err = l.roll(now); err != nil {
			return err
		}
	}

	pos := s.size
	segMaxTs, segOffMaxTs := s.maxTs, s.offMaxTs
	lastTs := s.lastTimeEntryTs()
	bytesSinceIdx := s.bytesSinceIdx
	var newIdx []offsetEntry
	var newTidx []timeEntry
	bpos := pos
	for _, h := range hdrs {
		if h.MaxTimestamp > segMaxTs {
			segMaxTs, segOffMaxTs = h.MaxTimestamp, h.LastOffset()
		}
		if bytesSinceIdx > int64(cfg.IndexIntervalBytes) {
			newIdx = append(newIdx, offsetEntry{rel: int32(h.LastOffset() - s.base), pos: int32(bpos)})
			if segMaxTs > lastTs {
				newTidx = append(newTidx, timeEntry{ts: segMaxTs, rel: int32(segOffMaxTs - s.base)})
				lastTs = segMaxTs
			}
			bytesSinceIdx = 0
		}
		bytesSinceIdx += h.Size()
		bpos += h.Size()
	}

	f := s.files.activeFile()
	if _, err := f.WriteAt(data, pos); err != nil {
		return errors.Join(storageError("write "+s.files.path, err), f.Truncate(pos))
	}
	s.bytesSinceIdx = bytesSinceIdx

	l.mu.Lock()
	s.idx = append(s.idx, newIdx...)
	s.tidx = append(s.tidx, newTidx...)
	if s.rollTs < 0 && s.size == 0 {
		s.rollTs = maxTs
	}
	s.size = bpos
	s.next = last.LastOffset() + 1
	s.maxTs, s.offMaxTs = segMaxTs, segOffMaxTs
	l.leo = s.next
	l.mu.Unlock()

	// The records are in the log now, so a failed epoch checkpoint does not
	// fail the append: the cache is right and the next flush rewrites it.
	for _, h := range hdrs {
		if err := l.assignEpoch(h.PartitionLeaderEpoch, h.BaseOffset); err != nil {
			l.logger.Error("writing leader epoch checkpoint", "dir", l.dir, "err", err)
		}
	}
	return nil
}

// roll seals the active segment and starts a new one at the LEO, taking a
// producer snapshot there as Kafka does. appendMu is held.
func (l *Log) roll(now time.Time) (*segment, error) {
	old := l.active()
	l.mu.Lock()
	err := old.sealTimeIndex()
	leo := l.leo
	l.mu.Unlock()
	if err == nil {
		err = old.writeIndexes(l.dir, old.idx, old.tidx)
	}
	if err != nil {
		return nil, storageError("seal time index", err)
	}
	ns, err := createSegment(l.dir, leo, now, l.fds, l.logger)
	if err != nil {
		return nil, storageError("create segment", err)
	}
	if err := writeSnapshot(l.dir, l.producers, leo); err != nil {
		ns.files.drop()
		return nil, storageError("write producer snapshot", err)
	}
	l.mu.Lock()
	l.segs = append(l.segs, ns)
	l.dirDirty = true
	l.mu.Unlock()
	old.files.unpin()
	l.logger.Debug("rolled segment", "dir", l.dir, "base", leo)
	return ns, nil
}

// segmentFor returns the index of the segment holding offset; mu is held.
func (l *Log) segmentFor(offset int64) int {
	i := sort.Search(len(l.segs), func(i int) bool { return l.segs[i].base > offset })
	return max(i-1, 0)
}

// Flush writes everything appended so far to stable storage and advances
// the recovery point, then checkpoints the recovery point, the log start
// offset and the high watermark. Appends continue while it runs.
func (l *Log) Flush() error {
	l.flushMu.Lock()
	defer l.flushMu.Unlock()
	return l.flushLocked()
}

func (l *Log) flushLocked() error {
	l.mu.Lock()
	if l.closed {
		l.mu.Unlock()
		return ErrClosed
	}
	target, rewrites := l.leo, l.rewrites
	type syncing struct {
		s    *segment
		f    *os.File
		idx  []offsetEntry
		tidx []timeEntry
	}
	var todo []syncing
	var errs []error
	for _, s := range l.segs[l.segmentFor(l.recoveryPoint):] {
		f, err := s.files.acquire()
		if err != nil {
			errs = append(errs, err)
			continue
		}
		todo = append(todo, syncing{s, f, s.idx, s.tidx})
	}
	l.mu.Unlock()

	for _, t := range todo {
		errs = append(errs, t.s.sync(l.dir, t.f, t.idx, t.tidx))
		t.s.files.release()
	}
	errs = append(errs, l.syncTxnIndexData(), syncDir(l.dir))
	if err := errors.Join(errs...); err != nil {
		return storageError("flush", err)
	}
	l.markSynced(target, rewrites, true)
	l.mu.Lock()
	l.lastFlush = l.cfg.now()
	if target > l.recoveryPoint {
		l.recoveryPoint = target
	}
	epochsDirty := l.epochsDirty
	l.mu.Unlock()
	if epochsDirty {
		if err := l.writeEpochCheckpoint(); err != nil {
			return storageError("write leader epoch checkpoint", err)
		}
	}
	return l.writeCheckpointsLocked()
}

// checkpointValues are the offsets the checkpoint files should hold; mu is held.
func (l *Log) checkpointValues() map[string]int64 {
	vals := map[string]int64{
		recoveryPointFile: l.recoveryPoint,
		logStartFile:      l.logStart,
		highWatermarkFile: l.hw,
	}
	if l.cleanerPoint >= 0 {
		vals[cleanerCheckpointFile] = l.cleanerPoint
	}
	return vals
}

// writeCheckpointsLocked rewrites the offset checkpoints whose value
// changed; flushMu is held.
func (l *Log) writeCheckpointsLocked() error {
	l.mu.Lock()
	vals := l.checkpointValues()
	l.mu.Unlock()
	for name, off := range vals {
		if old, ok := l.checkpointed[name]; ok && old == off {
			continue
		}
		if err := rewriteCheckpoint(l.dir, name, encodeOffsetCheckpoint(l.dir, off)); err != nil {
			return storageError("write checkpoints", err)
		}
		l.checkpointed[name] = off
	}
	l.checkpointAt = l.config().now()
	return nil
}

// checkpointsStale reports whether a checkpoint file lags; mu and flushMu
// are held. It allocates nothing: the broker asks every partition each second.
func (l *Log) checkpointsStale() bool {
	return l.checkpointStale(recoveryPointFile, l.recoveryPoint) ||
		l.checkpointStale(logStartFile, l.logStart) ||
		l.checkpointStale(highWatermarkFile, l.hw) ||
		(l.cleanerPoint >= 0 && l.checkpointStale(cleanerCheckpointFile, l.cleanerPoint))
}

func (l *Log) checkpointStale(name string, off int64) bool {
	old, ok := l.checkpointed[name]
	return !ok || old != off
}

// MaybeFlush flushes when flush.ms has passed since the last flush, when a
// rolled segment is not yet on stable storage (Kafka flushes a segment when
// it rolls) or when Sync made records durable beyond the recovery point (so
// that recovery after a crash rescans little), and otherwise rewrites
// checkpoints whose value changed (the high watermark, mostly), at most
// every CheckpointIntervalMs. The broker calls it periodically.
func (l *Log) MaybeFlush() error {
	l.flushMu.Lock()
	defer l.flushMu.Unlock()
	l.mu.Lock()
	if l.closed {
		l.mu.Unlock()
		return ErrClosed
	}
	cfg, lastFlush := l.cfg, l.lastFlush
	dirty := l.leo > l.recoveryPoint
	rolled := l.recoveryPoint < l.active().base
	synced := l.synced > l.recoveryPoint
	stale := l.checkpointsStale()
	l.mu.Unlock()
	due := cfg.FlushIntervalMs != math.MaxInt64 && cfg.now().Sub(lastFlush).Milliseconds() >= cfg.FlushIntervalMs
	if dirty && (due || rolled || synced) {
		return l.flushLocked()
	}
	if stale && cfg.now().Sub(l.checkpointAt).Milliseconds() >= cfg.CheckpointIntervalMs {
		return l.writeCheckpointsLocked()
	}
	return nil
}

// Close flushes, writes the checkpoints and a producer snapshot, marks the
// shutdown clean and closes the files. Regions still held stay readable
// until released.
func (l *Log) Close() error {
	l.appendMu.Lock()
	defer l.appendMu.Unlock()
	l.flushMu.Lock()
	defer l.flushMu.Unlock()
	if l.isClosed() {
		return ErrClosed
	}
	l.mu.Lock()
	err := l.active().sealTimeIndex()
	leo := l.leo
	// A log nothing was written to since its last flush (most of 10,000
	// partitions at shutdown) needs no fsync of its segments.
	synced := err == nil && l.leo == l.recoveryPoint && len(l.txnDirty) == 0 && l.indexesSynced()
	epochsDirty, snapshotAt := l.epochsDirty, l.snapshotAt
	l.mu.Unlock()
	switch {
	case err != nil:
	case !synced:
		err = l.flushLocked()
	case epochsDirty:
		err = l.writeEpochCheckpoint()
	}
	if err == nil && synced {
		err = l.writeCheckpointsLocked()
	}
	if err == nil && snapshotAt != leo {
		err = writeSnapshot(l.dir, l.producers, leo)
	}
	if err == nil {
		err = writeMarker(filepath.Join(l.dir, cleanShutdownFile))
	}
	l.closeFiles()
	if err != nil {
		return storageError("close", err)
	}
	return nil
}

// indexesSynced reports whether the index files of the segments from the
// recovery point hold their entries, fsynced; mu is held.
func (l *Log) indexesSynced() bool {
	for _, s := range l.segs[l.segmentFor(l.recoveryPoint):] {
		if !s.indexesSynced(s.idx, s.tidx) {
			return false
		}
	}
	return true
}

// writeMarker creates the clean-shutdown marker without an fsync: it is
// created once everything it vouches for is on stable storage, and a marker
// a crash loses only costs a recovery.
func writeMarker(path string) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return err
	}
	return f.Close()
}

// closeFiles drops the log's references to its segments; mu is not held.
func (l *Log) closeFiles() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.closed = true
	for _, s := range l.segs {
		s.files.drop()
	}
}

// Delete closes the log without flushing and removes its directory.
func (l *Log) Delete() error {
	l.appendMu.Lock()
	defer l.appendMu.Unlock()
	l.flushMu.Lock()
	defer l.flushMu.Unlock()
	if !l.isClosed() {
		l.closeFiles()
	}
	if err := os.RemoveAll(l.dir); err != nil {
		return storageError("delete log", err)
	}
	return nil
}
