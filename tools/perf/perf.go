package perf

import (
	"fmt"
	"io"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"
	"github.com/spf13/cobra"

	"github.com/ktoolhq/ktool/tools/cmdutil"
)

// NewCommand returns `ktool perf` with its produce and consume subcommands.
func NewCommand(f *cmdutil.Factory) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "perf",
		Short: "Measure produce and consume throughput and latency",
		Long: `Measure how fast a cluster takes and serves records, like Kafka's
kafka-producer-perf-test and kafka-consumer-perf-test. Results are records/s,
MB/s (MB = 2^20 bytes) and latency avg/p50/p99/p99.9/max in milliseconds.`,
		Args: cobra.NoArgs,
	}
	cmd.AddCommand(newProduceCommand(f), newConsumeCommand(f))
	return cmd
}

// Result is the summary of one perf run, printed as a table or as JSON/YAML.
type Result struct {
	Records       int64    `json:"records" yaml:"records"`
	Bytes         int64    `json:"bytes" yaml:"bytes"`
	Seconds       float64  `json:"seconds" yaml:"seconds"`
	RecordsPerSec float64  `json:"records_per_sec" yaml:"records_per_sec"`
	MBPerSec      float64  `json:"mb_per_sec" yaml:"mb_per_sec"`
	Latency       *Latency `json:"latency_ms,omitempty" yaml:"latency_ms,omitempty"`
	// Fetches is how many fetch round trips the consume latency covers.
	Fetches int64 `json:"fetches,omitempty" yaml:"fetches,omitempty"`
	// RebalanceSeconds is how long a group consumer waited for its first
	// assignment; Seconds starts after it.
	RebalanceSeconds float64 `json:"rebalance_seconds,omitempty" yaml:"rebalance_seconds,omitempty"`
	// Transactions is how many transactions were committed (perf produce --transactional).
	Transactions int64 `json:"transactions,omitempty" yaml:"transactions,omitempty"`
}

// Latency summarises a latency histogram in milliseconds.
type Latency struct {
	Avg  float64 `json:"avg" yaml:"avg"`
	P50  float64 `json:"p50" yaml:"p50"`
	P99  float64 `json:"p99" yaml:"p99"`
	P999 float64 `json:"p999" yaml:"p999"`
	Max  float64 `json:"max" yaml:"max"`
}

const bytesPerMB = 1 << 20

// newResult fills in the rates; a run that took no time has no rate.
func newResult(records, bytes int64, elapsed time.Duration) *Result {
	r := &Result{Records: records, Bytes: bytes, Seconds: elapsed.Seconds()}
	if r.Seconds > 0 {
		r.RecordsPerSec = float64(records) / r.Seconds
		r.MBPerSec = float64(bytes) / bytesPerMB / r.Seconds
	}
	return r
}

// newHistogram tracks latencies in microseconds from 1µs to one hour with
// three significant digits.
func newHistogram() *hdrhistogram.Histogram {
	return hdrhistogram.New(1, int64(time.Hour/time.Microsecond), 3)
}

// recordLatency stores d, clamping to the histogram's range so an outlier is
// counted at the edge instead of being dropped.
func recordLatency(h *hdrhistogram.Histogram, d time.Duration) {
	us := max(d.Microseconds(), 1)
	us = min(us, h.HighestTrackableValue())
	_ = h.RecordValue(us) // in range by construction
}

// summarize returns nil for an empty histogram: no latency was observed.
func summarize(h *hdrhistogram.Histogram) *Latency {
	if h.TotalCount() == 0 {
		return nil
	}
	ms := func(us int64) float64 { return float64(us) / 1000 }
	return &Latency{
		Avg:  h.Mean() / 1000,
		P50:  ms(h.ValueAtQuantile(50)),
		P99:  ms(h.ValueAtQuantile(99)),
		P999: ms(h.ValueAtQuantile(99.9)),
		Max:  ms(h.Max()),
	}
}

// printResult writes r in the chosen format; latencyName labels the latency
// rows in the table ("latency" for produce, "fetch latency" for consume).
func printResult(w io.Writer, out *cmdutil.OutputFlag, r *Result, latencyName string) error {
	return out.Print(w, r, func() error {
		t := cmdutil.NewTable(w)
		rows := [][]string{
			{"records", fmt.Sprint(r.Records)},
			{"bytes", fmt.Sprint(r.Bytes)},
			{"seconds", fmt.Sprintf("%.3f", r.Seconds)},
			{"records/s", fmt.Sprintf("%.1f", r.RecordsPerSec)},
			{"MB/s", fmt.Sprintf("%.2f", r.MBPerSec)},
		}
		if r.RebalanceSeconds > 0 {
			rows = append(rows, []string{"rebalance seconds", fmt.Sprintf("%.3f", r.RebalanceSeconds)})
		}
		if r.Fetches > 0 {
			rows = append(rows, []string{"fetches", fmt.Sprint(r.Fetches)})
		}
		if r.Transactions > 0 {
			rows = append(rows, []string{"transactions", fmt.Sprint(r.Transactions)})
		}
		if l := r.Latency; l != nil {
			rows = append(rows,
				[]string{latencyName + " avg ms", fmt.Sprintf("%.3f", l.Avg)},
				[]string{latencyName + " p50 ms", fmt.Sprintf("%.3f", l.P50)},
				[]string{latencyName + " p99 ms", fmt.Sprintf("%.3f", l.P99)},
				[]string{latencyName + " p99.9 ms", fmt.Sprintf("%.3f", l.P999)},
				[]string{latencyName + " max ms", fmt.Sprintf("%.3f", l.Max)},
			)
		}
		for _, row := range rows {
			if err := t.Append(row); err != nil {
				return err
			}
		}
		return t.Render()
	})
}
