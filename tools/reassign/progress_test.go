package reassign

import (
	"bytes"
	"strings"
	"testing"
	"time"
)

// The progress line: a bar of the bytes copied, the partitions done, and the
// rate and ETA from the previous sample.
func TestProgressLine(t *testing.T) {
	at := time.Unix(1000, 0)
	prev := Status{Partitions: make([]PartitionStatus, 4), Complete: 1, BytesTotal: 100 << 20, BytesDone: 20 << 20, At: at}
	now := prev
	now.Complete, now.BytesDone, now.At = 2, 50<<20, at.Add(10*time.Second)
	var out bytes.Buffer
	p := &progressLine{w: &out}
	p.draw(now, &prev)
	line := out.String()
	for _, want := range []string{
		"\r\033[K[" + strings.Repeat("#", 15) + strings.Repeat(".", 15) + "]", // half of the bytes
		" 50% 50.0 MiB of 100.0 MiB, 2 of 4 partitions done",
		", 3.0 MiB/s, ETA 17s", // 30 MiB in 10 s, 50 MiB left
	} {
		if !strings.Contains(line, want) {
			t.Errorf("progress line %q lacks %q", line, want)
		}
	}
	out.Reset()
	p.end()
	if out.String() != "\r\033[K" {
		t.Errorf("end wrote %q, want the line cleared", out.String())
	}
	out.Reset()
	p.end()
	if out.Len() != 0 {
		t.Errorf("a second end wrote %q", out.String())
	}
	var none *progressLine
	none.draw(now, &prev) // off a terminal: nothing, no panic
	none.end()
}

func TestRateETA(t *testing.T) {
	at := time.Unix(1000, 0)
	s := Status{BytesTotal: 10 << 20, BytesDone: 4 << 20, At: at.Add(2 * time.Second)}
	for _, tc := range []struct {
		name string
		prev *Status
		want string
	}{
		{"first sample", nil, ""},
		{"nothing moved", &Status{BytesDone: 4 << 20, At: at}, ""},
		{"same instant", &Status{BytesDone: 1 << 20, At: s.At}, ""},
		{"2 MiB/s, 6 MiB left", &Status{BytesDone: 0, At: at}, ", 2.0 MiB/s, ETA 3s"},
	} {
		if got := rateETA(s, tc.prev); got != tc.want {
			t.Errorf("%s: %q, want %q", tc.name, got, tc.want)
		}
	}
}
