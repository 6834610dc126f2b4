package cmdutil

import (
	"context"

	"github.com/twmb/franz-go/pkg/kadm"
)

// Metadata reads metadata from the cluster itself. kadm normally answers from
// the client's metadata cache (up to kgo's MetadataMinAge old); watches and
// before/after comparisons must see a leader or ISR change at once. Asking for
// authorized operations is how kadm is told to skip the cache.
func Metadata(ctx context.Context, adm *kadm.Client, topics ...string) (kadm.Metadata, error) {
	return adm.Metadata(kadm.WithAuthorizedOps(ctx), topics...)
}
