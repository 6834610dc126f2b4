package compat

import (
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestCrossClient has librdkafka and kafkajs read what the other wrote: kcat
// produces and kafkajs consumes in a group, kafkajs produces gzip and kcat
// consumes. Records, keys, headers and timestamps must come through unchanged.
// gzip is the one codec kafkajs reads without a codec plugin.
func TestCrossClient(t *testing.T) {
	kcat := needKcat(t)
	js := newKafkajs(t)
	b := startStandalone(t)
	ctx := testCtx(t, 2*time.Minute)

	createTopic(t, b.Addr(), "from-kcat", 2, 1, nil)
	var in strings.Builder
	for i := range 30 {
		fmt.Fprintf(&in, "k%d:librdkafka value %d\n", i, i)
	}
	run(ctx, t, []byte(in.String()), kcat, "-b", b.Addr(), "-P", "-t", "from-kcat", "-K:", "-H", "origin=kcat", "-z", "gzip")
	c := js.startConsumer(ctx, t, b.Addr(), "from-kcat", "cross", "30")
	eventually(t, time.Minute, func() error {
		if _, ok := c.finished(); !ok {
			return fmt.Errorf("kafkajs read %d of 30 records", len(c.messages()))
		}
		return nil
	})
	got := map[string]string{}
	for _, m := range c.messages() {
		if m.Key == nil || m.Value == nil || m.Headers["origin"] == nil || *m.Headers["origin"] != "kcat" {
			t.Fatalf("kafkajs read %+v", m)
		}
		got[*m.Key] = *m.Value
	}
	for i := range 30 {
		if k := "k" + strconv.Itoa(i); got[k] != "librdkafka value "+strconv.Itoa(i) {
			t.Errorf("kafkajs read %s = %q", k, got[k])
		}
	}

	createTopic(t, b.Addr(), "from-kafkajs", 1, 1, nil)
	firstTs := time.Date(2024, 7, 1, 0, 0, 0, 0, time.UTC).UnixMilli()
	run(ctx, t, nil, js.node, js.script, "produce", b.Addr(), "from-kafkajs", "20", "gzip", strconv.FormatInt(firstTs, 10))
	msgs := parseKcatJSON(t, run(ctx, t, nil, kcat, "-b", b.Addr(), "-C", "-t", "from-kafkajs", "-o", "beginning", "-e", "-q", "-J"))
	if len(msgs) != 20 {
		t.Fatalf("kcat read %d records, want 20", len(msgs))
	}
	for i, m := range msgs {
		want := fmt.Sprintf("v%d-%s", i, strings.Repeat("x", i))
		if m.Offset != int64(i) || m.Key == nil || *m.Key != "k"+strconv.Itoa(i) || m.Payload == nil || *m.Payload != want ||
			m.Ts != firstTs+int64(i) || strings.Join(m.Headers, ",") != "i,"+strconv.Itoa(i)+",src,kafkajs" {
			t.Errorf("kcat read %+v", m)
		}
	}
}
