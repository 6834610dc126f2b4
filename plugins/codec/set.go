package codec

import (
	"context"
	"fmt"
)

// Set resolves codecs by Kafka id from a table built once; lookups allocate
// nothing and never build a codec.
type Set struct {
	byID [IDZstd + 1]Codec
}

// NewSet returns a set of codecs; a later codec with the same id wins.
func NewSet(codecs ...Codec) *Set {
	s := &Set{}
	for _, c := range codecs {
		if id := c.ID(); id > IDNone && id <= IDZstd {
			s.byID[id] = c
		}
	}
	return s
}

// CodecByID returns the codec with Kafka id id.
func (s *Set) CodecByID(_ context.Context, id int8) (Codec, error) {
	if id > IDNone && id <= IDZstd && s.byID[id] != nil {
		return s.byID[id], nil
	}
	return nil, fmt.Errorf("no codec with id %d (known: 1 gzip, 2 snappy, 3 lz4, 4 zstd)", id)
}
