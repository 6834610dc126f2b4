package zkdata

import "testing"

// FuzzDecode feeds arbitrary bytes to every decoder: znodes can be edited
// by hand, so bad data must come back as an error, never a panic.
func FuzzDecode(f *testing.F) {
	for _, seed := range []string{
		`{"features":{},"listener_security_protocol_map":{"PLAINTEXT":"PLAINTEXT"},"endpoints":["PLAINTEXT://localhost:9092"],"jmx_port":-1,"port":9092,"host":"localhost","version":5,"timestamp":"1624550219513"}`,
		`{"version":2,"partitions":{"0":[1,2]},"adding_replicas":{},"removing_replicas":{}}`,
		`{"controller_epoch":1,"leader":2,"version":1,"leader_epoch":5,"isr":[2,3]}`,
		`{"version":1,"partitions":[{"topic":"t","partition":0,"replicas":[1]}]}`,
		`{"version":2,"entity_path":"topics/t"}`,
		`{"version":1,"config":{"a":"b"}}`,
		`17`,
		`{"version":1,"controller_epoch":7,"token":"MDEyMzQ1Njc4OWFiY2RlZg=="}`,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		DecodeBrokerInfo(1, data)
		DecodeTopicAssignment(data)
		DecodeLeaderIsr(data, 0)
		DecodeController(data)
		DecodeControllerEpoch(data)
		DecodeControllerToken(data)
		DecodeClusterID(data)
		DecodeIsrChange(data)
		DecodePreferredReplicaElection(data)
		DecodeReassignment(data)
		DecodeLogDirEvent(data)
		DecodeConfig(data)
		DecodeConfigChange(data)
	})
}
