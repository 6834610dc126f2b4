package perf

import (
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/ktoolhq/ktool/tools/cmdutil"
)

// progressInterval is how often the terminal progress line is refreshed at most.
const progressInterval = 500 * time.Millisecond

// progress redraws one status line on a terminal while a run is going.
type progress struct {
	w        io.Writer
	verb     string
	total    int64
	snapshot func() (records, bytes int64)

	stopOnce sync.Once
	done     chan struct{}
	finished chan struct{}
}

// startProgress draws a line every interval until stop is called; total 0
// means the run has no fixed record count.
func startProgress(w io.Writer, interval time.Duration, verb string, total int64, snapshot func() (int64, int64)) *progress {
	p := &progress{w: w, verb: verb, total: total, snapshot: snapshot,
		done: make(chan struct{}), finished: make(chan struct{})}
	go p.run(interval)
	return p
}

func (p *progress) run(interval time.Duration) {
	defer close(p.finished)
	tick := time.NewTicker(interval)
	defer tick.Stop()
	start := time.Now()
	lastAt, lastRecords, lastBytes := start, int64(0), int64(0)
	for {
		select {
		case <-p.done:
			// The final count only: the summary that follows has the run's one
			// duration (a second one here, measured from another start, only
			// disagreed with it).
			records, _ := p.snapshot()
			fmt.Fprintf(p.w, "\r\033[K%s %s\n", p.verb, p.count(records))
			return
		case now := <-tick.C:
			records, bytes := p.snapshot()
			secs := now.Sub(lastAt).Seconds()
			fmt.Fprintf(p.w, "\r\033[K%s %s  %.0f records/s  %.2f MB/s",
				p.verb, p.count(records),
				float64(records-lastRecords)/secs, float64(bytes-lastBytes)/bytesPerMB/secs)
			lastAt, lastRecords, lastBytes = now, records, bytes
		}
	}
}

func (p *progress) count(records int64) string {
	if p.total > 0 {
		return fmt.Sprintf("%d/%d records", records, p.total)
	}
	return fmt.Sprintf("%d records", records)
}

// stop draws the final line and waits for the drawing goroutine to end.
func (p *progress) stop() {
	if p == nil {
		return
	}
	p.stopOnce.Do(func() { close(p.done) })
	<-p.finished
}

// maybeProgress starts a progress line on stderr when stdout is a terminal,
// and returns nil (a valid, silent progress) otherwise.
func maybeProgress(f *cmdutil.Factory, verb string, total int64, snapshot func() (int64, int64)) *progress {
	if !f.IO.IsStdoutTTY() {
		return nil
	}
	return startProgress(f.IO.ErrOut, progressInterval, verb, total, snapshot)
}
