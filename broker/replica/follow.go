package replica

import "errors"

// errNotFollowing is returned for a fetch or truncation answer that no longer
// applies: the partition is no longer a follower of that leader at that
// leader epoch.
var errNotFollowing = errors.New("partition no longer follows this leader at this epoch")

// followingLocked reports whether the partition still follows leader at
// epoch; p.mu held. Every change of the log made on a leader's word (an
// append of fetched batches, a truncation) checks it under p.mu, the lock
// makeLeader and makeFollower take: once this broker has taken a leader epoch
// (or follows another leader), an answer to a question asked before can no
// longer touch the log, whatever the fetcher's own bookkeeping says.
func (p *Partition) followingLocked(leader, epoch int32) bool {
	return !p.leader && !p.deleted && !p.offline && p.state.Leader == leader && p.state.LeaderEpoch == epoch
}

// appendFetched appends batches fetched from leader, asked at leader epoch
// epoch, and then follows the leader's high watermark and log start offset.
func (p *Partition) appendFetched(leader, epoch int32, records []byte, leaderHW, leaderStart int64) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.followingLocked(leader, epoch) {
		return errNotFollowing
	}
	l := p.Log()
	if len(records) > 0 {
		res, err := l.AppendAsFollower(records)
		if err != nil {
			return p.checkStorage(err)
		}
		// flush.messages on a follower: synced before its next fetch tells
		// the leader it has the records (the leader's acks=all counts on it).
		if res.Sync {
			if err := l.Sync(res.LastOffset + 1); err != nil {
				return p.checkStorage(err)
			}
		}
		p.replicaW.wakeAll()
	}
	// The high watermark first: the log refuses a start offset above it.
	if hw := min(leaderHW, l.LogEndOffset()); hw > l.HighWatermark() {
		l.SetHighWatermark(hw)
		p.consumerW.wakeAll()
	}
	if start := min(leaderStart, l.HighWatermark()); start > l.LogStartOffset() {
		if _, err := l.FollowLogStartOffset(start); err != nil {
			p.logger.Warn("following the leader's log start offset", "err", err)
		}
	}
	return nil
}

// truncateFetched cuts the log at offset on leader's word at epoch.
func (p *Partition) truncateFetched(leader, epoch int32, offset int64) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.followingLocked(leader, epoch) {
		return errNotFollowing
	}
	return p.checkStorage(p.Log().TruncateTo(offset))
}

// restartFetched empties the log and starts it at offset (the leader's log
// start, above our log end) on leader's word at epoch.
func (p *Partition) restartFetched(leader, epoch int32, offset int64) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.followingLocked(leader, epoch) {
		return errNotFollowing
	}
	return p.checkStorage(p.Log().TruncateFullyAndStartAt(offset))
}
