package config

import (
	"fmt"
	"math"
	"reflect"
	"strconv"
	"strings"
	"time"
)

// Settings is a broker's static configuration, typed: built once by NewBroker
// from the properties and the defaults of BrokerDefs, and validated there. Each
// field names its setting in a `config` tag; a duration's unit comes from the
// setting's name (.ms, .seconds, .minutes, .hours), a Bytes field holds bytes.
// A null setting that is not set reads as the zero value.
//
// Dynamic broker settings are not here: every one of them is the default of a
// topic config, read through TopicSettings so that changes at run time apply.
//
// To add a setting: define it in BrokerDefs, add a field here with its tag, and
// read the field (b.cfg.Settings().Field). TestEveryDefinedKeyIsRead fails until
// the new key is read or marked Ignored.
type Settings struct {
	BrokerID            int32    `config:"broker.id"`
	ReservedBrokerMaxID int32    `config:"reserved.broker.max.id"`
	Rack                string   `config:"broker.rack"`
	Listeners           []string `config:"listeners"`
	AdvertisedListeners []string `config:"advertised.listeners"`
	// ListenerProtocols is listener.security.protocol.map as written; the
	// per-listener TLS and SASL settings are read with Broker.Listener.
	ListenerProtocols           string `config:"listener.security.protocol.map"`
	InterBrokerListenerName     string `config:"inter.broker.listener.name"`
	SecurityInterBrokerProtocol string `config:"security.inter.broker.protocol"`
	SASLMechanismInterBroker    string `config:"sasl.mechanism.inter.broker.protocol"`
	AuthorizerClassName         string `config:"authorizer.class.name"`
	SuperUsers                  string `config:"super.users"`
	AllowEveryoneIfNoACLFound   bool   `config:"allow.everyone.if.no.acl.found"`
	ClusterID                   string `config:"cluster.id"`
	MetricsListener             string `config:"metrics.listener"`
	MetricsPprof                bool   `config:"metrics.pprof.enable"`

	LogDirList []string `config:"log.dirs"`
	LogDir     string   `config:"log.dir"`

	ZooKeeperConnect string `config:"zookeeper.connect"`
	// ZooKeeperSessionTimeout is the session timeout asked of ZooKeeper.
	ZooKeeperSessionTimeout time.Duration `config:"zookeeper.session.timeout.ms"`
	// ZooKeeperConnectionTimeout is zero when unset (the session timeout applies).
	ZooKeeperConnectionTimeout time.Duration `config:"zookeeper.connection.timeout.ms"`

	NumPartitions            int32 `config:"num.partitions"`
	DefaultReplicationFactor int32 `config:"default.replication.factor"`
	AutoCreateTopics         bool  `config:"auto.create.topics.enable"`
	DeleteTopicEnable        bool  `config:"delete.topic.enable"`
	MaxPartitions            int64 `config:"max.partitions"`
	MaxBrokerPartitions      int64 `config:"max.broker.partitions"`

	AutoLeaderRebalance        bool          `config:"auto.leader.rebalance.enable"`
	LeaderImbalancePercentage  int           `config:"leader.imbalance.per.broker.percentage"`
	LeaderImbalanceCheckPeriod time.Duration `config:"leader.imbalance.check.interval.seconds"`
	ControllerSocketTimeout    time.Duration `config:"controller.socket.timeout.ms"`

	NumRecoveryThreadsPerDataDir int `config:"num.recovery.threads.per.data.dir"`
	LogFdCacheSize               int `config:"log.fd.cache.size"`
	LogFdReserve                 int `config:"log.fd.reserve"`

	ReplicaLagTimeMax            time.Duration `config:"replica.lag.time.max.ms"`
	ReplicaFetchMaxBytes         Bytes         `config:"replica.fetch.max.bytes"`
	ReplicaFetchResponseMaxBytes Bytes         `config:"replica.fetch.response.max.bytes"`
	ReplicaFetchWaitMax          time.Duration `config:"replica.fetch.wait.max.ms"`
	HighWatermarkCheckpointEvery time.Duration `config:"replica.high.watermark.checkpoint.interval.ms"`
	ReplicaFetchBackoff          time.Duration `config:"replica.fetch.backoff.ms"`
	FetchSessionCacheSlots       int           `config:"max.incremental.fetch.session.cache.slots"`
	FetchSessionEviction         time.Duration `config:"min.incremental.fetch.session.eviction.ms"`
	ControlledShutdown           bool          `config:"controlled.shutdown.enable"`
	ControlledShutdownTries      int           `config:"controlled.shutdown.max.retries"`
	ControlledShutdownBackoff    time.Duration `config:"controlled.shutdown.retry.backoff.ms"`

	SocketRequestMaxBytes        Bytes          `config:"socket.request.max.bytes"`
	SASLServerMaxReceiveSize     Bytes          `config:"sasl.server.max.receive.size"`
	ConnectionsMaxIdle           time.Duration  `config:"connections.max.idle.ms"`
	MaxConnections               int            `config:"max.connections"`
	MaxConnectionsPerIP          int            `config:"max.connections.per.ip"`
	MaxConnectionsPerIPOverrides map[string]int `config:"max.connections.per.ip.overrides"`
	QueuedMaxRequestBytes        Bytes          `config:"queued.max.request.bytes"`
	QueuedMaxRequests            int            `config:"queued.max.requests"`
	MessageDecompressionMaxRatio int            `config:"message.decompression.max.ratio"`
	QuotaWindowNum               int            `config:"quota.window.num"`
	QuotaWindowSize              time.Duration  `config:"quota.window.size.seconds"`

	LogRetentionCheckInterval time.Duration `config:"log.retention.check.interval.ms"`
	LogCleanerBackoff         time.Duration `config:"log.cleaner.backoff.ms"`
	LogCleanerDedupeBuffer    Bytes         `config:"log.cleaner.dedupe.buffer.size"`

	OffsetsTopicPartitions        int32         `config:"offsets.topic.num.partitions"`
	OffsetsTopicReplicationFactor int32         `config:"offsets.topic.replication.factor"`
	OffsetsTopicSegmentBytes      Bytes         `config:"offsets.topic.segment.bytes"`
	OffsetsRetention              time.Duration `config:"offsets.retention.minutes"`
	OffsetsRetentionCheckInterval time.Duration `config:"offsets.retention.check.interval.ms"`
	OffsetsCommitTimeout          time.Duration `config:"offsets.commit.timeout.ms"`
	GroupInitialRebalanceDelay    time.Duration `config:"group.initial.rebalance.delay.ms"`
	GroupMinSessionTimeout        time.Duration `config:"group.min.session.timeout.ms"`
	GroupMaxSessionTimeout        time.Duration `config:"group.max.session.timeout.ms"`
	GroupMaxSize                  int           `config:"group.max.size"`

	TxnTopicPartitions        int32         `config:"transaction.state.log.num.partitions"`
	TxnTopicReplicationFactor int32         `config:"transaction.state.log.replication.factor"`
	TxnTopicMinISR            int32         `config:"transaction.state.log.min.isr"`
	TxnTopicSegmentBytes      Bytes         `config:"transaction.state.log.segment.bytes"`
	TxnMaxTimeout             time.Duration `config:"transaction.max.timeout.ms"`
	TxnIDExpiration           time.Duration `config:"transactional.id.expiration.ms"`
	TxnAbortTimedOutInterval  time.Duration `config:"transaction.abort.timed.out.transaction.cleanup.interval.ms"`
	TxnRemoveExpiredInterval  time.Duration `config:"transaction.remove.expired.transaction.cleanup.interval.ms"`
}

// LogDirs is log.dirs, else log.dir.
func (s *Settings) LogDirs() []string {
	if len(s.LogDirList) > 0 {
		return s.LogDirList
	}
	return []string{s.LogDir}
}

// TopicSettings is a topic's configuration, typed: its overrides, else the broker
// settings that are their synonyms (dynamic ones included), else the defaults of
// TopicDefs. Units as in Settings; a duration too long for time.Duration (Kafka's
// Long.MaxValue, "never") is Forever.
type TopicSettings struct {
	CleanupPolicy           string        `config:"cleanup.policy"`
	CompressionType         string        `config:"compression.type"`
	DeleteRetention         time.Duration `config:"delete.retention.ms"`
	FlushMessages           int64         `config:"flush.messages"`
	FlushInterval           time.Duration `config:"flush.ms"`
	IndexIntervalBytes      Bytes         `config:"index.interval.bytes"`
	MaxCompactionLag        time.Duration `config:"max.compaction.lag.ms"`
	MaxMessageBytes         Bytes         `config:"max.message.bytes"`
	MessageTimestampType    string        `config:"message.timestamp.type"`
	MessageTimestampDiffMax time.Duration `config:"message.timestamp.difference.max.ms"`
	MinCleanableDirtyRatio  float64       `config:"min.cleanable.dirty.ratio"`
	MinCompactionLag        time.Duration `config:"min.compaction.lag.ms"`
	MinInsyncReplicas       int           `config:"min.insync.replicas"`
	RetentionBytes          Bytes         `config:"retention.bytes"`
	Retention               time.Duration `config:"retention.ms"`
	SegmentBytes            Bytes         `config:"segment.bytes"`
	SegmentRoll             time.Duration `config:"segment.ms"`
	UncleanLeaderElection   bool          `config:"unclean.leader.election.enable"`
	// LeaderThrottled and FollowerThrottled are the replication throttle
	// lists as written; ParseThrottledReplicas reads them.
	LeaderThrottled   string `config:"leader.replication.throttled.replicas"`
	FollowerThrottled string `config:"follower.replication.throttled.replicas"`
}

// Bytes is a size in bytes.
type Bytes int64

// Forever is a duration setting whose value does not fit a time.Duration:
// Kafka's Long.MaxValue milliseconds, which means never.
const Forever = time.Duration(math.MaxInt64)

// Millis is d in milliseconds, with Forever as math.MaxInt64 (Long.MaxValue).
func Millis(d time.Duration) int64 {
	if d == Forever {
		return math.MaxInt64
	}
	return d.Milliseconds()
}

var (
	durationType = reflect.TypeFor[time.Duration]()
	overrideType = reflect.TypeFor[map[string]int]()
)

// unit is the time unit a duration setting's name ends with.
func unit(name string) (time.Duration, bool) {
	for _, s := range []struct {
		suffix string
		unit   time.Duration
	}{{".ms", time.Millisecond}, {".seconds", time.Second}, {".minutes", time.Minute}, {".hours", time.Hour}} {
		if strings.HasSuffix(name, s.suffix) {
			return s.unit, true
		}
	}
	return 0, false
}

// scale is n units as a duration, saturating at ±Forever.
func scale(n int64, u time.Duration) time.Duration {
	switch {
	case n > int64(Forever/u):
		return Forever
	case n < int64(-Forever/u):
		return -Forever
	}
	return time.Duration(n) * u
}

// decode fills the tagged fields of *dst from get, which resolves a setting
// defined in defs. With fallback, a value that does not parse gives way to the
// setting's default instead of failing.
func decode(dst any, defs []Def, get func(name string) Value, fallback bool) error {
	v := reflect.ValueOf(dst).Elem()
	t := v.Type()
	for i := range t.NumField() {
		f := t.Field(i)
		if !f.IsExported() {
			continue
		}
		name := f.Tag.Get("config")
		d, ok := lookup(defs, name)
		if !ok {
			return fmt.Errorf("config: %s.%s reads %q, which is not defined", t.Name(), f.Name, name)
		}
		val := get(name)
		if val.Null {
			continue
		}
		err := set(v.Field(i), name, val.Value)
		if err != nil && fallback && !d.Null {
			err = set(v.Field(i), name, d.Default)
		}
		if err != nil {
			return fmt.Errorf("invalid value %q for %s: %v", val.Value, name, err)
		}
	}
	return nil
}

func set(field reflect.Value, name, s string) error {
	switch field.Type() {
	case durationType:
		u, ok := unit(name)
		if !ok {
			return fmt.Errorf("a duration setting's name must end in .ms, .seconds, .minutes or .hours")
		}
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			return err
		}
		field.SetInt(int64(scale(n, u)))
		return nil
	case overrideType:
		m, err := ParseIPOverrides(s)
		if err != nil {
			return err
		}
		field.Set(reflect.ValueOf(m))
		return nil
	}
	switch field.Kind() {
	case reflect.Bool:
		b, err := strconv.ParseBool(s)
		if err != nil {
			return err
		}
		field.SetBool(b)
	case reflect.String:
		field.SetString(s)
	case reflect.Int, reflect.Int16, reflect.Int32, reflect.Int64:
		n, err := strconv.ParseInt(s, 10, field.Type().Bits())
		if err != nil {
			return err
		}
		field.SetInt(n)
	case reflect.Float64:
		f, err := strconv.ParseFloat(s, 64)
		if err != nil {
			return err
		}
		field.SetFloat(f)
	case reflect.Slice:
		field.Set(reflect.ValueOf(SplitList(s)))
	default:
		return fmt.Errorf("config: field of type %s is not supported", field.Type())
	}
	return nil
}
