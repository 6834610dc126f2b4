package batch

import (
	"context"
	"encoding/binary"
	"fmt"
	"math"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/ktoolhq/ktool/plugins/codec"
)

// Recompress rewrites each batch of a records field to codec to (IDNone
// means uncompressed), keeping base offset, last offset delta, timestamps,
// producer id, epoch and sequence, leader epoch, the other attribute bits
// and the records themselves; it recomputes length and CRC32C. Batches
// already in to, and control batches (which Kafka never compresses), keep
// their bytes. Each codec is called once for all the batches it handles, and
// no section decompresses past limit. The input is not modified.
func Recompress(ctx context.Context, codecs Codecs, records []byte, to int8, limit int) ([]byte, error) {
	parts, err := Split(records)
	if err != nil {
		return nil, err
	}
	var target codec.Codec
	if to != codec.IDNone {
		if target, err = lookup(ctx, codecs, Header{Attributes: int16(to)}); err != nil {
			return nil, err
		}
	}

	// Sections to rewrite, grouped by the codec that must decompress them.
	type pending struct {
		index   int
		section []byte
	}
	bySource := map[int8][]pending{}
	var order []int8
	hdrs := make([]Header, len(parts))
	rewrite := make([]bool, len(parts))
	for i, b := range parts {
		h, _ := ParseHeader(b) // Split parsed it already
		hdrs[i] = h
		if h.Control() || h.Compression() == to {
			continue
		}
		if !CRCValid(b) {
			return nil, fmt.Errorf("batch %d: CRC mismatch, refusing to rewrite a corrupt batch: %w", h.BaseOffset, kerr.CorruptMessage)
		}
		id := h.Compression()
		if _, ok := bySource[id]; !ok {
			order = append(order, id)
		}
		bySource[id] = append(bySource[id], pending{i, b[HeaderSize:]})
		rewrite[i] = true
	}
	if len(order) == 0 {
		return append([]byte(nil), records...), nil
	}

	plain := make([][]byte, len(parts))
	for _, id := range order {
		ps := bySource[id]
		sections := make([][]byte, len(ps))
		for j, p := range ps {
			sections[j] = p.section
		}
		if id != codec.IDNone {
			h := hdrs[ps[0].index]
			c, err := lookup(ctx, codecs, h)
			if err != nil {
				return nil, err
			}
			if sections, err = c.Decompress(ctx, sections, limit); err != nil {
				return nil, codecError(h, c.Name(), err)
			}
			if len(sections) != len(ps) {
				return nil, fmt.Errorf("codec %s returned %d sections for %d: %w", c.Name(), len(sections), len(ps), kerr.CorruptMessage)
			}
		}
		for j, p := range ps {
			plain[p.index] = sections[j]
		}
	}

	if target != nil {
		var idx []int
		var in [][]byte
		for i := range parts {
			if rewrite[i] {
				idx = append(idx, i)
				in = append(in, plain[i])
			}
		}
		out, err := target.Compress(ctx, in)
		if err != nil {
			return nil, fmt.Errorf("compressing %s: %w", target.Name(), err)
		}
		if len(out) != len(in) {
			return nil, fmt.Errorf("codec %s returned %d sections for %d", target.Name(), len(out), len(in))
		}
		for j, i := range idx {
			plain[i] = out[j]
		}
	}

	size := 0
	for i, b := range parts {
		if rewrite[i] {
			size += HeaderSize + len(plain[i])
		} else {
			size += len(b)
		}
	}
	dst := make([]byte, 0, size)
	for i, b := range parts {
		if !rewrite[i] {
			dst = append(dst, b...)
			continue
		}
		section := plain[i]
		if MinLength+len(section) > math.MaxInt32 {
			return nil, fmt.Errorf("batch %d would be larger than 2 GiB: %w", hdrs[i].BaseOffset, kerr.MessageTooLarge)
		}
		start := len(dst)
		dst = append(dst, b[:HeaderSize]...)
		dst = append(dst, section...)
		out := dst[start:]
		binary.BigEndian.PutUint32(out[OffLength:], uint32(len(out)-LogOverhead))
		attrs := binary.BigEndian.Uint16(out[OffAttributes:])&^AttrCompressionMask | uint16(to)
		binary.BigEndian.PutUint16(out[OffAttributes:], attrs)
		binary.BigEndian.PutUint32(out[OffCRC:], Checksum(out))
	}
	return dst, nil
}
