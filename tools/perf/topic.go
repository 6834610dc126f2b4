package perf

import (
	"context"
	"errors"
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/ktoolhq/ktool/tools/cmdutil"
)

// ensureTopic creates topic if the cluster does not know it.
func ensureTopic(ctx context.Context, f *cmdutil.Factory, topic string, partitions int32, rf int16) error {
	adm, err := f.Admin()
	if err != nil {
		return err
	}
	defer adm.Close()
	rctx, cancel := f.RequestContext(ctx)
	defer cancel()
	topics, err := adm.ListTopics(rctx, topic)
	if err != nil {
		return fmt.Errorf("looking up topic %s: %w", topic, err)
	}
	if topics.Has(topic) {
		if terr := topics[topic].Err; terr != nil {
			return fmt.Errorf("topic %s: %w", topic, terr)
		}
		return nil
	}
	resp, err := adm.CreateTopic(rctx, partitions, rf, nil, topic)
	if err != nil {
		return fmt.Errorf("creating topic %s: %w", topic, err)
	}
	if resp.Err != nil && !errors.Is(resp.Err, kerr.TopicAlreadyExists) {
		return fmt.Errorf("creating topic %s: %w", topic, resp.Err)
	}
	return nil
}

// requireTopic fails clearly when topic does not exist, instead of letting a
// consumer wait for records that can never come.
func requireTopic(ctx context.Context, f *cmdutil.Factory, topic string) error {
	adm, err := f.Admin()
	if err != nil {
		return err
	}
	defer adm.Close()
	rctx, cancel := f.RequestContext(ctx)
	defer cancel()
	topics, err := adm.ListTopics(rctx, topic)
	if err != nil {
		return fmt.Errorf("looking up topic %s: %w", topic, err)
	}
	if !topics.Has(topic) {
		return fmt.Errorf("topic %s does not exist", topic)
	}
	if terr := topics[topic].Err; terr != nil {
		return fmt.Errorf("topic %s: %w", topic, terr)
	}
	return nil
}
