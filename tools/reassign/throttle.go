package reassign

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/twmb/franz-go/pkg/kadm"

	"github.com/ktoolhq/ktool/tools/cmdutil"
)

// The replication throttle configs (KIP-73), as kafka-reassign-partitions.sh
// sets them: rates on every broker taking part, and on each topic the
// replicas throttled on the leader side (where the data is) and on the
// follower side (where it goes).
const (
	LeaderRate       = "leader.replication.throttled.rate"
	FollowerRate     = "follower.replication.throttled.rate"
	LeaderReplicas   = "leader.replication.throttled.replicas"
	FollowerReplicas = "follower.replication.throttled.replicas"
)

// throttleLists computes each topic's throttled replica lists for moving cur to next.
func throttleLists(cur, next Assignment) map[string][2]string {
	out := map[string][2]string{}
	for t, ps := range next {
		var leader, follower []string
		parts := make([]int32, 0, len(ps))
		for p := range ps {
			parts = append(parts, p)
		}
		slices.Sort(parts)
		for _, p := range parts {
			from, to := cur[t][p], ps[p]
			moving := false
			for _, r := range to {
				if !slices.Contains(from, r) {
					moving = true
					follower = append(follower, fmt.Sprintf("%d:%d", p, r))
				}
			}
			if moving {
				for _, r := range from {
					leader = append(leader, fmt.Sprintf("%d:%d", p, r))
				}
			}
		}
		if len(follower) > 0 {
			out[t] = [2]string{strings.Join(leader, ","), strings.Join(follower, ",")}
		}
	}
	return out
}

// brokersOf lists every broker holding or receiving a replica of a moving partition.
func brokersOf(cur, next Assignment) []int32 {
	var out []int32
	for t, ps := range next {
		for p, rs := range ps {
			for _, r := range append(slices.Clone(cur[t][p]), rs...) {
				if !slices.Contains(out, r) {
					out = append(out, r)
				}
			}
		}
	}
	slices.Sort(out)
	return out
}

// SetThrottles writes the throttle: rate bytes/s on the brokers taking part,
// and the replica lists on the topics.
func SetThrottles(ctx context.Context, adm *kadm.Client, cur, next Assignment, rate int64) error {
	v := strconv.FormatInt(rate, 10)
	for _, b := range brokersOf(cur, next) {
		if err := alterBroker(ctx, adm, b, []kadm.AlterConfig{
			{Op: kadm.SetConfig, Name: LeaderRate, Value: &v},
			{Op: kadm.SetConfig, Name: FollowerRate, Value: &v},
		}); err != nil {
			return fmt.Errorf("setting the throttle rate on broker %d: %w", b, err)
		}
	}
	lists := throttleLists(cur, next)
	topics := make([]string, 0, len(lists))
	for t := range lists {
		topics = append(topics, t)
	}
	sort.Strings(topics)
	for _, t := range topics {
		l, f := lists[t][0], lists[t][1]
		if err := alterTopic(ctx, adm, t, []kadm.AlterConfig{
			{Op: kadm.SetConfig, Name: LeaderReplicas, Value: &l},
			{Op: kadm.SetConfig, Name: FollowerReplicas, Value: &f},
		}); err != nil {
			return fmt.Errorf("setting the throttled replicas of topic %s: %w", t, err)
		}
	}
	return nil
}

// RemoveThrottles deletes the throttle configs from the brokers and topics.
func RemoveThrottles(ctx context.Context, adm *kadm.Client, brokers []int32, topics []string) error {
	var errs []error
	for _, b := range brokers {
		if err := alterBroker(ctx, adm, b, []kadm.AlterConfig{
			{Op: kadm.DeleteConfig, Name: LeaderRate}, {Op: kadm.DeleteConfig, Name: FollowerRate},
		}); err != nil {
			errs = append(errs, fmt.Errorf("removing the throttle rate of broker %d: %w", b, err))
		}
	}
	for _, t := range topics {
		if err := alterTopic(ctx, adm, t, []kadm.AlterConfig{
			{Op: kadm.DeleteConfig, Name: LeaderReplicas}, {Op: kadm.DeleteConfig, Name: FollowerReplicas},
		}); err != nil {
			errs = append(errs, fmt.Errorf("removing the throttled replicas of topic %s: %w", t, err))
		}
	}
	return errors.Join(errs...)
}

func alterBroker(ctx context.Context, adm *kadm.Client, b int32, alts []kadm.AlterConfig) error {
	resps, err := adm.AlterBrokerConfigs(ctx, alts, b)
	return firstAlterErr(resps, err)
}

func alterTopic(ctx context.Context, adm *kadm.Client, t string, alts []kadm.AlterConfig) error {
	resps, err := adm.AlterTopicConfigs(ctx, alts, t)
	return firstAlterErr(resps, err)
}

func firstAlterErr(resps kadm.AlterConfigsResponses, err error) error {
	if err != nil && len(resps) == 0 {
		return err
	}
	for _, r := range resps {
		if r.Err != nil {
			return cmdutil.WithMessage(r.Err, r.ErrMessage)
		}
	}
	return err
}
