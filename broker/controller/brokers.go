package controller

import (
	"errors"
	"fmt"
	"slices"

	"github.com/ktoolhq/ktool/broker/coord"
	"github.com/ktoolhq/ktool/internal/zkdata"
)

// Broker registrations: loading them, and what the controller does when brokers
// fail or start.

func (c *Controller) loadBrokers() error {
	ids, _, ch, err := c.store.ChildrenW(c.ctx, zkdata.BrokerIDsPath)
	if err != nil {
		return err
	}
	go c.rearm(ch, c.onBrokerChange)
	live := map[int32]zkdata.BrokerInfo{}
	for _, name := range ids {
		var id int32
		if _, err := fmt.Sscan(name, &id); err != nil {
			continue
		}
		data, st, err := c.store.Get(c.ctx, zkdata.BrokerPath(id))
		if errors.Is(err, coord.ErrNoNode) {
			continue
		}
		if err != nil {
			return err
		}
		info, err := zkdata.DecodeBrokerInfo(id, data)
		if err != nil {
			c.log.Warn("ignoring unreadable broker registration", "broker", id, "err", err)
			continue
		}
		info.Epoch = st.Czxid
		live[id] = info
	}
	c.brokers = live
	return nil
}

// rearm waits for a one-shot watch and queues handler unless the watch died.
func (c *Controller) rearm(ch <-chan coord.Event, handler func()) {
	select {
	case ev, ok := <-ch:
		if !ok || ev.Err != nil {
			return
		}
		c.enqueue(handler)
	case <-c.ctx.Done():
	}
}

func (c *Controller) onBrokerChange() {
	old := c.brokers
	if err := c.loadBrokers(); err != nil {
		c.log.Error("reading brokers; trying again", "err", err)
		c.retrySoon(c.onBrokerChange)
		return
	}
	var dead, born []int32
	for id, info := range old {
		if n, ok := c.brokers[id]; !ok || n.Epoch != info.Epoch {
			dead = append(dead, id)
		}
	}
	for id, info := range c.brokers {
		if o, ok := old[id]; !ok || o.Epoch != info.Epoch {
			born = append(born, id)
		}
	}
	slices.Sort(dead)
	slices.Sort(born)
	if len(dead) > 0 {
		c.log.Info("brokers failed", "brokers", dead)
		c.onBrokersFailed(dead)
	}
	if len(born) > 0 {
		c.log.Info("brokers started", "brokers", born)
		c.onBrokersStarted(born)
	}
	c.retryDeletes()
	c.publish()
}

func (c *Controller) isLive(id int32) bool {
	_, ok := c.brokers[id]
	return ok
}

// brokerSet is the broker set the election rules see.
func (c *Controller) brokerSet() Brokers {
	return Brokers{Registered: c.brokers, Stopping: c.shutting}
}

// brokerSetFor is the broker set the election rules see for tp: brokers
// whose replica of tp is in a failed log dir do not serve it.
func (c *Controller) brokerSetFor(tp TP) Brokers {
	b := c.brokerSet()
	for id, tps := range c.offlineReplicas {
		if tps[tp] {
			if b.Offline == nil {
				b.Offline = map[int32]bool{}
			}
			b.Offline[id] = true
		}
	}
	return b
}

func (c *Controller) onBrokersFailed(dead []int32) {
	for _, id := range dead {
		if s, ok := c.senders[id]; ok {
			s.stop()
			delete(c.senders, id)
		}
		delete(c.shutting, id)
		delete(c.offlineReplicas, id)
	}
	var touched []TP
	for _, tp := range c.allPartitions() {
		st := c.states[tp]
		if c.deleting[tp.Topic] || !st.HasState {
			continue
		}
		hit := false
		for _, d := range dead {
			if st.Leader == d || slices.Contains(st.ISR, d) {
				hit = true
			}
		}
		if hit {
			touched = append(touched, tp)
		}
	}
	// New leaders first, so clients are served again as early as possible; the
	// ISR clean-up of partitions that kept their leader follows.
	c.sendLeaderAndIsr(c.electOffline(touched, false), nil)
	c.sendUpdateMetadata()
	c.sendLeaderAndIsr(c.removeDeadFromIsr(touched), nil)
	c.sendUpdateMetadata()
}

// removeDeadFromIsr takes replicas of dead brokers out of the ISR of partitions
// whose leader is live (never shrinking it to nothing), as Kafka's controller does
// for offline replicas, and returns the partitions it changed.
func (c *Controller) removeDeadFromIsr(tps []TP) []TP {
	tps = slices.DeleteFunc(slices.Clone(tps), func(tp TP) bool { return c.deleting[tp.Topic] || !c.states[tp].HasState })
	return c.updateAll(tps, func(tp TP, st *PartitionState) (zkdata.LeaderIsr, bool) {
		if !st.HasState {
			return st.LeaderIsr, false
		}
		return dropDeadFromIsr(*st, c.brokerSetFor(tp))
	})
}

func (c *Controller) onBrokersStarted(born []int32) {
	for _, id := range born {
		// A restarted broker says again which of its replicas are offline,
		// in its answers to the LeaderAndIsr below.
		delete(c.offlineReplicas, id)
		c.ensureSender(id)
	}
	c.sendUpdateMetadata()
	// Tell the new brokers about every partition they host, then elect leaders for
	// partitions that were offline and can now be led.
	var theirs []TP
	for _, tp := range c.allPartitions() {
		st := c.states[tp]
		for _, id := range born {
			if slices.Contains(st.Replicas, id) {
				theirs = append(theirs, tp)
				break
			}
		}
	}
	changed := c.electOffline(theirs, false)
	c.sendLeaderAndIsr(theirs, born)
	c.sendLeaderAndIsr(changed, nil)
	c.sendUpdateMetadata()
}

// brokerAddr returns a live broker's host:port on the inter-broker listener.
func (c *Controller) brokerAddr(id int32) (string, bool) {
	e, ok := c.interBrokerEndpoint(id)
	if !ok {
		return "", false
	}
	return fmt.Sprintf("%s:%d", e.Host, e.Port), true
}

// interBrokerEndpoint is a live broker's inter-broker listener endpoint.
func (c *Controller) interBrokerEndpoint(id int32) (zkdata.Endpoint, bool) {
	info, ok := c.brokers[id]
	if !ok {
		return zkdata.Endpoint{}, false
	}
	name := c.cfg.InterBrokerListener
	if name == "" {
		name = zkdata.ProtocolPlaintext
	}
	if len(info.Endpoints) == 0 && name == zkdata.ProtocolPlaintext && info.Port >= 0 {
		// A registration with only the top-level host and port.
		return zkdata.Endpoint{Listener: name, SecurityProtocol: name, Host: info.Host, Port: info.Port}, true
	}
	return info.Endpoint(name)
}
