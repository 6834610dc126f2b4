package replica

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/twmb/franz-go/pkg/kerr"
)

// The log-dir layer (JBOD and KIP-112): a broker has one or more log.dirs;
// each partition lives in exactly one. A new partition goes to the online dir
// holding the fewest partitions, as Kafka places them (by partition count,
// not by bytes). A dir whose disk returns an error (a full disk, an I/O
// error) is marked offline for the rest of the process's life: its
// partitions stop serving (KAFKA_STORAGE_ERROR) and their logs are closed
// without another write, the broker tells the controller (OnDirFailure),
// which elects other leaders, and the other dirs keep serving. A restart
// recovers the dir's partitions from their segments.

// LogDir is one of the broker's log.dirs and its state.
type LogDir struct {
	Path string
	// Err is why the dir went offline; nil while it is online.
	Err error
}

// logDir's fields are guarded by Manager.dirMu, which is taken last (after
// m.mu and any Partition's mu: a partition reports its disk's failure under
// its own lock).
type logDir struct {
	path       string
	err        error // set once, when the dir fails
	partitions int   // the partitions placed in it (pickDir)
}

func newLogDirs(paths []string) []*logDir {
	out := make([]*logDir, 0, len(paths))
	for _, p := range paths {
		out = append(out, &logDir{path: filepath.Clean(p)})
	}
	return out
}

// Dirs returns the log dirs in configuration order.
func (m *Manager) Dirs() []LogDir {
	m.dirMu.Lock()
	defer m.dirMu.Unlock()
	out := make([]LogDir, 0, len(m.dirs))
	for _, d := range m.dirs {
		out = append(out, LogDir{Path: d.path, Err: d.err})
	}
	return out
}

// PartitionsIn returns the online partitions whose log is in dir.
func (m *Manager) PartitionsIn(dir string) []*Partition {
	dir = filepath.Clean(dir)
	var out []*Partition
	for _, p := range m.Partitions() {
		if p.Dir() == dir {
			out = append(out, p)
		}
	}
	return out
}

// dirLocked finds the dir at path; m.dirMu is held.
func (m *Manager) dirLocked(path string) *logDir {
	for _, d := range m.dirs {
		if d.path == path {
			return d
		}
	}
	return nil
}

// hasOfflineDir reports whether some log dir has failed.
func (m *Manager) hasOfflineDir() bool {
	m.dirMu.Lock()
	defer m.dirMu.Unlock()
	for _, d := range m.dirs {
		if d.err != nil {
			return true
		}
	}
	return false
}

// pickDir chooses the online log dir holding the fewest partitions (the
// first in log.dirs order on a tie), as Kafka does, and counts the new
// partition in it at once, so partitions created in parallel spread too;
// unplace takes it back if the partition is not created. False when every
// dir has failed.
func (m *Manager) pickDir() (string, bool) {
	m.dirMu.Lock()
	defer m.dirMu.Unlock()
	var best *logDir
	for _, d := range m.dirs {
		if d.err == nil && (best == nil || d.partitions < best.partitions) {
			best = d
		}
	}
	if best == nil {
		return "", false
	}
	best.partitions++
	return best.path, true
}

// unplace uncounts a partition of dir (not created, or deleted).
func (m *Manager) unplace(dir string) {
	m.dirMu.Lock()
	defer m.dirMu.Unlock()
	if d := m.dirLocked(dir); d != nil {
		d.partitions--
	}
}

// scanDirs lists the partition directories of every online log dir, finishing
// deletions a crash interrupted. A dir that cannot be read goes offline, as in
// Kafka; a partition found in two dirs is an error (Kafka refuses to start
// too): which copy is right cannot be told, so the operator must remove one.
func (m *Manager) scanDirs() (map[TP]string, error) {
	found := map[TP]string{}
	type swap struct {
		tp       TP
		id, root string
	}
	var swaps []swap
	for _, d := range m.dirs {
		entries, err := os.ReadDir(d.path)
		if err != nil {
			m.markFailed(d.path, fmt.Errorf("reading log dir: %w", err))
			continue
		}
		m.dirMu.Lock()
		for _, e := range entries {
			if !e.IsDir() {
				continue
			}
			if strings.HasSuffix(e.Name(), "-delete") {
				// A deletion interrupted by a crash: finish it.
				if err := os.RemoveAll(filepath.Join(d.path, e.Name())); err != nil {
					m.logger.Warn("removing deleted partition dir", "dir", e.Name(), "err", err)
				}
				continue
			}
			if tp, _, ok := moveDirName(e.Name(), futureSuffix); ok {
				// A move (move.go) a crash or shutdown interrupted: the
				// current log is intact and the copy is dropped.
				m.logger.Warn("removing the future log of an unfinished replica move", "partition", tp.String(), "dir", d.path)
				if err := os.RemoveAll(filepath.Join(d.path, e.Name())); err != nil {
					m.logger.Warn("removing a future log", "dir", e.Name(), "err", err)
				}
				continue
			}
			if tp, id, ok := moveDirName(e.Name(), swapSuffix); ok {
				swaps = append(swaps, swap{tp, id, d.path})
				continue
			}
			tp, ok := ParseDirName(e.Name())
			if !ok {
				continue
			}
			if other, dup := found[tp]; dup {
				m.dirMu.Unlock()
				return nil, fmt.Errorf("partition %s has a log in two log dirs, %s and %s: remove the copy that is not current "+
					"(a log dir that failed recently holds the stale one) and start again", tp, filepath.Join(other, e.Name()), filepath.Join(d.path, e.Name()))
			}
			found[tp] = d.path
			d.partitions++
		}
		m.dirMu.Unlock()
	}
	// A move whose copy was complete when the broker stopped: finish its swap.
	for _, sw := range swaps {
		if err := m.finishSwap(found, sw.tp, sw.id, sw.root); err != nil {
			return nil, fmt.Errorf("finishing the move of %s to %s: %w", sw.tp, sw.root, err)
		}
	}
	return found, nil
}

// finishSwap completes a move's swap a stop interrupted (move.go): the old
// log, if still there, is renamed for deletion and removed, and the copy
// becomes the partition's log.
func (m *Manager) finishSwap(found map[TP]string, tp TP, id, root string) error {
	final, err := partitionDir(root, tp)
	if err != nil {
		return err
	}
	if old, ok := found[tp]; ok {
		dir, err := partitionDir(old, tp)
		if err != nil {
			return err
		}
		del := filepath.Join(old, tp.String()+"."+id+deleteSuffix)
		if err := renameSynced(dir, del); err != nil {
			return err
		}
		if err := os.RemoveAll(del); err != nil {
			m.logger.Warn("removing the moved replica's old log", "dir", del, "err", err)
		}
		m.unplace(old)
	}
	if err := renameSynced(filepath.Join(root, tp.String()+"."+id+swapSuffix), final); err != nil {
		return err
	}
	found[tp] = root
	m.placeIn(root)
	m.logger.Info("finished a replica move the last stop interrupted", "partition", tp.String(), "dir", root)
	return nil
}

// isStorageErr reports whether err came from a failing disk: the log says
// so (KAFKA_STORAGE_ERROR), or the system call failed with an I/O error, a
// full disk or quota, or a read-only file system.
func isStorageErr(err error) bool {
	return errors.Is(err, kerr.KafkaStorageError) || errors.Is(err, syscall.EIO) || errors.Is(err, syscall.ENOSPC) ||
		errors.Is(err, syscall.EDQUOT) || errors.Is(err, syscall.EROFS)
}

// errAllDirsFailed is returned when no log dir is left to serve.
var errAllDirsFailed = errors.New("every log dir has failed")

func (m *Manager) onlineDirs() int {
	m.dirMu.Lock()
	defer m.dirMu.Unlock()
	n := 0
	for _, d := range m.dirs {
		if d.err == nil {
			n++
		}
	}
	return n
}

// markFailed records that dir failed; false when it was offline already.
func (m *Manager) markFailed(dir string, cause error) bool {
	m.dirMu.Lock()
	defer m.dirMu.Unlock()
	d := m.dirLocked(dir)
	if d == nil || d.err != nil {
		return false
	}
	d.err = cause
	return true
}

// reportStorageError takes dir offline after its disk returned err. The dir
// stops taking new partitions at once; its partitions go offline in the
// background, since the reporter may hold a partition's lock.
func (m *Manager) reportStorageError(dir string, err error) {
	if !m.markFailed(dir, err) {
		return
	}
	m.logger.Error("log dir failed: taking it offline", "dir", dir, "err", err)
	go m.takeOffline(dir)
}

// takeOffline stops every partition of a failed dir and tells the broker.
func (m *Manager) takeOffline(dir string) {
	m.changeMu.Lock()
	defer m.changeMu.Unlock()
	var hit []*Partition
	m.mu.RLock()
	for _, p := range m.parts {
		if p.Dir() == dir {
			hit = append(hit, p)
		}
	}
	m.mu.RUnlock()
	m.stopMovesIn(dir)
	for _, p := range hit {
		m.removeFromFetchers(TP{p.Topic, p.ID})
		p.goOffline()
	}
	m.leadersW.wakeAll()
	online := m.onlineDirs()
	m.logger.Error("log dir offline: its partitions are offline on this broker until it restarts",
		"dir", dir, "partitions", len(hit), "online_dirs", online)
	if m.cfg.OnDirFailure != nil {
		m.cfg.OnDirFailure(dir, online)
	}
}
