package compat

import (
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"os"
	"testing"
	"time"
)

// The Go clients other than franz-go (sarama, segmentio/kafka-go) run in the
// test process. Each writes goKeys keys round-robin, value "<tag>-<i>", and
// reads them back in a consumer group; franz-go is the referee that reads the
// log and the group's committed offsets.

const goKeys = 6

// goRecord is one record a client read, where it read it.
type goRecord struct {
	partition  int32
	offset     int64
	key, value string
}

// goAuth is how a client logs in: mech "" is PLAINTEXT; tls nil is no TLS.
type goAuth struct {
	mech, user, pass string
	tls              *tls.Config
}

func (a goAuth) String() string {
	if a.mech == "" {
		return "PLAINTEXT"
	}
	return "SASL_SSL/" + a.mech
}

// goSASLCases are the SASL_SSL logins of the Go clients on a startSASL broker.
func goSASLCases(t *testing.T, s *secureBroker) []goAuth {
	t.Helper()
	pem, err := os.ReadFile(s.caFile)
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(pem) {
		t.Fatalf("no certificate in %s", s.caFile)
	}
	cfg := &tls.Config{RootCAs: pool, ServerName: "127.0.0.1"}
	return []goAuth{
		{"SCRAM-SHA-512", "bob", "bob-secret", cfg},
		{"SCRAM-SHA-256", "bob", "bob-secret", cfg},
		{"PLAIN", "alice", "alice-secret", cfg},
	}
}

// goKV is record i of a run tagged tag.
func goKV(tag string, i int) (key, value string) {
	return fmt.Sprintf("k%d", i%goKeys), fmt.Sprintf("%s-%d", tag, i)
}

// checkGroupRead checks what a group consumer read of topic, into which n
// records tagged tag were written: each record exactly once, at the offset
// where franz-go finds it in the log, offsets rising within each partition,
// each key on one partition and its values in the order they were sent; with
// idempotent, every batch carries a producer id.
func checkGroupRead(t *testing.T, name, addrs, topic, tag string, n int, idempotent bool, got []goRecord) {
	t.Helper()
	type at struct {
		p int32
		o int64
	}
	log := map[at]goRecord{}
	for _, r := range fetchAll(t, addrs, topic) {
		log[at{r.Partition, r.Offset}] = goRecord{r.Partition, r.Offset, string(r.Key), string(r.Value)}
		if idempotent && r.ProducerID < 0 {
			t.Fatalf("%s: %s[%d]@%d was written without a producer id", name, topic, r.Partition, r.Offset)
		}
	}
	if len(log) != n {
		t.Fatalf("%s: the log of %s holds %d records, want %d", name, topic, len(log), n)
	}
	if len(got) != n {
		t.Fatalf("%s: the group read %d records, want %d", name, len(got), n)
	}
	last := map[int32]int64{}
	keyPart := map[string]int32{}
	byKey := map[string][]string{}
	for _, r := range got {
		if l, ok := last[r.partition]; ok && r.offset <= l {
			t.Fatalf("%s: partition %d read offset %d after %d", name, r.partition, r.offset, l)
		}
		last[r.partition] = r.offset
		if w := log[at{r.partition, r.offset}]; w != r {
			t.Fatalf("%s: read %+v, the log has %+v", name, r, w)
		}
		if p, ok := keyPart[r.key]; ok && p != r.partition {
			t.Fatalf("%s: key %s on partitions %d and %d", name, r.key, p, r.partition)
		}
		keyPart[r.key] = r.partition
		byKey[r.key] = append(byKey[r.key], r.value)
	}
	for i := range n {
		k, v := goKV(tag, i)
		if len(byKey[k]) == 0 || byKey[k][0] != v {
			t.Fatalf("%s: key %s: read %v, want %s next", name, k, byKey[k], v)
		}
		byKey[k] = byKey[k][1:]
	}
}

// groupCommitted waits until group's committed offsets of topic are the
// topic's end offsets (franz-go reads both).
func groupCommitted(t *testing.T, name, addrs, group, topic string) {
	t.Helper()
	ctx := testCtx(t, 40*time.Second) // outlives the polling, whose last error is the one to see
	adm := adminClient(t, addrs)
	ends := endOffsets(t, addrs, topic)
	eventually(t, 30*time.Second, func() error {
		resp, err := adm.FetchOffsets(ctx, group)
		if err != nil {
			return err
		}
		if err := resp.Error(); err != nil {
			return err
		}
		for p, end := range ends {
			if end == 0 {
				continue // no record was written there: nothing to commit
			}
			o, ok := resp.Lookup(topic, p)
			if !ok || o.At != end {
				return fmt.Errorf("%s: group %s committed %s[%d] at %+v, want %d", name, group, topic, p, o, end)
			}
		}
		return nil
	})
}
