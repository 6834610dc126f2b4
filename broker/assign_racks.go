package broker

import (
	"fmt"
	"slices"

	"github.com/ktoolhq/ktool/broker/controller"
	"github.com/ktoolhq/ktool/internal/zkdata"
)

// brokerRacks reads the broker.rack of each live broker from its
// registration; a broker without one maps to "".
func (b *Broker) brokerRacks(live []int32) map[int32]string {
	racks := make(map[int32]string, len(live))
	for _, id := range live {
		racks[id] = ""
		data, _, err := b.Store().Get(b.ctx, zkdata.BrokerPath(id))
		if err != nil {
			continue
		}
		if info, err := zkdata.DecodeBrokerInfo(id, data); err == nil {
			racks[id] = info.Rack
		}
	}
	return racks
}

// assignReplicas places new partitions: rack-aware (Kafka's rack-alternating
// assignment) when every live broker has a broker.rack, round-robin when
// none has; a mix is refused, as Kafka refuses it. start is the index of the
// first replica of the first partition in the broker order the assignment
// walks (-1: random); firstReplica, when >= 0, names that broker instead.
func (b *Broker) assignReplicas(live []int32, partitions, rf int, firstPartition int32, firstReplica int32) (map[int32][]int32, error) {
	racks := b.brokerRacks(live)
	withRack := 0
	for _, r := range racks {
		if r != "" {
			withRack++
		}
	}
	if withRack == 0 {
		start := -1
		if firstReplica >= 0 {
			start = indexOf(sortedIDs(live), firstReplica)
		}
		return controller.AssignReplicas(live, partitions, rf, firstPartition, start)
	}
	if withRack != len(racks) {
		return nil, fmt.Errorf("%d of %d live brokers have a broker.rack: rack-aware assignment needs every broker to have one (or give an explicit assignment)", withRack, len(racks))
	}
	start := -1
	if firstReplica >= 0 {
		start = indexOf(controller.RackAlternated(racks), firstReplica)
	}
	return controller.AssignReplicasRackAware(racks, partitions, rf, firstPartition, start)
}

func sortedIDs(ids []int32) []int32 {
	out := slices.Clone(ids)
	slices.Sort(out)
	return out
}

// indexOf is the index of id in ids, 0 when it is not there.
func indexOf(ids []int32, id int32) int {
	for i, x := range ids {
		if x == id {
			return i
		}
	}
	return 0
}
