//go:build !unix

package batch_test

import "time"

// cpuTime is not measured here; the benchmark reports 0 CPU ns/record.
func cpuTime() time.Duration { return 0 }
