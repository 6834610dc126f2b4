package logdump

import (
	"bufio"
	"context"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/ktoolhq/ktool/internal/batch"
	"github.com/ktoolhq/ktool/plugins/codec"
)

// File kinds, by extension.
const (
	kindLog       = "log"
	kindIndex     = "index"
	kindTimeIndex = "timeindex"
	kindTxnIndex  = "txnindex"
)

const (
	indexEntrySize     = 8
	timeIndexEntrySize = 12
	txnIndexEntrySize  = 34
	// maxBatchSize bounds one batch read into memory; a larger length field
	// means the file is corrupt there.
	maxBatchSize = 1 << 30
	// prefixSize is what a batch's length and magic take to read: base
	// offset, length, leader epoch, magic.
	prefixSize = batch.OffMagic + 1
)

// parseName splits a segment file name into its kind and base offset.
func parseName(path string) (kind string, base int64, err error) {
	name := filepath.Base(path)
	stem, ext, ok := strings.Cut(name, ".")
	if !ok {
		return "", 0, fmt.Errorf("%s: not a segment file (want NNNNNNNNNNNNNNNNNNNN.log, .index, .timeindex or .txnindex)", path)
	}
	switch ext {
	case kindLog, kindIndex, kindTimeIndex, kindTxnIndex:
	default:
		return "", 0, fmt.Errorf("%s: unknown file type .%s (want .log, .index, .timeindex or .txnindex)", path, ext)
	}
	base, err = strconv.ParseInt(stem, 10, 64)
	if err != nil || base < 0 {
		return "", 0, fmt.Errorf("%s: file name must be the segment's base offset (like 00000000000000000000.%s)", path, ext)
	}
	return ext, base, nil
}

// sibling is the path of the segment's file of another kind.
func sibling(path, kind string) string {
	dir, name := filepath.Split(path)
	stem, _, _ := strings.Cut(name, ".")
	return filepath.Join(dir, stem+"."+kind)
}

// scanLog reads a segment batch by batch, never the whole file at once.
// With codecs set it decodes every record, decompressing through them, and
// with dec also reads them as an internal topic's records.
func scanLog(ctx context.Context, path string, base int64, codecs batch.Codecs, dec decoder) (FileDump, error) {
	d := FileDump{Path: path, Kind: kindLog, BaseOffset: base}
	f, err := os.Open(path)
	if err != nil {
		return d, err
	}
	defer f.Close()
	r := bufio.NewReaderSize(f, 1<<20)
	var pos int64
	for {
		if err := ctx.Err(); err != nil {
			return d, err
		}
		prefix := make([]byte, prefixSize)
		n, err := io.ReadFull(r, prefix)
		if errors.Is(err, io.EOF) {
			return d, nil
		}
		if errors.Is(err, io.ErrUnexpectedEOF) {
			d.Problems = append(d.Problems, fmt.Sprintf("torn tail: %d bytes at position %d, too few for a batch header", n, pos))
			return d, nil
		}
		if err != nil {
			return d, err
		}
		length := batch.PeekLength(prefix)
		size := int64(length) + batch.LogOverhead
		if length < batch.MinLength || size > maxBatchSize {
			d.Problems = append(d.Problems, fmt.Sprintf("corrupt batch at position %d: length %d", pos, length))
			return d, nil
		}
		b := make([]byte, size)
		copy(b, prefix)
		if n, err := io.ReadFull(r, b[prefixSize:]); err != nil {
			if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
				d.Problems = append(d.Problems, fmt.Sprintf("torn tail: batch at position %d has %d of its %d bytes", pos, prefixSize+n, size))
				return d, nil
			}
			return d, err
		}
		if magic := batch.PeekMagic(prefix); magic != batch.Magic {
			d.Problems = append(d.Problems, fmt.Sprintf("message set at position %d has magic %d; only magic 2 batches are shown", pos, magic))
			pos += size
			continue
		}
		h, err := batch.ParseHeader(b)
		if err != nil {
			d.Problems = append(d.Problems, fmt.Sprintf("batch at position %d: %v", pos, err))
			return d, nil
		}
		out := batchOf(h, pos, batch.CRCValid(b))
		if !out.CRCValid {
			d.Problems = append(d.Problems, fmt.Sprintf("batch at offset %d (position %d): CRC mismatch", h.BaseOffset, pos))
		}
		if codecs != nil {
			recs, err := decodeRecords(ctx, b, h, codecs, dec)
			if err != nil {
				d.Problems = append(d.Problems, fmt.Sprintf("batch at offset %d (position %d): records: %v", h.BaseOffset, pos, err))
			}
			out.Records = recs
		}
		d.Batches = append(d.Batches, out)
		pos += size
	}
}

func batchOf(h batch.Header, pos int64, crcValid bool) Batch {
	tsType := "CreateTime"
	if h.LogAppendTime() {
		tsType = "LogAppendTime"
	}
	b := Batch{
		BaseOffset: h.BaseOffset, LastOffset: h.LastOffset(), Count: h.NumRecords, Codec: codec.NameForID(h.Compression()),
		ProducerID: h.ProducerID, ProducerEpoch: h.ProducerEpoch, BaseSequence: h.BaseSequence,
		PartitionLeaderEpoch: h.PartitionLeaderEpoch, Transactional: h.Transactional(), Control: h.Control(),
		TimestampType: tsType, CreateTimestamp: h.FirstTimestamp, MaxTimestamp: h.MaxTimestamp,
		Position: pos, Size: int(h.Size()), CRC: h.CRC, CRCValid: crcValid,
	}
	if horizon, ok := h.DeleteHorizon(); ok {
		b.DeleteHorizonMs = &horizon
	}
	return b
}

func decodeRecords(ctx context.Context, b []byte, h batch.Header, codecs batch.Codecs, dec decoder) ([]Record, error) {
	var out []Record
	err := batch.Records(ctx, codecs, h, b, codec.MaxDecompressed, func(br batch.Record) error {
		r := Record{
			Offset: h.BaseOffset + int64(br.OffsetDelta), Timestamp: h.FirstTimestamp + br.TimestampDelta,
			Key: bytesOf(br.Key), Value: bytesOf(br.Value),
		}
		if h.LogAppendTime() {
			r.Timestamp = h.MaxTimestamp
		}
		if h.Control() {
			r.Control = controlType(br.Key)
			if m, err := batch.ParseMarker(br); err == nil {
				r.CoordinatorEpoch = &m.CoordinatorEpoch
			}
		} else if dec != nil {
			r.Decoded = dec(br.Key, br.Value)
		}
		for _, hd := range br.Headers() {
			r.Headers = append(r.Headers, Header{Key: hd.Key, Value: bytesOf(hd.Value)})
		}
		out = append(out, r)
		return nil
	})
	return out, err
}

// controlType names a control record's type from its key.
func controlType(key []byte) string {
	t, err := batch.ControlKey(key)
	if err != nil {
		return "malformed"
	}
	return t.String()
}

// bytesOf shows b as text when it is valid UTF-8 with only printable
// characters (and ordinary whitespace), else as hex.
func bytesOf(b []byte) Bytes {
	if b == nil {
		return Bytes{Null: true}
	}
	if utf8.Valid(b) && printable(string(b)) {
		return Bytes{Text: string(b), Size: len(b)}
	}
	return Bytes{Hex: hex.EncodeToString(b), Size: len(b)}
}

func printable(s string) bool {
	for _, r := range s {
		if !unicode.IsPrint(r) && r != '\t' && r != '\n' && r != '\r' {
			return false
		}
	}
	return true
}

// readIndex reads an offset index. Kafka preallocates the active segment's
// index and fills it with zeros; an all-zero entry after the first ends it.
func readIndex(path string, base int64) ([]IndexEntry, []string, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, nil, err
	}
	var problems []string
	if rem := len(b) % indexEntrySize; rem != 0 {
		problems = append(problems, fmt.Sprintf("%d stray bytes at the end (entries are %d bytes)", rem, indexEntrySize))
	}
	var out []IndexEntry
	for i := 0; i+indexEntrySize <= len(b); i += indexEntrySize {
		rel := binary.BigEndian.Uint32(b[i:])
		pos := binary.BigEndian.Uint32(b[i+4:])
		if i > 0 && rel == 0 && pos == 0 {
			break
		}
		out = append(out, IndexEntry{Offset: base + int64(rel), Position: int64(pos)})
	}
	return out, problems, nil
}

// readTimeIndex reads a time index, stopping at zero padding like readIndex.
func readTimeIndex(path string, base int64) ([]TimeIndexEntry, []string, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, nil, err
	}
	var problems []string
	if rem := len(b) % timeIndexEntrySize; rem != 0 {
		problems = append(problems, fmt.Sprintf("%d stray bytes at the end (entries are %d bytes)", rem, timeIndexEntrySize))
	}
	var out []TimeIndexEntry
	for i := 0; i+timeIndexEntrySize <= len(b); i += timeIndexEntrySize {
		ts := int64(binary.BigEndian.Uint64(b[i:]))
		rel := binary.BigEndian.Uint32(b[i+8:])
		if i > 0 && ts == 0 && rel == 0 {
			break
		}
		out = append(out, TimeIndexEntry{Timestamp: ts, Offset: base + int64(rel)})
	}
	return out, problems, nil
}

// readTxnIndex reads an aborted transaction index: Kafka's 34-byte entries
// (version int16, producerId, firstOffset, lastOffset, lastStableOffset).
func readTxnIndex(path string) ([]AbortedTxn, []string, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, nil, err
	}
	var problems []string
	if rem := len(b) % txnIndexEntrySize; rem != 0 {
		problems = append(problems, fmt.Sprintf("%d stray bytes at the end (entries are %d bytes)", rem, txnIndexEntrySize))
	}
	var out []AbortedTxn
	for i := 0; i+txnIndexEntrySize <= len(b); i += txnIndexEntrySize {
		e := AbortedTxn{
			Version:          int16(binary.BigEndian.Uint16(b[i:])),
			ProducerID:       int64(binary.BigEndian.Uint64(b[i+2:])),
			FirstOffset:      int64(binary.BigEndian.Uint64(b[i+10:])),
			LastOffset:       int64(binary.BigEndian.Uint64(b[i+18:])),
			LastStableOffset: int64(binary.BigEndian.Uint64(b[i+26:])),
		}
		if e.Version != 0 {
			problems = append(problems, fmt.Sprintf("entry %d has version %d, want 0", i/txnIndexEntrySize, e.Version))
		}
		out = append(out, e)
	}
	return out, problems, nil
}
