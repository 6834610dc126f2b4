package group

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"time"
	"unicode/utf16"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/ktoolhq/ktool/internal/batch"
)

// OffsetsLog is implemented by the broker over the __consumer_offsets partitions.
type OffsetsLog interface {
	// Append appends one magic-v2 record batch built by the coordinator
	// (uncompressed; producer id -1, or a transactional batch of a producer
	// for TxnOffsetCommit, whose sequence is not checked) to partition p as
	// the leader and waits for the ISR (acks=all). It returns the base offset, or a kerr error such as
	// kerr.NotLeaderForPartition, NotEnoughReplicas or RequestTimedOut.
	Append(ctx context.Context, partition int32, batch []byte) (int64, error)
	// Scan calls fn with each raw record batch (magic v2, possibly compressed)
	// of partition p from the log start up to the high watermark at the time
	// of the call.
	Scan(ctx context.Context, partition int32, fn func(batch []byte) error) error
}

// Config configures a Coordinator. Zero durations and sizes take Kafka's
// defaults, except InitialRebalanceDelay, where zero means no delay.
type Config struct {
	BrokerID      int32
	NumPartitions int32 // offsets.topic.num.partitions (50)
	Log           OffsetsLog
	// Codecs reads compressed batches found in __consumer_offsets (which
	// Kafka may write with offsets.topic.compression.codec); nil reads
	// uncompressed batches only.
	Codecs batch.Codecs

	InitialRebalanceDelay time.Duration // group.initial.rebalance.delay.ms
	MinSessionTimeout     time.Duration // group.min.session.timeout.ms (6s)
	MaxSessionTimeout     time.Duration // group.max.session.timeout.ms (30m)
	MaxGroupSize          int           // group.max.size (0: unlimited)
	MaxMetadataSize       int           // offset.metadata.max.bytes (4096)

	OffsetsRetention      time.Duration // offsets.retention.minutes (7 days)
	OffsetsRetentionCheck time.Duration // offsets.retention.check.interval.ms (10m)

	Logger *slog.Logger
	Now    func() time.Time // nil: time.Now
}

// newMemberJoinTimeout bounds how long a member that joined during a rebalance
// may go without completing it (KIP-394).
const newMemberJoinTimeout = 5 * time.Minute

// Coordinator serves the groups of the __consumer_offsets partitions this broker leads.
type Coordinator struct {
	cfg    Config
	now    func() time.Time
	logger *slog.Logger
	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup
	shards []*shard
}

// New makes a coordinator that leads no partition yet; see BecomeLeader.
func New(cfg Config) *Coordinator {
	if cfg.NumPartitions <= 0 {
		cfg.NumPartitions = 50
	}
	if cfg.MinSessionTimeout <= 0 {
		cfg.MinSessionTimeout = 6 * time.Second
	}
	if cfg.MaxSessionTimeout <= 0 {
		cfg.MaxSessionTimeout = 30 * time.Minute
	}
	if cfg.MaxMetadataSize <= 0 {
		cfg.MaxMetadataSize = 4096
	}
	if cfg.OffsetsRetention <= 0 {
		cfg.OffsetsRetention = 7 * 24 * time.Hour
	}
	if cfg.OffsetsRetentionCheck <= 0 {
		cfg.OffsetsRetentionCheck = 10 * time.Minute
	}
	if cfg.InitialRebalanceDelay < 0 {
		cfg.InitialRebalanceDelay = 0
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.Log == nil {
		cfg.Log = noLog{}
	}
	c := &Coordinator{cfg: cfg, now: cfg.Now, logger: cfg.Logger}
	if c.now == nil {
		c.now = time.Now
	}
	c.ctx, c.cancel = context.WithCancel(context.Background())
	c.shards = make([]*shard, cfg.NumPartitions)
	for i := range c.shards {
		c.shards[i] = &shard{c: c, id: int32(i)}
	}
	c.wg.Add(1)
	go c.expireLoop()
	return c
}

// noLog stands in for a missing OffsetsLog so that leading fails with a clear error.
type noLog struct{}

var errNoLog = errors.New("group coordinator: no offsets log configured")

func (noLog) Append(context.Context, int32, []byte) (int64, error)  { return -1, errNoLog }
func (noLog) Scan(context.Context, int32, func([]byte) error) error { return errNoLog }

// PartitionFor is the __consumer_offsets partition holding group, as Kafka
// computes it: Utils.abs(groupId.hashCode) % partitions.
func (c *Coordinator) PartitionFor(group string) int32 {
	return partitionFor(group, c.cfg.NumPartitions)
}

func partitionFor(group string, n int32) int32 {
	var h int32
	for _, u := range utf16.Encode([]rune(group)) {
		h = 31*h + int32(u)
	}
	if h == -1<<31 {
		h = 0
	} else if h < 0 {
		h = -h
	}
	return h % n
}

func (c *Coordinator) shardFor(group string) *shard { return c.shards[c.PartitionFor(group)] }

// BecomeLeader tells the coordinator that this broker leads __consumer_offsets
// partition p at leader epoch e: it loads the partition's groups from the log in
// the background, answering COORDINATOR_LOAD_IN_PROGRESS for them meanwhile.
// Being told again while leading only records a newer epoch.
func (c *Coordinator) BecomeLeader(partition, epoch int32) {
	if partition < 0 || int(partition) >= len(c.shards) {
		c.logger.Warn("group coordinator: leader of an unknown __consumer_offsets partition", "partition", partition)
		return
	}
	s := c.shards[partition]
	s.mu.Lock()
	defer s.mu.Unlock()
	if c.ctx.Err() != nil {
		return
	}
	if s.status != shardIdle {
		s.epoch = max(s.epoch, epoch)
		return
	}
	s.status, s.epoch = shardLoading, epoch
	s.term++
	ctx, cancel := context.WithCancel(c.ctx)
	s.cancel = cancel
	c.wg.Add(1)
	go s.load(ctx, s.term)
}

// Resign tells the coordinator that this broker no longer leads partition p:
// its groups are unloaded and waiting requests are answered NOT_COORDINATOR.
func (c *Coordinator) Resign(partition int32) {
	if partition < 0 || int(partition) >= len(c.shards) {
		return
	}
	c.shards[partition].resign()
}

// Close resigns every partition and waits for the coordinator's goroutines.
func (c *Coordinator) Close() {
	c.cancel()
	for _, s := range c.shards {
		s.resign()
	}
	c.wg.Wait()
}

func (c *Coordinator) expireLoop() {
	defer c.wg.Done()
	t := time.NewTicker(c.cfg.OffsetsRetentionCheck)
	defer t.Stop()
	for {
		select {
		case <-c.ctx.Done():
			return
		case <-t.C:
			c.expireOffsets()
		}
	}
}

// errorCode is the Kafka error code of err (UNKNOWN_SERVER_ERROR for non-Kafka errors).
func errorCode(err error) int16 {
	if err == nil {
		return 0
	}
	var ke *kerr.Error
	if errors.As(err, &ke) {
		return ke.Code
	}
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return kerr.NotCoordinator.Code
	}
	return kerr.UnknownServerError.Code
}

// commitErrorCode maps a failed offsets append to what Kafka answers an OffsetCommit.
func commitErrorCode(err error) int16 {
	switch code := errorCode(err); code {
	case kerr.UnknownTopicOrPartition.Code, kerr.NotEnoughReplicas.Code, kerr.NotEnoughReplicasAfterAppend.Code:
		return kerr.CoordinatorNotAvailable.Code
	case kerr.NotLeaderForPartition.Code, kerr.KafkaStorageError.Code:
		return kerr.NotCoordinator.Code
	case kerr.MessageTooLarge.Code, kerr.RecordListTooLarge.Code, kerr.InvalidFetchSize.Code:
		return kerr.InvalidCommitOffsetSize.Code
	default:
		return code
	}
}

// storeErrorCode maps a failed group metadata append to what Kafka answers a SyncGroup.
func storeErrorCode(err error) int16 {
	switch code := errorCode(err); code {
	case kerr.UnknownTopicOrPartition.Code, kerr.NotEnoughReplicas.Code, kerr.NotEnoughReplicasAfterAppend.Code:
		return kerr.CoordinatorNotAvailable.Code
	case kerr.NotLeaderForPartition.Code, kerr.KafkaStorageError.Code:
		return kerr.NotCoordinator.Code
	case kerr.RequestTimedOut.Code:
		return kerr.RebalanceInProgress.Code
	case kerr.MessageTooLarge.Code, kerr.RecordListTooLarge.Code, kerr.InvalidFetchSize.Code:
		return kerr.UnknownServerError.Code
	default:
		return code
	}
}
