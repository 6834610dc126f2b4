package log

import (
	"context"

	"github.com/ktoolhq/ktool/internal/batch"
	"github.com/ktoolhq/ktool/plugins/codec"
)

// eachRecord calls fn for each record of the whole batch b, decompressing it
// through codecs first. Batches in a log were checked when they were
// appended, so reading one is bounded by codec.MaxDecompressed rather than by
// today's max.message.bytes, which may have been lowered since.
func eachRecord(ctx context.Context, codecs batch.Codecs, h batch.Header, b []byte, fn func(batch.Record) error) error {
	return batch.Records(ctx, codecs, h, b, codec.MaxDecompressed, fn)
}
