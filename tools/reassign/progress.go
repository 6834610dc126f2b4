package reassign

import (
	"fmt"
	"io"
	"strings"
	"time"
)

// progressLine redraws one line on a terminal: a bar, bytes copied, rate, ETA.
// A nil progressLine draws nothing.
type progressLine struct {
	w     io.Writer
	drawn bool
}

const barWidth = 30

func (p *progressLine) draw(s Status, prev *Status) {
	if p == nil {
		return
	}
	frac := 0.0
	if s.BytesTotal > 0 {
		frac = min(float64(s.BytesDone)/float64(s.BytesTotal), 1)
	}
	n := int(frac * barWidth)
	fmt.Fprintf(p.w, "\r\033[K[%s%s] %3.0f%% %s of %s, %d of %d partitions done%s",
		strings.Repeat("#", n), strings.Repeat(".", barWidth-n), frac*100,
		humanBytes(s.BytesDone), humanBytes(s.BytesTotal), s.Complete, len(s.Partitions), rateETA(s, prev))
	p.drawn = true
}

func (p *progressLine) end() {
	if p != nil && p.drawn {
		fmt.Fprint(p.w, "\r\033[K")
		p.drawn = false
	}
}

// rateETA is ", 1.2 MiB/s, ETA 40s" from two samples, or "" without a rate.
func rateETA(s Status, prev *Status) string {
	if prev == nil {
		return ""
	}
	secs := s.At.Sub(prev.At).Seconds()
	moved := s.BytesDone - prev.BytesDone
	if secs <= 0 || moved <= 0 {
		return ""
	}
	rate := float64(moved) / secs
	eta := time.Duration(float64(s.BytesTotal-s.BytesDone) / rate * float64(time.Second)).Round(time.Second)
	return fmt.Sprintf(", %s/s, ETA %s", humanBytes(int64(rate)), eta)
}

func humanBytes(n int64) string {
	switch {
	case n >= 1<<30:
		return fmt.Sprintf("%.1f GiB", float64(n)/(1<<30))
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%.1f KiB", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%d B", n)
}

func humanRate(n int64) string { return humanBytes(n) + "/s" }
