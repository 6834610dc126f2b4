package e2e

import (
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/kversion"
)

// TestOldClientVersions produces and consumes with kgo pinned to the request
// versions of older Kafka releases, as older clients (sarama, librdkafka builds,
// Java clients) send them, with every codec those versions allow.
func TestOldClientVersions(t *testing.T) {
	b := startBroker(t)
	adm := b.Admin(t)
	for _, v := range []struct {
		name     string
		versions *kversion.Versions
		codecs   []kgo.CompressionCodec
	}{
		{"0.11.0", kversion.V0_11_0(), []kgo.CompressionCodec{kgo.NoCompression(), kgo.GzipCompression(), kgo.SnappyCompression(), kgo.Lz4Compression()}},
		{"2.1.0", kversion.V2_1_0(), []kgo.CompressionCodec{kgo.NoCompression(), kgo.GzipCompression(), kgo.SnappyCompression(), kgo.Lz4Compression(), kgo.ZstdCompression()}},
	} {
		t.Run(v.name, func(t *testing.T) {
			for i, codec := range v.codecs {
				topic := fmt.Sprintf("compat-%s-%d", v.name, i)
				createTopic(t, adm, topic, 1, nil)
				prod := b.Client(t, kgo.MaxVersions(v.versions), kgo.DefaultProduceTopic(topic),
					kgo.ProducerBatchCompression(codec), kgo.ProducerLinger(20*time.Millisecond))
				want := shapes()
				if err := prod.ProduceSync(testCtx(t, 30*time.Second), want...).FirstErr(); err != nil {
					t.Fatalf("produce with %s versions, codec %d: %v", v.name, i, err)
				}
				got := consumeRange(t, b, topic, 0, 0, len(want), kgo.MaxVersions(v.versions),
					kgo.FetchMaxBytes(16<<20), kgo.FetchMaxPartitionBytes(16<<20))
				for j := range want {
					if err := sameRecord(want[j], got[j]); err != nil {
						t.Errorf("codec %d record %d: %v", i, j, err)
					}
				}
			}
		})
	}
}

// TestApiVersionsListing checks the advertised API keys through kadm, and that
// every advertised key answers a request at its lowest and highest version.
func TestApiVersionsListing(t *testing.T) {
	b := startBroker(t)
	adm := b.Admin(t)
	bv, err := adm.ApiVersions(testCtx(t, 10*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	v, ok := bv[0]
	if !ok || v.Err != nil {
		t.Fatalf("ApiVersions from broker 0: %v %v", ok, v.Err)
	}
	keys := map[int16][2]int16{}
	v.EachKeySorted(func(key, minV, maxV int16) {
		keys[key] = [2]int16{minV, maxV}
		if minV < 0 || minV > maxV {
			t.Errorf("%s: version range %d-%d", kmsg.NameForKey(key), minV, maxV)
		}
		if req := kmsg.RequestForKey(key); req == nil {
			t.Errorf("unknown API key %d advertised", key)
		} else if maxV > req.MaxVersion() {
			t.Errorf("%s: advertises v%d, beyond any known version (%d)", kmsg.NameForKey(key), maxV, req.MaxVersion())
		}
	})
	// What every Kafka client needs, from which versions franz-go, librdkafka and
	// the Java client start.
	for key, need := range map[int16]int16{0: 3, 1: 4, 2: 1, 3: 1, 18: 0, 19: 0, 20: 0, 32: 0, 44: 0, 10: 0, 11: 0, 14: 0, 12: 0, 13: 0, 8: 0, 9: 0, 22: 0} {
		r, ok := keys[key]
		if !ok {
			t.Errorf("%s (key %d) not advertised", kmsg.NameForKey(key), key)
			continue
		}
		if r[0] > need {
			t.Errorf("%s: lowest version %d, clients need %d", kmsg.NameForKey(key), r[0], need)
		}
	}
	if vs := v.VersionGuess(); vs == "" {
		t.Error("kadm cannot guess a Kafka version from the advertised keys")
	} else {
		t.Logf("kadm guesses %s", vs)
	}

	// Inter-broker requests from a stranger carry no controller epoch worth
	// trusting; they go last so a broker they upset fails the check below.
	rc := dialRaw(t, b.Addr())
	var order []int16
	for key := range keys {
		if key < 4 || key > 7 {
			order = append(order, key)
		}
	}
	for key := range keys {
		if key >= 4 && key <= 7 {
			order = append(order, key)
		}
	}
	for _, key := range order {
		lowest := keys[key][0]
		if key == 0 {
			// Produce is advertised from v0 although only v3+ is served, as Kafka 4.0
			// does (KAFKA-18659): librdkafka enables compression only when the
			// advertised range starts there.
			lowest = max(lowest, 3)
		}
		for _, version := range []int16{lowest, keys[key][1]} {
			req := kmsg.RequestForKey(key)
			req.SetVersion(version)
			switch r := req.(type) {
			case *kmsg.ProduceRequest:
				r.Acks = 1 // acks=0 is answered with silence
			case *kmsg.ControlledShutdownRequest:
				// For broker 0 itself Kafka's controller would honour it (an unknown
				// broker epoch passes) and take the broker out of new leaderships.
				r.BrokerID = 77
			}
			if _, err := rc.Request(req); err != nil {
				t.Errorf("%s v%d (an empty request) got no answer: %v", kmsg.NameForKey(key), version, err)
				rc = dialRaw(t, b.Addr())
			}
		}
	}
	createTopic(t, adm, "after-sweep", 1, nil)
	brokerStillWorks(t, b, "after-sweep", "a request of every advertised key and version")
}
