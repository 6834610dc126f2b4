package plugins_test

import (
	"fmt"
	"testing"

	"github.com/ktoolhq/ktool/assignor"
	"github.com/ktoolhq/ktool/plugins/codec"
)

// benchSections is 4 MiB of JSON-like record values in 1 MiB batches.
func benchSections() [][]byte {
	var out [][]byte
	for range 4 {
		var s []byte
		for i := 0; len(s) < 1<<20; i++ {
			s = fmt.Appendf(s, `{"id":%d,"user":"user-%d","event":"%s","amount":%d.%02d}`,
				i, i%5000, []string{"view", "click", "purchase", "refund"}[i%4], i*7%1000, i%100)
		}
		out = append(out, s)
	}
	return out
}

// BenchmarkCodec compares each built-in codec in process with the same codec
// served by a plugin process; MB/s is over uncompressed bytes, ratio is
// uncompressed/compressed.
func BenchmarkCodec(b *testing.B) {
	ctx := testContext(b)
	cat := newCatalog(b)
	in := benchSections()
	total := 0
	for _, s := range in {
		total += len(s)
	}
	for _, local := range codec.Builtins() {
		remote, err := cat.Codec(ctx, local.Name())
		if err != nil {
			b.Fatal(err)
		}
		comp, err := local.Compress(ctx, in)
		if err != nil {
			b.Fatal(err)
		}
		compressed := 0
		for _, s := range comp {
			compressed += len(s)
		}
		for _, where := range []struct {
			name string
			c    codec.Codec
		}{{"inprocess", local}, {"plugin", remote}} {
			b.Run(local.Name()+"/"+where.name+"/compress", func(b *testing.B) {
				b.SetBytes(int64(total))
				for b.Loop() {
					if _, err := where.c.Compress(ctx, in); err != nil {
						b.Fatal(err)
					}
				}
				b.ReportMetric(float64(total)/float64(compressed), "ratio")
			})
			b.Run(local.Name()+"/"+where.name+"/decompress", func(b *testing.B) {
				b.SetBytes(int64(total))
				for b.Loop() {
					if _, err := where.c.Decompress(ctx, comp, 0); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}

// BenchmarkAssign runs one assignment of 10,000 partitions (100 topics of
// 100) to 1,000 members in process and through a plugin process.
func BenchmarkAssign(b *testing.B) {
	ctx := testContext(b)
	cat := newCatalog(b)
	topics := make([]string, 100)
	partitions := map[string]int32{}
	for i := range topics {
		topics[i] = fmt.Sprintf("topic-%03d", i)
		partitions[topics[i]] = 100
	}
	members := make([]assignor.Member, 1000)
	for i := range members {
		members[i] = assignor.Member{ID: fmt.Sprintf("member-%04d", i), Topics: topics, Generation: -1}
	}
	for _, local := range assignor.Builtins() {
		remote, err := cat.Assignor(ctx, local.Name())
		if err != nil {
			b.Fatal(err)
		}
		for _, where := range []struct {
			name string
			a    assignor.Assignor
		}{{"inprocess", local}, {"plugin", remote}} {
			b.Run(local.Name()+"/"+where.name, func(b *testing.B) {
				for b.Loop() {
					if _, err := where.a.Assign(members, partitions); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}
