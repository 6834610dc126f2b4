package e2e

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestStaleControllerRequestsAreRefused sends the controller-to-broker requests a
// stranger could send, with controller epoch 0 (the broker's own controller is at
// epoch 1 or later): each must be refused with STALE_CONTROLLER_EPOCH and change
// nothing, so topics can still be created and used afterwards.
func TestStaleControllerRequestsAreRefused(t *testing.T) {
	for _, key := range []int16{4, 5, 6} {
		t.Run(kmsg.NameForKey(key), func(t *testing.T) {
			b := startBroker(t)
			adm := b.Admin(t)
			createTopic(t, adm, "before", 1, nil)
			rc := dialRaw(t, b.Addr())
			req := kmsg.RequestForKey(key)
			req.SetVersion(req.MaxVersion())
			var code int16
			switch r := req.(type) {
			case *kmsg.LeaderAndISRRequest:
				r.Version = 5
				r.ControllerID, r.BrokerEpoch = 0, -1
				resp, err := rc.Request(r)
				if err != nil {
					t.Fatal(err)
				}
				code = resp.(*kmsg.LeaderAndISRResponse).ErrorCode
			case *kmsg.StopReplicaRequest:
				r.Version = 3
				r.ControllerID, r.BrokerEpoch = 0, -1
				st := kmsg.NewStopReplicaRequestTopic()
				st.Topic = "before"
				sp := kmsg.NewStopReplicaRequestTopicPartitionState()
				sp.Partition, sp.LeaderEpoch, sp.Delete = 0, -2, true
				st.PartitionStates = append(st.PartitionStates, sp)
				r.Topics = append(r.Topics, st)
				resp, err := rc.Request(r)
				if err != nil {
					t.Fatal(err)
				}
				code = resp.(*kmsg.StopReplicaResponse).ErrorCode
			case *kmsg.UpdateMetadataRequest:
				r.Version = 7
				r.ControllerID, r.BrokerEpoch = 0, -1
				resp, err := rc.Request(r)
				if err != nil {
					t.Fatal(err)
				}
				code = resp.(*kmsg.UpdateMetadataResponse).ErrorCode
			}
			if code != kerr.StaleControllerEpoch.Code {
				t.Errorf("%s with controller epoch 0: %v, want STALE_CONTROLLER_EPOCH", kmsg.NameForKey(key), kerr.ErrorForCode(code))
			}
			brokerStillWorks(t, b, "before", "a stale "+kmsg.NameForKey(key))
			createTopic(t, adm, "after", 1, nil)
			brokerStillWorks(t, b, "after", "a stale "+kmsg.NameForKey(key))
		})
	}
}
