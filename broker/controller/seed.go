package controller

import "github.com/ktoolhq/ktool/internal/zkdata"

// A new controller's warm start.
//
// Every broker keeps the last controller's view of every partition in its
// metadata cache: UpdateMetadata carries each partition's leader, leader
// epoch, ISR and the version of the state znode they were read at. Reading
// the 10,000 state znodes of a 10,000-partition cluster took 2.3-3 s of a
// 4 s failover when the controller itself died. So a broker that wins the
// election starts from its copy: it reads the broker registrations, the
// topic list and the assignments from the store (one read per topic), takes
// each partition's state from the copy, elects leaders for the partitions
// the dead brokers led and tells the brokers; then it reads every state back
// from the store and carries on as a controller without a copy does.
//
// A stale copy cannot make a wrong election. A state znode's version changes
// with every write, and every state write is conditional on the version its
// decision was computed from (writeStates): an entry that a leader (an ISR
// change) or the old controller wrote after the copy was made fails its write
// with BadVersion and is read from the store and decided again (updateAll).
// The copy never stands for what it cannot know: a topic it lacks, or holds
// under another topic id (an earlier topic of that name), and a partition it
// lacks or holds without a leader epoch are read from the store, and the
// assignments (AR, reassignments), the brokers and the deletions always are.
// What a stale entry can do is show the brokers, in the first UpdateMetadata,
// an ISR older than the store's until the read back sends the difference a
// moment later; clients keep the newest leader epoch they have seen.

// Seed is a broker's copy of the last controller's view, by topic.
type Seed map[string]SeedTopic

// SeedTopic is one topic of a Seed: its id (KIP-516) and its partitions'
// states, each with the version of its state znode (ZkVersion).
type SeedTopic struct {
	ID         [16]byte
	Partitions map[int32]zkdata.LeaderIsr
}

// seed is this broker's copy of the view (nil without one).
func (c *Controller) seed() Seed {
	if c.cfg.Seed == nil {
		return nil
	}
	return c.cfg.Seed()
}

// warmStart elects leaders where the seeded view needs them and tells the
// brokers, before the states are read back (readBack).
func (c *Controller) warmStart() error {
	names, _, err := c.store.Children(c.ctx, zkdata.DeleteTopicsPath)
	if err != nil {
		return err
	}
	c.markDeletes(names)
	for id := range c.brokers {
		c.ensureSender(id)
	}
	c.sendLeaderAndIsr(c.electOffline(c.allPartitions(), false), nil)
	c.sendUpdateMetadata()
	c.publish()
	return nil
}

// readBack replaces the seeded states by the store's.
func (c *Controller) readBack(seeded []TP) error {
	return c.readStates(seeded, c.states)
}
