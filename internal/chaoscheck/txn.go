package chaoscheck

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// Txn is the transactional workload: one transactional producer writes
// transaction after transaction, each of TxnSize records to every partition
// of a topic (record "<k>-<i>" for transaction k), committing two and
// aborting the third; a read_committed consumer follows from the start. A
// transaction is committed only if its commit was requested, so no record
// of any other may ever be read. Check finds what a read_committed reader
// must never see: a record of a transaction whose commit was never asked
// for, a transaction read in part (torn within a partition, or read on some
// partitions and not on others), transactions out of order, and an
// acknowledged commit that was never read.
type Txn struct {
	newClient  func(...kgo.Opt) *kgo.Client
	topic      string
	partitions int32
	id         string

	mu        sync.Mutex
	requested map[int]bool // commit requested (committed or unknown)
	committed map[int]bool // commit acknowledged
	aborted   int          // abort acknowledged
	failed    int          // transactions that ended in an error
	errs      map[string]int

	seenMu sync.Mutex
	seen   map[int32][]string // what the read_committed consumer read
	reads  int
}

// TxnSize is the records of one transaction on each partition.
const TxnSize = 4

// NewTxn makes the workload on topic's partitions with transactional id id;
// newClient gives its clients.
func NewTxn(newClient func(...kgo.Opt) *kgo.Client, topic string, partitions int32, id string) *Txn {
	return &Txn{newClient: newClient, topic: topic, partitions: partitions, id: id,
		requested: map[int]bool{}, committed: map[int]bool{}, errs: map[string]int{}, seen: map[int32][]string{}}
}

// Produce runs transactions until ctx ends. A transaction that fails (its
// outcome unknown, if its commit was asked for) closes the client: the next
// one, with the same transactional id, fences it and ends its transaction.
func (w *Txn) Produce(ctx context.Context) {
	var cl *kgo.Client
	defer func() {
		if cl != nil {
			cl.Close()
		}
	}()
	for k := 0; ctx.Err() == nil; k++ {
		if cl == nil {
			cl = w.newClient(kgo.TransactionalID(w.id), kgo.RecordPartitioner(kgo.ManualPartitioner()),
				kgo.TransactionTimeout(10*time.Second), kgo.RecordDeliveryTimeout(30*time.Second))
		}
		commit := k%3 != 2
		tctx, cancel := context.WithTimeout(ctx, time.Minute)
		err := w.one(tctx, cl, k, commit)
		cancel()
		w.mu.Lock()
		switch {
		case err != nil:
			w.failed++
			w.errs[err.Error()]++
		case commit:
			w.committed[k] = true
		default:
			w.aborted++
		}
		w.mu.Unlock()
		if err != nil {
			cl.Close()
			cl = nil
			select {
			case <-ctx.Done():
			case <-time.After(200 * time.Millisecond):
			}
		}
	}
}

func (w *Txn) one(ctx context.Context, cl *kgo.Client, k int, commit bool) error {
	if err := cl.BeginTransaction(); err != nil {
		return err
	}
	var recs []*kgo.Record
	for p := range w.partitions {
		for i := range TxnSize {
			recs = append(recs, &kgo.Record{Topic: w.topic, Partition: p, Value: fmt.Appendf(nil, "%d-%d", k, i)})
		}
	}
	perr := cl.ProduceSync(ctx, recs...).FirstErr()
	commit = commit && perr == nil
	if commit {
		w.mu.Lock()
		w.requested[k] = true
		w.mu.Unlock()
	}
	err := cl.EndTransaction(ctx, kgo.TransactionEndTry(commit))
	return errors.Join(perr, err)
}

// Consume reads every partition from the start with read_committed until
// ctx ends.
func (w *Txn) Consume(ctx context.Context) {
	offsets := map[int32]kgo.Offset{}
	for p := range w.partitions {
		offsets[p] = kgo.NewOffset().AtStart()
	}
	cl := w.newClient(kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{w.topic: offsets}),
		kgo.FetchIsolationLevel(kgo.ReadCommitted()), kgo.FetchMaxWait(500*time.Millisecond))
	defer cl.Close()
	for ctx.Err() == nil {
		fs := cl.PollFetches(ctx)
		w.seenMu.Lock()
		fs.EachRecord(func(r *kgo.Record) {
			w.seen[r.Partition] = append(w.seen[r.Partition], string(r.Value))
			w.reads++
		})
		w.seenMu.Unlock()
	}
}

// Committed is how many commits were acknowledged so far.
func (w *Txn) Committed() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return len(w.committed)
}

// Summary says how the transactions ended, with the distinct errors.
func (w *Txn) Summary() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.seenMu.Lock()
	reads := w.reads
	w.seenMu.Unlock()
	s := fmt.Sprintf("%d transactions committed, %d aborted, %d failed (commit asked for %d); %d records read committed",
		len(w.committed), w.aborted, w.failed, len(w.requested), reads)
	keys := make([]string, 0, len(w.errs))
	for k := range w.errs {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		s += fmt.Sprintf("\n  %dx %s", w.errs[k], k)
	}
	return s
}

// AllCommittedRead is nil once the consumer read every acknowledged commit.
func (w *Txn) AllCommittedRead() error {
	w.mu.Lock()
	want := make([]int, 0, len(w.committed))
	for k := range w.committed {
		want = append(want, k)
	}
	w.mu.Unlock()
	w.seenMu.Lock()
	defer w.seenMu.Unlock()
	for p := range w.partitions {
		got := map[int]bool{}
		for _, v := range w.seen[p] {
			var k, i int
			if _, err := fmt.Sscanf(v, "%d-%d", &k, &i); err == nil {
				got[k] = true
			}
		}
		for _, k := range want {
			if !got[k] {
				return fmt.Errorf("partition %d: committed transaction %d not read yet", p, k)
			}
		}
	}
	return nil
}

// Check returns every violation in what the consumer read; call it once the
// producer stopped and AllCommittedRead and LSOAtEnd hold.
func (w *Txn) Check() []string {
	w.mu.Lock()
	requested := make(map[int]bool, len(w.requested))
	for k := range w.requested {
		requested[k] = true
	}
	committed := make(map[int]bool, len(w.committed))
	for k := range w.committed {
		committed[k] = true
	}
	w.mu.Unlock()
	w.seenMu.Lock()
	seen := make(map[int32][]string, len(w.seen))
	for p, vs := range w.seen {
		seen[p] = append([]string(nil), vs...)
	}
	w.seenMu.Unlock()
	return CheckTxnReads(seen, w.partitions, requested, committed)
}

// CheckTxnReads checks what a read_committed consumer read from each of
// partitions partitions (values "<k>-<i>", TxnSize records per transaction
// and partition): every transaction read was one whose commit was
// requested, read whole and in a row, after the ones before it, on every
// partition; every commit in committed was read.
func CheckTxnReads(seen map[int32][]string, partitions int32, requested, committed map[int]bool) []string {
	var problems []string
	add := func(format string, args ...any) { problems = append(problems, fmt.Sprintf(format, args...)) }
	on := map[int]map[int32]bool{} // transaction -> partitions it was read on
	for p := range partitions {
		vs := seen[p]
		last := -1
		for i := 0; i < len(vs); {
			var k, r int
			if _, err := fmt.Sscanf(vs[i], "%d-%d", &k, &r); err != nil {
				add("partition %d: record %d is %q, not a transaction's", p, i, vs[i])
				i++
				continue
			}
			if !requested[k] {
				add("partition %d: read record %q of transaction %d, whose commit was never requested (aborted)", p, vs[i], k)
			}
			if k <= last {
				add("partition %d: transaction %d read after %d", p, k, last)
			}
			n := 0
			for n < TxnSize && i+n < len(vs) && vs[i+n] == fmt.Sprintf("%d-%d", k, n) {
				n++
			}
			if n < TxnSize {
				add("partition %d: transaction %d torn: %d of its %d records in a row from record %d (%q)", p, k, n, TxnSize, i, vs[i:min(i+TxnSize, len(vs))])
				n = max(n, 1)
			}
			if on[k] == nil {
				on[k] = map[int32]bool{}
			}
			on[k][p] = true
			last = k
			i += n
		}
	}
	ks := make([]int, 0, len(on))
	for k := range on {
		ks = append(ks, k)
	}
	sort.Ints(ks)
	for _, k := range ks {
		if len(on[k]) != int(partitions) {
			add("transaction %d torn across partitions: read on %d of %d", k, len(on[k]), partitions)
		}
	}
	for k := range committed {
		if on[k] == nil {
			add("committed transaction %d (commit acknowledged) never read", k)
		}
	}
	sort.Strings(problems)
	return problems
}

// LSOAdvances waits, up to timeout, until the last stable offset of every
// partition of topic is past where it was when called, or at the high
// watermark: a transaction left open (markers not written, a coordinator
// that lost it) holds the LSO back and fails it.
func LSOAdvances(ctx context.Context, adm *kadm.Client, topic string, timeout time.Duration) error {
	from, _, err := stableAndEnd(ctx, adm, topic)
	if err != nil {
		return err
	}
	return pollLSO(ctx, timeout, func(ctx context.Context) error {
		lso, hw, err := stableAndEnd(ctx, adm, topic)
		if err != nil {
			return err
		}
		for p, o := range lso {
			if o <= from[p] && o != hw[p] {
				return fmt.Errorf("partition %d: last stable offset %d, still at %d, high watermark %d", p, o, from[p], hw[p])
			}
		}
		return nil
	})
}

// LSOAtEnd waits, up to timeout, until the last stable offset of every
// partition of topic is its high watermark: once the producer stopped, no
// transaction may stay open (its timeout aborts it).
func LSOAtEnd(ctx context.Context, adm *kadm.Client, topic string, timeout time.Duration) error {
	return pollLSO(ctx, timeout, func(ctx context.Context) error {
		lso, hw, err := stableAndEnd(ctx, adm, topic)
		if err != nil {
			return err
		}
		for p, o := range lso {
			if o != hw[p] {
				return fmt.Errorf("partition %d: last stable offset %d, high watermark %d", p, o, hw[p])
			}
		}
		return nil
	})
}

func pollLSO(ctx context.Context, timeout time.Duration, f func(context.Context) error) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	for {
		actx, acancel := context.WithTimeout(ctx, 5*time.Second)
		err := f(actx)
		acancel()
		if err == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("after %v: %w", timeout, err)
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// stableAndEnd lists the last stable offsets (ListOffsets, isolation level
// read_committed) and high watermarks of topic's partitions.
func stableAndEnd(ctx context.Context, adm *kadm.Client, topic string) (lso, hw map[int32]int64, err error) {
	read := func(l kadm.ListedOffsets, err error) (map[int32]int64, error) {
		if err != nil {
			return nil, err
		}
		if err := l.Error(); err != nil {
			return nil, err
		}
		out := map[int32]int64{}
		l.Each(func(o kadm.ListedOffset) { out[o.Partition] = o.Offset })
		if len(out) == 0 {
			return nil, fmt.Errorf("no partitions of %s listed", topic)
		}
		return out, nil
	}
	if lso, err = read(adm.ListCommittedOffsets(ctx, topic)); err != nil {
		return nil, nil, fmt.Errorf("last stable offsets: %w", err)
	}
	if hw, err = read(adm.ListEndOffsets(ctx, topic)); err != nil {
		return nil, nil, fmt.Errorf("high watermarks: %w", err)
	}
	return lso, hw, nil
}
