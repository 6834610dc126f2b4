package topic

import (
	"encoding/json"
	"testing"
)

func decodeTopics(t *testing.T, s string) []Topic {
	t.Helper()
	var out []Topic
	if err := json.Unmarshal([]byte(s), &out); err != nil {
		t.Fatalf("output is not a JSON topic list: %v\n%s", err, s)
	}
	return out
}
