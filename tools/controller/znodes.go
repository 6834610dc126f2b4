package controller

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// ControllerZNode is the content of Kafka's /controller znode:
// {"version":1,"brokerid":N,"timestamp":"<epoch ms>"}.
type ControllerZNode struct {
	Version   int
	BrokerID  int32
	Timestamp time.Time
}

// ParseControllerZNode decodes /controller. Kafka writes the timestamp as a
// string; a number is accepted too.
func ParseControllerZNode(b []byte) (ControllerZNode, error) {
	var raw struct {
		Version   *int            `json:"version"`
		BrokerID  *int32          `json:"brokerid"`
		Timestamp json.RawMessage `json:"timestamp"`
	}
	if err := json.Unmarshal(b, &raw); err != nil {
		return ControllerZNode{}, fmt.Errorf("/controller holds %q, not Kafka's JSON: %w", b, err)
	}
	if raw.BrokerID == nil {
		return ControllerZNode{}, fmt.Errorf("/controller holds %q, which has no brokerid", b)
	}
	z := ControllerZNode{BrokerID: *raw.BrokerID}
	if raw.Version != nil {
		z.Version = *raw.Version
	}
	if len(raw.Timestamp) > 0 {
		ms, err := strconv.ParseInt(strings.Trim(string(raw.Timestamp), `"`), 10, 64)
		if err != nil {
			return ControllerZNode{}, fmt.Errorf("/controller timestamp %s is not epoch milliseconds", raw.Timestamp)
		}
		z.Timestamp = time.UnixMilli(ms).UTC()
	}
	return z, nil
}

// ParseControllerEpoch decodes /controller_epoch, an integer written as text.
func ParseControllerEpoch(b []byte) (int32, error) {
	s := strings.Trim(strings.TrimSpace(string(b)), `"`)
	n, err := strconv.ParseInt(s, 10, 32)
	if err != nil {
		return 0, fmt.Errorf("/controller_epoch holds %q, not an integer", b)
	}
	return int32(n), nil
}
