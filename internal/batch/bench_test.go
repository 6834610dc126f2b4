package batch_test

import (
	"context"
	"testing"

	"github.com/ktoolhq/ktool/internal/batch"
	"github.com/ktoolhq/ktool/plugins/codec"
)

// BenchmarkCheckProduce measures what validating one producer batch costs:
// 1,000 records of 100-byte values (as scripts/bench/bench.sh produces), the
// header, the CRC and the walk over every record, decompressing for the
// compressed codecs. MB/s is over the uncompressed records section;
// ns/record is wall time per record, cpu-ns/record the process's CPU time
// per record (steadier on a shared machine; it includes the GC).
func BenchmarkCheckProduce(b *testing.B) {
	const n = 1000
	r := rules()
	for _, id := range allCodecs {
		b.Run(codec.NameForID(id), func(b *testing.B) {
			s := spec{n: n, codec: id, value: 100}
			bt := build(b, s)
			b.SetBytes(int64(len(section(s))))
			b.ReportAllocs()
			start := cpuTime()
			for b.Loop() {
				if _, err := batch.CheckProduce(context.Background(), bt, r); err != nil {
					b.Fatal(err)
				}
			}
			cpu := cpuTime() - start
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/record")
			b.ReportMetric(float64(cpu.Nanoseconds())/float64(b.N*n), "cpu-ns/record")
		})
	}
}
