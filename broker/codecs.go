package broker

import (
	"context"
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/ktoolhq/ktool/plugins/codec"
)

// CodecSource finds compression codecs by Kafka codec id (the plugin catalog in
// production, the built-in codecs by default).
type CodecSource interface {
	CodecByID(ctx context.Context, id int8) (codec.Codec, error)
}

type builtinCodecs struct{}

func (builtinCodecs) CodecByID(_ context.Context, id int8) (codec.Codec, error) {
	return codec.Lookup(codec.Builtins())(id)
}

// maybeRecompress rewrites batches to the topic's compression.type. With
// "producer" (the default) the bytes are returned untouched: no codec is called
// on the produce path.
func (b *Broker) maybeRecompress(ctx context.Context, topic string, records []byte) ([]byte, error) {
	ct := b.cfg.TopicCompression(b.topicOverrides(topic))
	if ct == "producer" || ct == "" {
		return records, nil
	}
	lookup := func(id int8) (codec.Codec, error) { return b.codecs.CodecByID(ctx, id) }
	var to codec.Codec
	if ct != "uncompressed" {
		id, ok := codec.IDForName(ct)
		if !ok {
			return nil, fmt.Errorf("%w: unknown compression.type %q", kerr.InvalidConfig, ct)
		}
		c, err := lookup(id)
		if err != nil {
			return nil, err
		}
		to = c
	}
	out, err := codec.RecompressBatches(ctx, records, to, lookup)
	if err != nil {
		return nil, fmt.Errorf("%w: recompressing to %s: %v", kerr.CorruptMessage, ct, err)
	}
	return out, nil
}
