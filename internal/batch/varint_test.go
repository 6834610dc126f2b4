package batch

import "testing"

// TestVarintShortAgreesWithVarintAt: over every one- and two-byte prefix,
// cut short or not and at every start, the inlined fast path answers
// exactly what the loop answers, or leaves the varint to it.
func TestVarintShortAgreesWithVarintAt(t *testing.T) {
	for v := range 1 << 16 {
		full := []byte{byte(v), byte(v >> 8), 0x01}
		for n := 1; n <= len(full); n++ {
			b := full[:n]
			for i := -1; i <= n; i++ {
				got, gi := varintShort(b, i)
				if gi < 0 {
					if want, wi := varintAt(b, i); wi >= 0 && wi-i <= 2 {
						t.Fatalf("% x at %d: short read nothing, the loop read %d ending at %d", b, i, want, wi)
					}
					continue
				}
				if want, wi := varintAt(b, i); got != want || gi != wi {
					t.Fatalf("% x at %d: short read %d ending at %d, the loop %d ending at %d", b, i, got, gi, want, wi)
				}
			}
		}
	}
}
