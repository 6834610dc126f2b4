package broker

import (
	"context"
	"fmt"
	"math"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/ktoolhq/ktool/internal/batch"
	"github.com/ktoolhq/ktool/plugins/codec"
)

// CodecSource finds compression codecs by Kafka codec id: the plugin catalog
// in production (external plugins override the built-ins, which run in
// process). It is resolved once per id and shared by produce validation and
// recompression, the logs (cleaner, timestamp lookups) and the group
// coordinator.
type CodecSource = batch.Codecs

// topicCompression is a topic's compression.type and its overrides, looked
// up once per topic of a produce request (the synonym walk of a config
// lookup is not free), and only for a partition this broker leads: an
// unknown topic name asks nothing of the store.
func (b *Broker) topicCompression(topic string) (string, map[string]string) {
	overrides := b.topicOverrides(topic)
	return b.cfg.TopicCompression(overrides), overrides
}

// maybeRecompress rewrites batches to the topic's compression.type ct (from
// topicCompression, with the topic's overrides). With "producer" (the
// default) the bytes are returned untouched: no codec compresses on the
// produce path. Otherwise the batch's records are walked before anything is
// inflated, decompression stops at the topic's limit
// (batch.DecompressLimit), and the log validates the rewritten batch again,
// with the topic's timestamp and key rules, before it is appended.
func (b *Broker) maybeRecompress(ctx context.Context, ct string, overrides map[string]string, records []byte) ([]byte, error) {
	if ct == "producer" || ct == "" {
		return records, nil
	}
	maxMessageBytes := int(b.cfg.Topic(overrides).MaxMessageBytes)
	to := codec.IDNone
	if ct != "uncompressed" {
		id, ok := codec.IDForName(ct)
		if !ok {
			return nil, fmt.Errorf("%w: unknown compression.type %q", kerr.InvalidConfig, ct)
		}
		to = id
	}
	// Walk the records first, streaming: a bomb or a lie stops at its first
	// bad record instead of being inflated whole to be recompressed.
	ratio := b.cfg.Settings().MessageDecompressionMaxRatio
	if _, err := batch.CheckProduce(ctx, records, batch.Rules{Codecs: b.codecs, MaxMessageBytes: maxMessageBytes, DecompressRatio: ratio, TimestampDiffMaxMs: math.MaxInt64}); err != nil {
		return nil, err
	}
	out, err := batch.Recompress(ctx, b.codecs, records, to, batch.DecompressLimit(maxMessageBytes, ratio))
	if err != nil {
		return nil, fmt.Errorf("recompressing to %s: %w", ct, err)
	}
	return out, nil
}
