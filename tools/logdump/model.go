package logdump

// FileDump is everything `ktool log dump` says about one file.
type FileDump struct {
	Path string `json:"path" yaml:"path"`
	// Kind is log, index, timeindex or txnindex.
	Kind string `json:"kind" yaml:"kind"`
	// BaseOffset is the segment's first offset, from the file name.
	BaseOffset int64            `json:"base_offset" yaml:"base_offset"`
	Batches    []Batch          `json:"batches,omitempty" yaml:"batches,omitempty"`
	Index      []IndexEntry     `json:"index,omitempty" yaml:"index,omitempty"`
	TimeIndex  []TimeIndexEntry `json:"time_index,omitempty" yaml:"time_index,omitempty"`
	// AbortedTxns are the entries of a .txnindex file.
	AbortedTxns []AbortedTxn `json:"aborted_transactions,omitempty" yaml:"aborted_transactions,omitempty"`
	// Problems are a torn or corrupt tail, undecodable records and, with
	// --verify-index, index entries that do not match the segment.
	Problems []string `json:"problems,omitempty" yaml:"problems,omitempty"`
	// IndexChecked is set when --verify-index compared this segment with its indexes.
	IndexChecked bool `json:"index_checked,omitempty" yaml:"index_checked,omitempty"`
}

// Batch is one record batch's header as stored, plus where it sits.
type Batch struct {
	BaseOffset           int64  `json:"base_offset" yaml:"base_offset"`
	LastOffset           int64  `json:"last_offset" yaml:"last_offset"`
	Count                int32  `json:"count" yaml:"count"`
	Codec                string `json:"codec" yaml:"codec"`
	ProducerID           int64  `json:"producer_id" yaml:"producer_id"`
	ProducerEpoch        int16  `json:"producer_epoch" yaml:"producer_epoch"`
	BaseSequence         int32  `json:"base_sequence" yaml:"base_sequence"`
	PartitionLeaderEpoch int32  `json:"partition_leader_epoch" yaml:"partition_leader_epoch"`
	Transactional        bool   `json:"transactional" yaml:"transactional"`
	Control              bool   `json:"control" yaml:"control"`
	TimestampType        string `json:"timestamp_type" yaml:"timestamp_type"`
	CreateTimestamp      int64  `json:"create_timestamp" yaml:"create_timestamp"`
	// DeleteHorizonMs is set on a batch the log cleaner stamped (KIP-534):
	// its tombstones, or the batch when it is a marker, may go from then
	// on. The header's first timestamp holds it, so CreateTimestamp is the
	// same value, not a record's time.
	DeleteHorizonMs *int64   `json:"delete_horizon_ms,omitempty" yaml:"delete_horizon_ms,omitempty"`
	MaxTimestamp    int64    `json:"max_timestamp" yaml:"max_timestamp"`
	Position        int64    `json:"position" yaml:"position"`
	Size            int      `json:"size" yaml:"size"`
	CRC             uint32   `json:"crc" yaml:"crc"`
	CRCValid        bool     `json:"crc_valid" yaml:"crc_valid"`
	Records         []Record `json:"records,omitempty" yaml:"records,omitempty"`
}

// Record is one decoded record.
type Record struct {
	Offset    int64    `json:"offset" yaml:"offset"`
	Timestamp int64    `json:"timestamp" yaml:"timestamp"`
	Key       Bytes    `json:"key" yaml:"key"`
	Value     Bytes    `json:"value" yaml:"value"`
	Headers   []Header `json:"headers,omitempty" yaml:"headers,omitempty"`
	// Control is a control batch's marker type: COMMIT, ABORT or type N,
	// and CoordinatorEpoch the transaction coordinator's epoch in a marker.
	Control          string `json:"control,omitempty" yaml:"control,omitempty"`
	CoordinatorEpoch *int32 `json:"coordinator_epoch,omitempty" yaml:"coordinator_epoch,omitempty"`
	// Decoded is the record read as a __consumer_offsets record
	// (--offsets-decoder) or a __transaction_state record (--transaction-decoder).
	Decoded *Decoded `json:"decoded,omitempty" yaml:"decoded,omitempty"`
}

// Header is a record header.
type Header struct {
	Key   string `json:"key" yaml:"key"`
	Value Bytes  `json:"value" yaml:"value"`
}

// Bytes is a key, value or header value: text when printable, else hex;
// Null keeps Kafka's null apart from empty.
type Bytes struct {
	Text string `json:"text,omitempty" yaml:"text,omitempty"`
	Hex  string `json:"hex,omitempty" yaml:"hex,omitempty"`
	Null bool   `json:"null,omitempty" yaml:"null,omitempty"`
	Size int    `json:"size" yaml:"size"`
}

// IndexEntry is an offset index entry, its relative offset made absolute.
type IndexEntry struct {
	Offset   int64 `json:"offset" yaml:"offset"`
	Position int64 `json:"position" yaml:"position"`
}

// TimeIndexEntry is a time index entry, its relative offset made absolute.
type TimeIndexEntry struct {
	Timestamp int64 `json:"timestamp" yaml:"timestamp"`
	Offset    int64 `json:"offset" yaml:"offset"`
}

// AbortedTxn is an entry of an aborted transaction index (.txnindex): the
// producer, the offsets from its transaction's first record to its ABORT
// marker, and the last stable offset after the marker.
type AbortedTxn struct {
	Version          int16 `json:"version" yaml:"version"`
	ProducerID       int64 `json:"producer_id" yaml:"producer_id"`
	FirstOffset      int64 `json:"first_offset" yaml:"first_offset"`
	LastOffset       int64 `json:"last_offset" yaml:"last_offset"`
	LastStableOffset int64 `json:"last_stable_offset" yaml:"last_stable_offset"`
}
