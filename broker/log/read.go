package log

import (
	"fmt"
	"os"
	"sort"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/ktoolhq/ktool/internal/batch"
)

// Region is a byte range of one segment file holding whole batches. It keeps
// the file open (even if retention or truncation removes the segment) until
// Release. An empty Region (Len 0, File nil) needs no Release but allows it.
type Region struct {
	File     *os.File // send [Pos, Pos+Len); never move the file's offset
	Pos, Len int64
	files    *segFiles
}

// Release gives the region's file reference back. It is safe to call twice.
func (r *Region) Release() {
	if r.files != nil {
		r.files.release()
		r.files = nil
	}
}

// Read returns whole batches starting with the one that holds offset: at most
// maxBytes (but always the first batch if minOneBatch, KIP-74), and none whose
// base offset is >= maxOffset. The region covers one segment; callers wanting
// more call Read again after it. offset outside [LogStartOffset,
// LogEndOffset] is kerr.OffsetOutOfRange; offset == LogEndOffset gives an
// empty region. Record bytes are never read: only batch headers, through the
// sparse index.
func (l *Log) Read(offset int64, maxBytes int32, maxOffset int64, minOneBatch bool) (Region, error) {
	l.mu.Lock()
	if l.closed {
		l.mu.Unlock()
		return Region{}, ErrClosed
	}
	if offset < l.logStart || offset > l.leo {
		logStart, leo := l.logStart, l.leo
		l.mu.Unlock()
		return Region{}, fmt.Errorf("offset %d outside [%d, %d]: %w", offset, logStart, leo, kerr.OffsetOutOfRange)
	}
	atEnd := offset == l.leo
	l.mu.Unlock()
	if atEnd || offset >= maxOffset {
		return Region{}, nil
	}
	// Segments are looked up by offset on every step, never by position:
	// the cleaner may have swapped the list since the last look.
	for cur := offset; ; {
		l.mu.Lock()
		if l.closed {
			l.mu.Unlock()
			return Region{}, nil
		}
		i := l.segmentFor(cur)
		s := l.segs[i]
		last := i+1 == len(l.segs)
		next := int64(0)
		if !last {
			next = l.segs[i+1].base
		}
		// Appends never write below an index slice's length and truncation
		// gives the segment a new array, so idx may be searched unlocked.
		idx, base, size, files := s.idx, s.base, s.size, s.files
		f, err := files.acquire()
		l.mu.Unlock()
		if err != nil {
			return Region{}, storageError("open segment", err)
		}

		r, found, err := readSegment(files, f, idx, base, size, cur, maxBytes, maxOffset, minOneBatch)
		if err != nil || found {
			return r, err
		}
		files.release()
		if last {
			return Region{}, nil
		}
		// Every batch below next ends before cur (cleaning only removes
		// batches), so the batch wanted is the first one from next.
		cur = next
	}
}

// readSegment scans batch headers from start for the batch holding offset
// and extends the region while the limits allow. It owns one reference to
// files, which it hands to the returned region or releases, except when it
// reports not found (the caller releases then).
func readSegment(files *segFiles, f *os.File, idx []offsetEntry, base, size, offset int64, maxBytes int32, maxOffset int64, minOneBatch bool) (Region, bool, error) {
	var hb [batch.HeaderSize]byte
	pos := lookupPosition(idx, offset-base)
	for {
		if pos >= size {
			return Region{}, false, nil
		}
		h, err := readHeaderAt(f, pos, &hb)
		if err != nil {
			files.release()
			return Region{}, true, storageError("read batch header", err)
		}
		if h.LastOffset() >= offset {
			break
		}
		pos += h.Size()
	}
	begin, end := pos, pos
	// Index entries are batch boundaries: skip to the last one that keeps the
	// region within maxBytes and whose batch (hence every batch before it)
	// starts below maxOffset, and read headers only after it.
	j := sort.Search(len(idx), func(i int) bool { return int64(idx[i].pos) > begin+int64(maxBytes) }) - 1
	for j >= 0 && base+int64(idx[j].rel) >= maxOffset {
		j--
	}
	if j >= 0 && int64(idx[j].pos) > begin {
		end = int64(idx[j].pos)
	}
	for end < size {
		base, bsize, err := readOffsetAndLength(f, end)
		if err != nil {
			files.release()
			return Region{}, true, storageError("read batch header", err)
		}
		if base >= maxOffset {
			break
		}
		if end+bsize-begin > int64(maxBytes) && !(minOneBatch && end == begin) {
			break
		}
		end += bsize
	}
	if end == begin {
		files.release()
		return Region{}, true, nil
	}
	return Region{File: f, Pos: begin, Len: end - begin, files: files}, true, nil
}
