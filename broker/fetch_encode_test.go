package broker

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	klog "github.com/ktoolhq/ktool/broker/log"
	"github.com/ktoolhq/ktool/broker/replica"
)

// TestEncodeFetchMatchesKmsg: the hand-written FetchResponse encoder (records as
// file regions) produces exactly kmsg's bytes at every served version.
func TestEncodeFetchMatchesKmsg(t *testing.T) {
	data := bytes.Repeat([]byte("abcdefghij"), 30)
	path := filepath.Join(t.TempDir(), "segment")
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	ins := []struct {
		topic    string
		part     int32
		err      error
		hw, ls   int64
		pos, len int64
		lso      int64
		aborted  []klog.AbortedTxn // nil: read_uncommitted
	}{
		{"a", 0, nil, 10, 0, 0, 100, 10, nil},
		{"a", 1, nil, 11, 2, 0, 0, 4, []klog.AbortedTxn{}},
		{"a", 2, kerr.NotLeaderForPartition, -1, -1, 0, 0, -1, nil},
		{"bb", 0, errors.Join(errors.New("x"), kerr.OffsetOutOfRange), 5, 3, 0, 0, 5, nil},
		{"a", 3, nil, 12, 1, 100, 200, 9, []klog.AbortedTxn{{ProducerID: 7, FirstOffset: 2}, {ProducerID: 1 << 40, FirstOffset: 8}}},
		{"ccc", 7, nil, 99, 0, 10, 290, 99, nil},
	}
	for v := int16(4); v <= 12; v++ {
		var parts []fetchPart
		want := kmsg.NewPtrFetchResponse()
		want.Version = v
		for _, in := range ins {
			parts = append(parts, fetchPart{topic: in.topic, partition: in.part, err: in.err,
				info:    replica.ReadInfo{HighWatermark: in.hw, LastStableOffset: in.lso, LogStartOffset: in.ls},
				region:  klog.Region{File: f, Pos: in.pos, Len: in.len},
				aborted: in.aborted})
			if len(want.Topics) == 0 || want.Topics[len(want.Topics)-1].Topic != in.topic {
				rt := kmsg.NewFetchResponseTopic()
				rt.Topic = in.topic
				want.Topics = append(want.Topics, rt)
			}
			rt := &want.Topics[len(want.Topics)-1]
			rp := kmsg.NewFetchResponseTopicPartition()
			rp.Partition = in.part
			rp.ErrorCode = errorCode(in.err)
			rp.HighWatermark, rp.LastStableOffset, rp.LogStartOffset = in.hw, in.lso, in.ls
			if in.aborted != nil {
				rp.AbortedTransactions = []kmsg.FetchResponseTopicPartitionAbortedTransaction{}
				for _, a := range in.aborted {
					at := kmsg.NewFetchResponseTopicPartitionAbortedTransaction()
					at.ProducerID, at.FirstOffset = a.ProducerID, a.FirstOffset
					rp.AbortedTransactions = append(rp.AbortedTransactions, at)
				}
			}
			rp.PreferredReadReplica = -1
			rp.RecordBatches = append([]byte{}, data[in.pos:in.pos+in.len]...)
			rt.Partitions = append(rt.Partitions, rp)
		}
		var got bytes.Buffer
		if _, err := encodeFetch(v, 0, parts, 0).WriteTo(&got); err != nil {
			t.Fatal(err)
		}
		if wantBytes := want.AppendTo(nil); !bytes.Equal(wantBytes, got.Bytes()) {
			t.Errorf("v%d: encoded\n%x\nwant\n%x", v, got.Bytes(), wantBytes)
		}
	}
}
