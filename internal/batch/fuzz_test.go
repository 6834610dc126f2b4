package batch_test

import (
	"context"
	"errors"
	"math"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/ktoolhq/ktool/internal/batch"
)

// FuzzCheckProduce feeds arbitrary bytes as a producer's records field.
// Refusals must be Kafka errors, never panics; an accepted field must be
// one whole batch whose records the materializing walk (Records) reads the
// same way the streaming one (Scan) did.
func FuzzCheckProduce(f *testing.F) {
	for _, id := range allCodecs {
		f.Add(build(f, spec{n: 3, codec: id}))
		f.Add(build(f, spec{n: 2, codec: id, declared: 3}))
		f.Add(build(f, spec{n: 2, codec: id, trailing: []byte{1}}))
	}
	f.Add(build(f, spec{n: 1, declared: math.MaxInt32}))
	f.Add(batch.EncodeMarker(1, 0, batch.Marker{Type: batch.ControlAbort}, now))
	f.Add(make([]byte, batch.HeaderSize))
	r := batch.Rules{Codecs: builtins, MaxMessageBytes: 1 << 16, CreateTime: true, TimestampDiffMaxMs: 1 << 40, Now: now}
	f.Fuzz(func(t *testing.T, b []byte) {
		h, err := batch.CheckProduce(context.Background(), b, r)
		if err != nil {
			var ke *kerr.Error
			if !errors.As(err, &ke) {
				t.Fatalf("error %v is not a Kafka error", err)
			}
			return
		}
		if h.Size() != int64(len(b)) || !batch.CRCValid(b) || h.NumRecords != h.LastOffsetDelta+1 {
			t.Fatalf("accepted %+v over %d bytes", h, len(b))
		}
		n := int32(0)
		err = batch.Records(context.Background(), builtins, h, b, batch.DecompressLimit(r.MaxMessageBytes, r.DecompressRatio), func(rec batch.Record) error {
			if rec.OffsetDelta != n {
				t.Fatalf("record %d has offset delta %d", n, rec.OffsetDelta)
			}
			n++
			return nil
		})
		if err != nil || n != h.NumRecords {
			t.Fatalf("streamed walk accepted what the materialized one refuses: %d records, %v", n, err)
		}
	})
}
