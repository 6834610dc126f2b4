package log

import (
	"container/list"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"sync"
	"sync/atomic"
)

// FileCache bounds the descriptors a broker keeps open for the .log files of
// inactive segments. The active segment of each partition keeps its file
// open (appends need it); an inactive segment's file is opened when a read,
// flush, cleaning pass or truncation takes a reference, and once the last
// reference is released it waits in a least-recently-used list, closed when
// more than the cache's size are waiting. A file with references is never
// closed, so a region handed to sendfile keeps its descriptor however many
// others are read meanwhile: the bound is on idle descriptors.
//
// One cache is shared by all the logs of a broker (Config.FileCache); a log
// opened without one gets its own.
type FileCache struct {
	max int

	mu     sync.Mutex
	idle   list.List // *segFiles, most recently released first
	open   int       // descriptors open through the cache, idle or in use
	opened atomic.Int64
}

// NewFileCache returns a cache keeping at most idle idle descriptors open
// (at least 1).
func NewFileCache(idle int) *FileCache {
	return &FileCache{max: max(idle, 1)}
}

// FileCacheStats are a cache's counters.
type FileCacheStats struct {
	Idle   int   // descriptors open with no reference
	Open   int   // descriptors open: idle, in use, or of an active segment
	Opened int64 // opens since the cache was made: misses
}

// Stats reports the cache's counters.
func (c *FileCache) Stats() FileCacheStats {
	c.mu.Lock()
	defer c.mu.Unlock()
	return FileCacheStats{Idle: c.idle.Len(), Open: c.open, Opened: c.opened.Load()}
}

// segFiles is the .log file of one segment. It is reference counted: the
// segment holds one reference (dropped by drop) and every Region, flush,
// cleaning pass and lookup in progress one more (acquire, release), so a
// segment deleted or rewritten under a reader stays readable until the last
// reference goes. The descriptor is open while the segment is active
// (pinned) or has users, and otherwise idle in the cache, which may close
// it; the next acquire opens the file again by its path. So a reference is
// only taken while the segment is in its log (with one of the log's locks
// held), when the path still names its file.
type segFiles struct {
	path   string
	cache  *FileCache
	logger *slog.Logger

	openMu sync.Mutex // one open at a time

	// Guarded by cache.mu.
	f      *os.File
	nusers int32 // references other than the segment's
	pinned bool  // the segment is active: never idle
	gone   bool  // the segment's reference was dropped
	elem   *list.Element
}

// newSegFiles wraps the open file of a new active segment.
func newSegFiles(path string, f *os.File, cache *FileCache, logger *slog.Logger) *segFiles {
	sf := &segFiles{path: path, cache: cache, logger: logger, f: f, pinned: true}
	cache.mu.Lock()
	cache.open++
	cache.mu.Unlock()
	return sf
}

// acquire takes a reference and returns the open file, which stays open
// until release.
func (f *segFiles) acquire() (*os.File, error) {
	c := f.cache
	c.mu.Lock()
	if f.gone && f.f == nil {
		c.mu.Unlock()
		return nil, fmt.Errorf("%s: %w", f.path, errNoFile)
	}
	f.nusers++
	if f.f != nil {
		c.unidle(f)
		file := f.f
		c.mu.Unlock()
		return file, nil
	}
	c.mu.Unlock()

	f.openMu.Lock()
	defer f.openMu.Unlock()
	c.mu.Lock()
	file := f.f
	c.mu.Unlock()
	if file != nil {
		return file, nil
	}
	file, err := os.OpenFile(f.path, os.O_RDWR, 0)
	if err != nil {
		f.release()
		return nil, err
	}
	c.opened.Add(1)
	c.mu.Lock()
	f.f = file
	c.open++
	c.mu.Unlock()
	return file, nil
}

// release gives back a reference taken by acquire.
func (f *segFiles) release() {
	f.cache.mu.Lock()
	f.nusers--
	f.settle()
}

// drop gives back the segment's own reference: it left its log.
func (f *segFiles) drop() {
	f.cache.mu.Lock()
	f.gone, f.pinned = true, false
	f.settle()
}

// settle closes, idles or keeps the file after a change; it unlocks
// cache.mu, held on entry.
func (f *segFiles) settle() {
	c := f.cache
	var closing []*os.File
	switch {
	case f.f == nil || f.nusers > 0:
	case f.gone:
		c.unidle(f)
		closing = append(closing, f.f)
		f.f = nil
		c.open--
	case !f.pinned && f.elem == nil:
		f.elem = c.idle.PushFront(f)
	}
	closing = c.evict(closing)
	c.mu.Unlock()
	closeAll(closing, f.logger)
}

// unidle takes f out of the idle list; c.mu is held.
func (c *FileCache) unidle(f *segFiles) {
	if f.elem != nil {
		c.idle.Remove(f.elem)
		f.elem = nil
	}
}

// evict takes the least recently used idle files beyond the bound out of
// the cache; c.mu is held. The caller closes them after unlocking.
func (c *FileCache) evict(closing []*os.File) []*os.File {
	for c.idle.Len() > c.max {
		v := c.idle.Remove(c.idle.Back()).(*segFiles)
		v.elem = nil
		closing = append(closing, v.f)
		v.f = nil
		c.open--
	}
	return closing
}

func closeAll(files []*os.File, logger *slog.Logger) {
	for _, file := range files {
		if err := file.Close(); err != nil {
			logger.Warn("closing segment file", "file", file.Name(), "err", err)
		}
	}
}

// pin keeps the file open while it has no users: the segment became active.
func (f *segFiles) pin() error {
	if _, err := f.acquire(); err != nil {
		return err
	}
	f.cache.mu.Lock()
	f.pinned = true
	f.cache.mu.Unlock()
	f.release()
	return nil
}

// unpin lets the cache close the file once it has no users: the segment
// stopped being active.
func (f *segFiles) unpin() {
	f.cache.mu.Lock()
	f.pinned = false
	f.settle()
}

// users is the number of references besides the segment's.
func (f *segFiles) users() int32 {
	f.cache.mu.Lock()
	defer f.cache.mu.Unlock()
	return f.nusers
}

// errNoFile is returned for a reference to a segment file closed for good.
var errNoFile = errors.New("segment file is closed")

// activeFile is the open file of the active segment: pinned, so it stays
// open; appendMu is held.
func (f *segFiles) activeFile() *os.File {
	f.cache.mu.Lock()
	defer f.cache.mu.Unlock()
	return f.f
}

// inactiveFiles is the closed file of an existing segment at base, opened
// on demand.
func (l *Log) inactiveFiles(base int64) *segFiles {
	return &segFiles{path: segmentPath(l.dir, base, logExt), cache: l.fds, logger: l.logger}
}

// privateFileCacheSize is the idle bound of a log opened without a cache.
const privateFileCacheSize = 16
