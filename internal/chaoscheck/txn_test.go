package chaoscheck

import (
	"fmt"
	"strings"
	"testing"
)

// txnReads lays out transactions ks whole on partitions 0 and 1.
func txnReads(ks ...int) map[int32][]string {
	out := map[int32][]string{}
	for p := range int32(2) {
		for _, k := range ks {
			for i := range TxnSize {
				out[p] = append(out[p], fmt.Sprintf("%d-%d", k, i))
			}
		}
	}
	return out
}

func TestCheckTxnReads(t *testing.T) {
	requested := map[int]bool{0: true, 1: true, 3: true, 4: true}
	committed := map[int]bool{0: true, 1: true, 3: true}
	if p := CheckTxnReads(txnReads(0, 1, 3), 2, requested, committed); len(p) != 0 {
		t.Fatalf("clean reads: %v", p)
	}
	// 4's commit was requested but not acknowledged: read or not, both fine.
	if p := CheckTxnReads(txnReads(0, 1, 3, 4), 2, requested, committed); len(p) != 0 {
		t.Fatalf("an unknown outcome read whole: %v", p)
	}
	cases := []struct {
		name string
		edit func(map[int32][]string) map[int32][]string
		want string
	}{
		{"an aborted transaction read", func(m map[int32][]string) map[int32][]string { return txnReads(0, 1, 2, 3) }, "never requested"},
		{"torn within a partition", func(m map[int32][]string) map[int32][]string {
			m[1] = append(m[1][:TxnSize+1], m[1][2*TxnSize:]...)
			return m
		}, "transaction 1 torn: 1 of"},
		{"torn across partitions", func(m map[int32][]string) map[int32][]string {
			m[0] = append(m[0], txnReads(4)[0]...)
			return m
		}, "transaction 4 torn across partitions"},
		{"out of order", func(m map[int32][]string) map[int32][]string { return txnReads(1, 0, 3) }, "transaction 0 read after 1"},
		{"a committed transaction missing", func(m map[int32][]string) map[int32][]string { return txnReads(0, 1) }, "committed transaction 3 (commit acknowledged) never read"},
		{"a foreign record", func(m map[int32][]string) map[int32][]string {
			m[0] = append(m[0], "x")
			return m
		}, "not a transaction's"},
	}
	for _, c := range cases {
		p := CheckTxnReads(c.edit(txnReads(0, 1, 3)), 2, requested, committed)
		if !strings.Contains(strings.Join(p, "\n"), c.want) {
			t.Errorf("%s: want a violation with %q, got %v", c.name, c.want, p)
		}
	}
}
