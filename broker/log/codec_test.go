package log

import (
	"bytes"
	"encoding/binary"
	"testing"

	"github.com/klauspost/compress/gzip"
	"github.com/klauspost/compress/snappy"
	"github.com/klauspost/compress/zstd"
	"github.com/pierrec/lz4/v4"
)

func TestDecompressCodecs(t *testing.T) {
	raw := bytes.Repeat([]byte("ktool records "), 500)

	var gz bytes.Buffer
	gw := gzip.NewWriter(&gz)
	if _, err := gw.Write(raw); err != nil {
		t.Fatal(err)
	}
	if err := gw.Close(); err != nil {
		t.Fatal(err)
	}

	var lz bytes.Buffer
	lw := lz4.NewWriter(&lz)
	if _, err := lw.Write(raw); err != nil {
		t.Fatal(err)
	}
	if err := lw.Close(); err != nil {
		t.Fatal(err)
	}

	enc, err := zstd.NewWriter(nil)
	if err != nil {
		t.Fatal(err)
	}
	zs := enc.EncodeAll(raw, nil)
	if err := enc.Close(); err != nil {
		t.Fatal(err)
	}

	// snappy-java framing: header, version 1, compatible 1, then blocks.
	xerial := append(append([]byte(nil), xerialHeader...), 0, 0, 0, 1, 0, 0, 0, 1)
	for _, part := range [][]byte{raw[:3000], raw[3000:]} {
		block := snappy.Encode(nil, part)
		xerial = binary.BigEndian.AppendUint32(xerial, uint32(len(block)))
		xerial = append(xerial, block...)
	}

	for _, tc := range []struct {
		name  string
		codec int8
		data  []byte
	}{
		{"none", 0, raw},
		{"gzip", 1, gz.Bytes()},
		{"snappy", 2, snappy.Encode(nil, raw)},
		{"snappy xerial", 2, xerial},
		{"lz4", 3, lz.Bytes()},
		{"zstd", 4, zs},
	} {
		got, err := decompress(tc.codec, tc.data)
		if err != nil || !bytes.Equal(got, raw) {
			t.Errorf("%s: %d bytes, %v", tc.name, len(got), err)
		}
	}
	if _, err := decompress(5, raw); err == nil {
		t.Error("codec 5 accepted")
	}
	if _, err := decompress(2, xerial[:len(xerial)-5]); err == nil {
		t.Error("torn xerial block accepted")
	}
}
