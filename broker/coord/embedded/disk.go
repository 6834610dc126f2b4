package embedded

import (
	"bufio"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/ktoolhq/ktool/broker/coord"
)

const (
	snapshotFile = "snapshot"
	journalFile  = "journal"
	frameHeader  = 8
	// maxFrame bounds one record so a corrupt length cannot make us
	// allocate gigabytes; ZooKeeper's own limit on a znode is 1 MiB.
	maxFrame = 256 << 20
	// defaultCompactBytes is the journal size above which the journal is
	// folded into a new snapshot (if it is also larger than the snapshot).
	defaultCompactBytes = 4 << 20
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// snapshotNode is one znode as written in a snapshot.
type snapshotNode struct {
	Path     string `json:"path"`
	Data     []byte `json:"data,omitempty"`
	Czxid    int64  `json:"czxid"`
	Mzxid    int64  `json:"mzxid"`
	Pzxid    int64  `json:"pzxid"`
	Ctime    int64  `json:"ctime"`
	Mtime    int64  `json:"mtime"`
	Version  int32  `json:"version"`
	Cversion int32  `json:"cversion"`
	Owner    int64  `json:"owner,omitempty"`
}

type snapshot struct {
	Version int            `json:"version"`
	Zxid    int64          `json:"zxid"`
	Nodes   []snapshotNode `json:"nodes"`
}

// disk persists the tree: see doc.go for the format.
type disk struct {
	dir          string
	journal      *os.File
	journalSize  int64
	snapshotSize int64
	compactBytes int64
}

func frame(payload []byte) []byte {
	b := make([]byte, frameHeader+len(payload))
	binary.BigEndian.PutUint32(b[0:4], uint32(len(payload)))
	binary.BigEndian.PutUint32(b[4:8], crc32.Checksum(payload, castagnoli))
	copy(b[frameHeader:], payload)
	return b
}

// errTorn marks a record cut short by a crash during its append.
var errTorn = errors.New("torn record")

// readFrame reads one record. A short header or payload is errTorn; a full
// record with a bad checksum is corruption.
func readFrame(r io.Reader) ([]byte, error) {
	var h [frameHeader]byte
	if _, err := io.ReadFull(r, h[:]); err != nil {
		if err == io.EOF {
			return nil, io.EOF
		}
		return nil, errTorn
	}
	n := binary.BigEndian.Uint32(h[0:4])
	if n > maxFrame {
		return nil, fmt.Errorf("record length %d exceeds %d", n, maxFrame)
	}
	payload := make([]byte, n)
	if _, err := io.ReadFull(r, payload); err != nil {
		return nil, errTorn
	}
	if crc32.Checksum(payload, castagnoli) != binary.BigEndian.Uint32(h[4:8]) {
		return nil, errors.New("record checksum mismatch")
	}
	return payload, nil
}

// load reads the snapshot and replays the journal into a tree, cutting a
// torn journal tail, and leaves the journal open for appends.
func (d *disk) load() (*tree, error) {
	if err := os.MkdirAll(d.dir, 0o755); err != nil {
		return nil, err
	}
	t, err := d.loadSnapshot()
	if err != nil {
		return nil, err
	}
	if err := d.replayJournal(t); err != nil {
		return nil, err
	}
	f, err := os.OpenFile(filepath.Join(d.dir, journalFile), os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
	if err != nil {
		return nil, err
	}
	d.journal = f
	return t, syncDir(d.dir)
}

func (d *disk) loadSnapshot() (*tree, error) {
	t := newTree()
	path := filepath.Join(d.dir, snapshotFile)
	f, err := os.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		return t, nil
	}
	if err != nil {
		return nil, err
	}
	defer f.Close()
	payload, err := readFrame(bufio.NewReader(f))
	if err != nil {
		return nil, fmt.Errorf("snapshot %s: %w", path, err)
	}
	d.snapshotSize = int64(len(payload) + frameHeader)
	var snap snapshot
	if err := json.Unmarshal(payload, &snap); err != nil {
		return nil, fmt.Errorf("snapshot %s: %w", path, err)
	}
	if snap.Version != 1 {
		return nil, fmt.Errorf("snapshot %s: unsupported version %d", path, snap.Version)
	}
	// Nodes are written parents first, so each parent exists when its
	// children are linked.
	for _, sn := range snap.Nodes {
		n := &node{
			data: sn.Data,
			stat: coord.Stat{
				Czxid: sn.Czxid, Mzxid: sn.Mzxid, Pzxid: sn.Pzxid,
				Ctime: time.UnixMilli(sn.Ctime), Mtime: time.UnixMilli(sn.Mtime),
				Version: sn.Version, Cversion: sn.Cversion, EphemeralOwner: sn.Owner,
			},
			children: map[string]struct{}{},
		}
		if sn.Path == "/" {
			t.nodes["/"] = n
			continue
		}
		if err := coord.ValidatePath(sn.Path, false); err != nil {
			return nil, fmt.Errorf("snapshot %s: %w", path, err)
		}
		parent, ok := t.nodes[coord.Parent(sn.Path)]
		if !ok {
			return nil, fmt.Errorf("snapshot %s: %s has no parent", path, sn.Path)
		}
		parent.children[baseName(sn.Path)] = struct{}{}
		t.nodes[sn.Path] = n
	}
	t.zxid = snap.Zxid
	return t, nil
}

// replayJournal applies the journal's transactions newer than the snapshot.
// A torn final record (a crash mid-append) is cut off; damage followed by
// more data is corruption and fails the open rather than losing writes.
func (d *disk) replayJournal(t *tree) error {
	path := filepath.Join(d.dir, journalFile)
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	defer f.Close()
	info, err := f.Stat()
	if err != nil {
		return err
	}
	r := &countingReader{r: bufio.NewReader(f)}
	var good int64
	for {
		payload, err := readFrame(r)
		if err == io.EOF {
			break
		}
		if errors.Is(err, errTorn) {
			if err := f.Truncate(good); err != nil {
				return fmt.Errorf("journal %s: cut torn tail at %d: %w", path, good, err)
			}
			if err := f.Sync(); err != nil {
				return err
			}
			break
		}
		if err != nil {
			if r.n < info.Size() {
				return fmt.Errorf("journal %s: corrupt record at offset %d: %w", path, good, err)
			}
			if err := f.Truncate(good); err != nil {
				return err
			}
			if err := f.Sync(); err != nil {
				return err
			}
			break
		}
		var tx txn
		if err := json.Unmarshal(payload, &tx); err != nil {
			return fmt.Errorf("journal %s: record at offset %d: %w", path, good, err)
		}
		if tx.Zxid > t.zxid {
			if tx.Zxid != t.zxid+1 {
				return fmt.Errorf("journal %s: zxid %d follows %d", path, tx.Zxid, t.zxid)
			}
			if err := t.applyTxn(tx); err != nil {
				return fmt.Errorf("journal %s: zxid %d: %w", path, tx.Zxid, err)
			}
		}
		good = r.n
	}
	d.journalSize = good
	return nil
}

type countingReader struct {
	r *bufio.Reader
	n int64
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += int64(n)
	return n, err
}

// append writes one transaction durably.
func (d *disk) append(tx txn) error {
	payload, err := json.Marshal(tx)
	if err != nil {
		return err
	}
	b := frame(payload)
	if _, err := d.journal.Write(b); err != nil {
		return fmt.Errorf("journal write: %w", err)
	}
	if err := d.journal.Sync(); err != nil {
		return fmt.Errorf("journal sync: %w", err)
	}
	d.journalSize += int64(len(b))
	return nil
}

// needsCompaction reports whether replaying the journal would cost more
// than reading a fresh snapshot.
func (d *disk) needsCompaction() bool {
	return d.journalSize > d.compactBytes && d.journalSize > d.snapshotSize
}

// compact writes the whole tree as a new snapshot, then starts an empty
// journal. A crash between the two steps is harmless: replay skips journal
// records at or below the snapshot's zxid.
func (d *disk) compact(t *tree) error {
	snap := snapshot{Version: 1, Zxid: t.zxid, Nodes: make([]snapshotNode, 0, len(t.nodes))}
	var walk func(path string)
	walk = func(path string) {
		n := t.nodes[path]
		snap.Nodes = append(snap.Nodes, snapshotNode{
			Path: path, Data: n.data,
			Czxid: n.stat.Czxid, Mzxid: n.stat.Mzxid, Pzxid: n.stat.Pzxid,
			Ctime: n.stat.Ctime.UnixMilli(), Mtime: n.stat.Mtime.UnixMilli(),
			Version: n.stat.Version, Cversion: n.stat.Cversion, Owner: n.stat.EphemeralOwner,
		})
		for _, c := range t.sortedChildren(n) {
			walk(coord.Join(path, c))
		}
	}
	walk("/")
	payload, err := json.Marshal(snap)
	if err != nil {
		return err
	}
	b := frame(payload)
	if err := writeFileAtomic(d.dir, snapshotFile, b); err != nil {
		return err
	}
	d.snapshotSize = int64(len(b))
	if err := writeFileAtomic(d.dir, journalFile, nil); err != nil {
		return err
	}
	f, err := os.OpenFile(filepath.Join(d.dir, journalFile), os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		return err
	}
	if err := d.journal.Close(); err != nil {
		f.Close()
		return err
	}
	d.journal = f
	d.journalSize = 0
	return nil
}

// writeFileAtomic replaces dir/name with b: written to a temporary file,
// synced, renamed over the old one, and the directory synced.
func writeFileAtomic(dir, name string, b []byte) error {
	tmp := filepath.Join(dir, name+".tmp")
	f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return err
	}
	if _, err := f.Write(b); err != nil {
		f.Close()
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	if err := os.Rename(tmp, filepath.Join(dir, name)); err != nil {
		return err
	}
	return syncDir(dir)
}

func syncDir(dir string) error {
	f, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer f.Close()
	if err := f.Sync(); err != nil && !errors.Is(err, os.ErrInvalid) {
		return fmt.Errorf("sync %s: %w", dir, err)
	}
	return nil
}

func (d *disk) close() error {
	if d.journal == nil {
		return nil
	}
	err := d.journal.Close()
	d.journal = nil
	return err
}
