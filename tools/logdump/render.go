package logdump

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"strings"
)

// writeText prints dumps in kafka-dump-log.sh's spirit: one line per batch
// or index entry, records under their batch prefixed with "|".
func writeText(out io.Writer, dumps []FileDump) error {
	w := bufio.NewWriter(out)
	for i, d := range dumps {
		if i > 0 {
			fmt.Fprintln(w)
		}
		fmt.Fprintf(w, "Dumping %s\n", d.Path)
		fmt.Fprintf(w, "Starting offset: %d\n", d.BaseOffset)
		for _, b := range d.Batches {
			fmt.Fprintf(w, "baseOffset: %d lastOffset: %d count: %d codec: %s producerId: %d producerEpoch: %d baseSequence: %d partitionLeaderEpoch: %d isTransactional: %t isControl: %t ",
				b.BaseOffset, b.LastOffset, b.Count, b.Codec, b.ProducerID, b.ProducerEpoch, b.BaseSequence,
				b.PartitionLeaderEpoch, b.Transactional, b.Control)
			if b.DeleteHorizonMs != nil {
				fmt.Fprintf(w, "deleteHorizonMs: %d ", *b.DeleteHorizonMs)
			}
			fmt.Fprintf(w, "%s: %d maxTimestamp: %d position: %d size: %d crc: %d crcValid: %t\n",
				b.TimestampType, b.CreateTimestamp, b.MaxTimestamp, b.Position, b.Size, b.CRC, b.CRCValid)
			for _, r := range b.Records {
				if r.Control != "" {
					fmt.Fprintf(w, "| offset: %d %s: %d endTxnMarker: %s", r.Offset, b.TimestampType, r.Timestamp, r.Control)
					if r.CoordinatorEpoch != nil {
						fmt.Fprintf(w, " coordinatorEpoch: %d", *r.CoordinatorEpoch)
					}
					fmt.Fprintln(w)
					continue
				}
				if r.Decoded != nil {
					fmt.Fprintf(w, "| offset: %d %s: %d %s\n", r.Offset, b.TimestampType, r.Timestamp, showDecoded(r.Decoded))
					continue
				}
				fmt.Fprintf(w, "| offset: %d %s: %d key: %s value: %s", r.Offset, b.TimestampType, r.Timestamp, show(r.Key), show(r.Value))
				if len(r.Headers) > 0 {
					hs := make([]string, len(r.Headers))
					for i, h := range r.Headers {
						hs[i] = strconv.Quote(h.Key) + "=" + show(h.Value)
					}
					fmt.Fprintf(w, " headers: [%s]", strings.Join(hs, " "))
				}
				fmt.Fprintln(w)
			}
		}
		for _, e := range d.Index {
			fmt.Fprintf(w, "offset: %d position: %d\n", e.Offset, e.Position)
		}
		for _, e := range d.TimeIndex {
			fmt.Fprintf(w, "timestamp: %d offset: %d\n", e.Timestamp, e.Offset)
		}
		for _, e := range d.AbortedTxns {
			fmt.Fprintf(w, "version: %d producerId: %d firstOffset: %d lastOffset: %d lastStableOffset: %d\n",
				e.Version, e.ProducerID, e.FirstOffset, e.LastOffset, e.LastStableOffset)
		}
		for _, p := range d.Problems {
			fmt.Fprintf(w, "Problem: %s\n", p)
		}
		if d.IndexChecked && len(d.Problems) == 0 {
			fmt.Fprintln(w, "Index check: ok")
		}
	}
	return w.Flush()
}

// show renders a key, value or header value: quoted text, 0x-prefixed hex, or null.
func show(b Bytes) string {
	switch {
	case b.Null:
		return "null"
	case b.Hex != "":
		return "0x" + b.Hex
	}
	return strconv.Quote(b.Text)
}

// showDecoded prints an internal topic's record as kafka-dump-log.sh's
// decoders do: the key and the payload as JSON.
func showDecoded(d *Decoded) string {
	key, _ := json.Marshal(d.Key)
	val := []byte("null")
	if d.Value != nil {
		val, _ = json.Marshal(d.Value)
	}
	s := fmt.Sprintf("%s key: %s payload: %s", d.Kind, key, val)
	if d.Error != "" {
		s += " error: " + strconv.Quote(d.Error)
	}
	return s
}
