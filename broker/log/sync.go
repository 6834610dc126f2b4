package log

import (
	"errors"
	"os"
)

// Sync makes the records below end durable, for flush.messages: it
// fdatasyncs the log file of every segment written since the last sync (and
// the directory after a roll created a file). Concurrent callers share one
// sync (group commit): a caller that waited while another synced finds its
// records covered and returns at once, and one sync covers everything
// appended before it started, whichever producer or request appended it.
//
// Sync neither moves the recovery point nor writes checkpoints: after a
// crash, recovery rescans from the recovery point, where the synced batches
// are found intact, and the periodic MaybeFlush moves the recovery point up
// to what Sync made durable. So an acknowledgement waits for one
// fdatasync, not for the index and checkpoint writes of a full Flush.
func (l *Log) Sync(end int64) error {
	l.syncMu.Lock()
	defer l.syncMu.Unlock()
	l.mu.Lock()
	if l.closed {
		l.mu.Unlock()
		return ErrClosed
	}
	if l.synced >= end {
		l.mu.Unlock()
		return nil
	}
	target, rewrites, dirDirty := l.leo, l.rewrites, l.dirDirty
	var todo []*segment
	var files []*os.File
	var errs []error
	for _, s := range l.segs[l.segmentFor(l.synced):] {
		f, err := s.files.acquire()
		if err != nil {
			errs = append(errs, err)
			continue
		}
		todo = append(todo, s)
		files = append(files, f)
	}
	l.mu.Unlock()

	for i, s := range todo {
		errs = append(errs, fdatasync(files[i]))
		s.files.release()
	}
	if dirDirty {
		errs = append(errs, syncDir(l.dir))
	}
	if err := errors.Join(errs...); err != nil {
		return storageError("sync", err)
	}
	l.syncs.Add(1)
	l.markSynced(target, rewrites, dirDirty)
	return nil
}

// markSynced records that offsets below target are on stable storage, unless
// the log was truncated since target was read (rewrites moved): then the
// offsets may name other records now.
func (l *Log) markSynced(target int64, rewrites uint64, dirSynced bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.rewrites != rewrites {
		return
	}
	l.synced = max(l.synced, target)
	if dirSynced {
		l.dirDirty = false
	}
}

// isSynced reports whether the offsets below end are on stable storage.
func (l *Log) isSynced(end int64) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.synced >= end
}

// syncDue reports whether flush.messages asks for a sync: the offsets
// appended since the last one reach it.
func (l *Log) syncDue(cfg Config) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.leo-l.synced >= cfg.FlushIntervalMessages
}
