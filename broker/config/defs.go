package config

import (
	"fmt"
	"math"
	"strconv"
	"strings"
)

// Type is a config's type, numbered as DescribeConfigs v3+ reports it.
type Type int8

// Config types.
const (
	Bool     Type = 1
	String   Type = 2
	Int      Type = 3
	Long     Type = 5
	Double   Type = 6
	List     Type = 7
	Password Type = 9
)

// Source says where a value came from, numbered as DescribeConfigs reports it.
type Source int8

// Config sources.
const (
	SourceDynamicTopic         Source = 1
	SourceDynamicBroker        Source = 2
	SourceDynamicDefaultBroker Source = 3
	SourceStaticBroker         Source = 4
	SourceDefault              Source = 5
)

// Def describes one setting.
type Def struct {
	Name    string
	Type    Type
	Default string // "" with NoDefault means null
	Null    bool   // the default is null
	Doc     string
	// Dynamic: may be changed at run time through AlterConfigs / IncrementalAlterConfigs.
	Dynamic bool
	// Synonyms of a topic config: broker settings that provide its default, most
	// specific first (log.retention.ms before log.retention.hours).
	Synonyms []string
	// Scale converts a synonym's value to the topic config's unit (hours -> ms).
	Scale map[string]int64
	Valid func(string) error
	// Ignored: accepted (a Kafka configuration keeps working) and validated, but
	// nothing in ktool reads it; the Doc says so. Every other setting is read
	// through Settings or TopicSettings (TestEveryDefinedKeyIsRead).
	Ignored bool
}

func oneOf(vals ...string) func(string) error {
	return func(v string) error {
		for _, x := range vals {
			if strings.EqualFold(v, x) {
				return nil
			}
		}
		return fmt.Errorf("must be one of %s", strings.Join(vals, ", "))
	}
}

func atLeast(min int64) func(string) error {
	return func(v string) error {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			return err
		}
		if n < min {
			return fmt.Errorf("must be at least %d", min)
		}
		return nil
	}
}

const maxLong = "9223372036854775807"

var compressionTypes = []string{"producer", "uncompressed", "gzip", "snappy", "lz4", "zstd"}

// BrokerDefs are the broker settings ktool understands, under Kafka's names.
var BrokerDefs = []Def{
	{Name: "broker.id", Type: Int, Default: "-1", Doc: "broker id; -1 generates one from ZooKeeper (above reserved.broker.max.id) and keeps it in meta.properties"},
	{Name: "reserved.broker.max.id", Type: Int, Default: "1000", Doc: "largest id a user may configure"},
	{Name: "broker.rack", Type: String, Null: true, Doc: "rack of the broker, for rack-aware replica assignment"},
	{Name: "listeners", Type: List, Default: "PLAINTEXT://:9092", Doc: "listener URIs NAME://host:port, e.g. INTERNAL://:9091,EXTERNAL://:9092"},
	{Name: "advertised.listeners", Type: List, Null: true, Doc: "listeners published to clients, by listener name; defaults to listeners"},
	{Name: "listener.security.protocol.map", Type: String, Default: "PLAINTEXT:PLAINTEXT,SSL:SSL,SASL_PLAINTEXT:SASL_PLAINTEXT,SASL_SSL:SASL_SSL", Doc: "listener name to security protocol (PLAINTEXT, SSL, SASL_PLAINTEXT, SASL_SSL)"},
	{Name: "inter.broker.listener.name", Type: String, Null: true, Doc: "listener brokers use to reach each other (controller requests, follower fetches)"},
	{Name: "security.inter.broker.protocol", Type: String, Null: true, Doc: "inter-broker security protocol when inter.broker.listener.name is not set (null: PLAINTEXT)", Valid: oneOf("PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL")},
	{Name: "sasl.enabled.mechanisms", Type: List, Default: "PLAIN,SCRAM-SHA-256,SCRAM-SHA-512", Doc: "SASL mechanisms served (Kafka's default GSSAPI is not supported); per listener as listener.name.<l>.sasl.enabled.mechanisms"},
	{Name: "authorizer.class.name", Type: String, Default: "", Doc: "the authorizer: empty for none (every principal may do everything), kafka.security.authorizer.AclAuthorizer (or acl) for ACLs kept in the coordination store as Kafka keeps them"},
	{Name: "super.users", Type: String, Default: "", Doc: "principals the authorizer allows everything, separated by semicolons (User:admin;User:broker); the broker's own inter-broker SASL principal is always one"},
	{Name: "allow.everyone.if.no.acl.found", Type: Bool, Default: "false", Doc: "with the authorizer on, allow an operation on a resource that has no ACL at all"},
	{Name: "sasl.mechanism.inter.broker.protocol", Type: String, Default: "PLAIN", Doc: "SASL mechanism brokers authenticate to each other with (Kafka's default GSSAPI is not supported)"},
	{Name: "sasl.jaas.config", Type: Password, Null: true, Doc: "JAAS login module line: the broker's own username/password and, for PLAIN, user_<name>=\"<password>\"; per listener and mechanism as listener.name.<l>.<mechanism>.sasl.jaas.config"},
	{Name: "ssl.keystore.type", Type: String, Default: "JKS", Doc: "PEM or PKCS12 (JKS is not supported)"},
	{Name: "ssl.keystore.location", Type: String, Null: true, Doc: "keystore file: PKCS12, or PEM with the key and the certificate chain"},
	{Name: "ssl.keystore.password", Type: Password, Null: true, Doc: "PKCS12 keystore password"},
	{Name: "ssl.key.password", Type: Password, Null: true, Doc: "accepted for compatibility; encrypted PEM keys are not supported"},
	{Name: "ssl.keystore.key", Type: Password, Null: true, Doc: "PEM private key inline (KIP-651)"},
	{Name: "ssl.keystore.certificate.chain", Type: String, Null: true, Doc: "PEM certificate chain inline (KIP-651)"},
	{Name: "ssl.truststore.type", Type: String, Default: "JKS", Doc: "PEM or PKCS12 (JKS is not supported)"},
	{Name: "ssl.truststore.location", Type: String, Null: true, Doc: "CA certificates that verify peers"},
	{Name: "ssl.truststore.password", Type: Password, Null: true, Doc: "PKCS12 truststore password"},
	{Name: "ssl.truststore.certificates", Type: String, Null: true, Doc: "PEM CA certificates inline (KIP-651)"},
	{Name: "ssl.client.auth", Type: String, Default: "none", Doc: "none, requested or required (mutual TLS)", Valid: oneOf("none", "requested", "required")},
	{Name: "ssl.enabled.protocols", Type: List, Default: "TLSv1.2,TLSv1.3", Doc: "TLS versions accepted"},
	{Name: "ssl.cipher.suites", Type: List, Null: true, Doc: "TLS 1.2 cipher suites (IANA names); null is Go's secure default set"},
	{Name: "ssl.principal.mapping.rules", Type: String, Default: "DEFAULT", Doc: "RULE:pattern/replacement/[LU],...,DEFAULT: certificate subject to principal name"},
	{Name: "sasl.oauthbearer.jwks.endpoint.url", Type: String, Null: true, Doc: "OAUTHBEARER: JWKS (https URL, file: URL or path) whose keys sign valid JWTs (KIP-768); unset accepts unsecured tokens (alg none, development only)"},
	{Name: "sasl.oauthbearer.jwks.endpoint.refresh.ms", Type: Long, Default: "3600000", Doc: "how often the JWKS is fetched again (also when a token names an unknown key)"},
	{Name: "sasl.oauthbearer.expected.audience", Type: List, Null: true, Doc: "OAUTHBEARER: a token's aud must name one of these"},
	{Name: "sasl.oauthbearer.expected.issuer", Type: String, Null: true, Doc: "OAUTHBEARER: a token's iss must be this"},
	{Name: "sasl.oauthbearer.sub.claim.name", Type: String, Default: "sub", Doc: "OAUTHBEARER: the claim naming the principal"},
	{Name: "sasl.oauthbearer.clock.skew.seconds", Type: Int, Default: "30", Doc: "OAUTHBEARER: tolerated clock difference for exp, iat and nbf"},
	{Name: "ssl.endpoint.identification.algorithm", Type: String, Default: "https", Doc: "https checks the host name of brokers this broker connects to; empty checks only the chain"},
	{Name: "log.dirs", Type: List, Null: true, Doc: "data directories; defaults to log.dir"},
	{Name: "log.dir", Type: String, Default: "/tmp/kafka-logs", Doc: "data directory when log.dirs is not set"},
	{Name: "num.recovery.threads.per.data.dir", Type: Int, Default: "8", Valid: atLeast(1), Doc: "logs opened (and recovered) at start, and closed at shutdown, in parallel per log dir (Kafka defaults to 1; a clean log costs a directory fsync, so ktool opens 8 at once)"},
	{Name: "log.fd.cache.size", Type: Int, Default: "0", Valid: atLeast(0), Doc: "descriptors of inactive segments' log files kept open between reads; 0 sizes it at start to half of what the open-file limit leaves after the partitions and log.fd.reserve, at least 64 (ktool)"},
	{Name: "log.fd.reserve", Type: Int, Default: "1024", Valid: atLeast(0), Doc: "descriptors kept for sockets and other files when the broker checks at start that the open-file limit holds its partitions (ktool)"},
	{Name: "zookeeper.connect", Type: String, Null: true, Doc: "ZooKeeper host:port[,host:port][/chroot]; unset runs standalone on the embedded store"},
	{Name: "zookeeper.session.timeout.ms", Type: Int, Default: "18000", Doc: "ZooKeeper session timeout"},
	{Name: "zookeeper.connection.timeout.ms", Type: Int, Null: true, Doc: "how long to wait for a ZooKeeper connection; defaults to the session timeout"},
	{Name: "num.partitions", Type: Int, Default: "1", Doc: "default partition count of new topics", Valid: atLeast(1)},
	{Name: "default.replication.factor", Type: Int, Default: "1", Doc: "default replication factor of new topics", Valid: atLeast(1)},
	{Name: "auto.create.topics.enable", Type: Bool, Default: "true", Doc: "create unknown topics when a client asks Metadata for them"},
	{Name: "delete.topic.enable", Type: Bool, Default: "true", Doc: "allow topic deletion"},
	{Name: "min.insync.replicas", Type: Int, Default: "1", Dynamic: true, Doc: "least ISR size for acks=all writes", Valid: atLeast(1)},
	{Name: "unclean.leader.election.enable", Type: Bool, Default: "false", Dynamic: true, Doc: "allow an out-of-sync replica to become leader (may lose data)"},
	{Name: "auto.leader.rebalance.enable", Type: Bool, Default: "true", Doc: "the controller moves leadership back to preferred replicas"},
	{Name: "leader.imbalance.per.broker.percentage", Type: Int, Default: "10", Doc: "imbalance ratio above which the controller rebalances a broker's leaders"},
	{Name: "leader.imbalance.check.interval.seconds", Type: Long, Default: "300", Doc: "how often the controller checks leader imbalance"},
	{Name: "replica.lag.time.max.ms", Type: Long, Default: "30000", Doc: "a follower not caught up for this long leaves the ISR"},
	{Name: "replica.fetch.max.bytes", Type: Int, Default: "1048576", Doc: "bytes per partition a follower fetches"},
	{Name: "replica.fetch.response.max.bytes", Type: Int, Default: "10485760", Doc: "bytes per follower fetch response"},
	{Name: "replica.fetch.wait.max.ms", Type: Int, Default: "500", Doc: "follower fetch long-poll time"},
	{Name: "replica.fetch.backoff.ms", Type: Int, Default: "1000", Doc: "sleep after a failed follower fetch"},
	{Name: "max.incremental.fetch.session.cache.slots", Type: Int, Default: "1000", Doc: "fetch sessions (KIP-227) the broker keeps; 0 turns them off", Valid: atLeast(0)},
	{Name: "min.incremental.fetch.session.eviction.ms", Type: Long, Default: "120000", Doc: "a fetch session idle this long may be evicted by a new one, and a younger one only by a follower's (a constant in Kafka)", Valid: atLeast(0)},
	{Name: "replica.high.watermark.checkpoint.interval.ms", Type: Long, Default: "5000", Doc: "how often a partition's changed checkpoints (high watermark, log start) are written between flushes"},
	{Name: "controlled.shutdown.enable", Type: Bool, Default: "true", Doc: "move leaderships away before a clean shutdown"},
	{Name: "controlled.shutdown.max.retries", Type: Int, Default: "3", Doc: "controlled shutdown attempts"},
	{Name: "controlled.shutdown.retry.backoff.ms", Type: Long, Default: "5000", Doc: "wait between controlled shutdown attempts"},
	{Name: "controller.socket.timeout.ms", Type: Int, Default: "30000", Doc: "timeout of controller-to-broker requests"},
	{Name: "socket.request.max.bytes", Type: Int, Default: "104857600", Doc: "largest request frame accepted", Valid: atLeast(1)},
	{Name: "sasl.server.max.receive.size", Type: Int, Default: "524288", Doc: "largest request frame accepted before a connection has authenticated", Valid: atLeast(1)},
	{Name: "connections.max.idle.ms", Type: Long, Default: "600000", Doc: "close a connection that sent nothing (or stopped sending a frame) for this long; -1 never", Valid: atLeast(-1)},
	{Name: "max.connections", Type: Int, Default: "2147483647", Doc: "open connections accepted by the broker", Valid: atLeast(0)},
	{Name: "max.connections.per.ip", Type: Int, Default: "2147483647", Doc: "open connections accepted from one address", Valid: atLeast(0)},
	{Name: "max.connections.per.ip.overrides", Type: String, Default: "", Doc: "per-address exceptions to max.connections.per.ip: host-or-ip:count,...", Valid: validIPOverrides},
	// Kafka's default is -1 (no budget); ours keeps a broker's request memory
	// bounded out of the box: twice socket.request.max.bytes.
	{Name: "queued.max.request.bytes", Type: Long, Default: "209715200", Doc: "request bytes read but not yet answered, across all connections; -1 no limit", Valid: atLeast(-1)},
	{Name: "message.decompression.max.ratio", Type: Int, Default: "32", Doc: "a batch's records may decompress to this many times the topic's max.message.bytes, and never past 1 GiB; beyond, the produce fails with MESSAGE_TOO_LARGE (ktool: Kafka has no bound, so a compressed bomb costs it whatever it inflates to)", Valid: atLeast(1)},
	{Name: "queued.max.requests", Type: Int, Default: "500", Doc: "requests handled at once across all connections", Valid: atLeast(1)},
	{Name: "quota.window.num", Type: Int, Default: "11", Doc: "samples a client quota's rate is measured over", Valid: atLeast(2)},
	{Name: "quota.window.size.seconds", Type: Int, Default: "1", Doc: "length of one client quota sample; also the longest throttle time given at once", Valid: atLeast(1)},
	// KIP-578's names. Kafka has no default bound; ours refuses requests whose
	// assignment alone would exhaust memory (2^31-1 partitions).
	{Name: "max.partitions", Type: Int, Default: "2147483647", Doc: "partitions in the cluster (KIP-578); creations beyond it fail with POLICY_VIOLATION", Valid: atLeast(1)},
	{Name: "max.broker.partitions", Type: Int, Default: "100000", Doc: "partition replicas per broker (KIP-578); creations beyond it fail with POLICY_VIOLATION", Valid: atLeast(1)},
	{Name: "message.max.bytes", Type: Int, Default: "1048588", Dynamic: true, Doc: "largest record batch accepted", Valid: atLeast(0)},
	{Name: "request.timeout.ms", Type: Int, Default: "30000", Ignored: true, Doc: "timeout of inter-broker requests; accepted and ignored (controller requests use controller.socket.timeout.ms)"},
	{Name: "log.segment.bytes", Type: Int, Default: "1073741824", Dynamic: true, Doc: "segment size", Valid: atLeast(14)},
	{Name: "log.roll.ms", Type: Long, Null: true, Dynamic: true, Doc: "roll a segment after this long"},
	{Name: "log.roll.hours", Type: Int, Default: "168", Doc: "roll a segment after this many hours"},
	{Name: "log.retention.ms", Type: Long, Null: true, Dynamic: true, Doc: "keep data this long; -1 forever"},
	{Name: "log.retention.minutes", Type: Int, Null: true, Doc: "retention in minutes"},
	{Name: "log.retention.hours", Type: Int, Default: "168", Doc: "retention in hours"},
	{Name: "log.retention.bytes", Type: Long, Default: "-1", Dynamic: true, Doc: "keep at most this many bytes per partition; -1 unbounded"},
	{Name: "log.retention.check.interval.ms", Type: Long, Default: "300000", Doc: "how often retention runs", Valid: atLeast(1)},
	{Name: "log.flush.interval.messages", Type: Long, Default: maxLong, Dynamic: true, Doc: "fsync after this many messages", Valid: atLeast(1)},
	{Name: "log.flush.interval.ms", Type: Long, Null: true, Dynamic: true, Doc: "fsync data older than this; null uses log.flush.scheduler.interval.ms"},
	{Name: "log.flush.scheduler.interval.ms", Type: Long, Default: maxLong, Doc: "how often the flusher checks logs"},
	{Name: "log.flush.offset.checkpoint.interval.ms", Type: Int, Default: "60000", Ignored: true, Doc: "how often recovery points are checkpointed; accepted and ignored"},
	{Name: "log.index.interval.bytes", Type: Int, Default: "4096", Dynamic: true, Doc: "bytes between offset-index entries", Valid: atLeast(0)},
	{Name: "log.message.timestamp.type", Type: String, Default: "CreateTime", Dynamic: true, Doc: "CreateTime or LogAppendTime", Valid: oneOf("CreateTime", "LogAppendTime")},
	{Name: "log.cleanup.policy", Type: List, Default: "delete", Dynamic: true, Doc: "delete, compact or both", Valid: validCleanup},
	{Name: "log.cleaner.delete.retention.ms", Type: Long, Default: "86400000", Dynamic: true, Doc: "how long tombstones are kept"},
	{Name: "log.cleaner.min.cleanable.ratio", Type: Double, Default: "0.5", Dynamic: true, Doc: "dirty ratio above which a log is compacted"},
	{Name: "log.cleaner.min.compaction.lag.ms", Type: Long, Default: "0", Dynamic: true, Doc: "least age of a record before compaction"},
	{Name: "log.cleaner.max.compaction.lag.ms", Type: Long, Default: maxLong, Dynamic: true, Doc: "most age of a record before compaction"},
	{Name: "log.cleaner.backoff.ms", Type: Long, Default: "15000", Doc: "how often the cleaner looks for logs to compact", Valid: atLeast(1)},
	{Name: "log.cleaner.dedupe.buffer.size", Type: Long, Default: "134217728", Doc: "memory one compaction pass may use for its key map"},
	{Name: "log.message.timestamp.difference.max.ms", Type: Long, Default: maxLong, Dynamic: true, Doc: "largest difference between a CreateTime timestamp and the broker's clock"},
	{Name: "compression.type", Type: String, Default: "producer", Dynamic: true, Doc: "producer keeps what the producer sent; or uncompressed, gzip, snappy, lz4, zstd", Valid: oneOf(compressionTypes...)},
	{Name: "offsets.topic.num.partitions", Type: Int, Default: "50", Doc: "partitions of __consumer_offsets", Valid: atLeast(1)},
	{Name: "offsets.topic.replication.factor", Type: Int, Default: "3", Doc: "replication factor of __consumer_offsets; a standalone broker uses 1", Valid: atLeast(1)},
	{Name: "offsets.topic.segment.bytes", Type: Int, Default: "104857600", Doc: "segment size of __consumer_offsets"},
	{Name: "offsets.retention.minutes", Type: Int, Default: "10080", Doc: "committed offsets of empty groups expire after this"},
	{Name: "offsets.retention.check.interval.ms", Type: Long, Default: "600000", Doc: "how often expired offsets are removed"},
	{Name: "offsets.commit.timeout.ms", Type: Int, Default: "5000", Doc: "how long an offset commit waits for replication"},
	{Name: "group.initial.rebalance.delay.ms", Type: Int, Default: "3000", Doc: "delay of the first rebalance of an empty group"},
	{Name: "group.min.session.timeout.ms", Type: Int, Default: "6000", Doc: "smallest session timeout a member may ask for"},
	{Name: "group.max.session.timeout.ms", Type: Int, Default: "1800000", Doc: "largest session timeout a member may ask for"},
	{Name: "group.max.size", Type: Int, Default: "2147483647", Doc: "most members of one group"},
	{Name: "transaction.state.log.num.partitions", Type: Int, Default: "50", Doc: "partitions of __transaction_state", Valid: atLeast(1)},
	{Name: "transaction.state.log.replication.factor", Type: Int, Default: "3", Doc: "replication factor of __transaction_state; a standalone broker uses 1", Valid: atLeast(1)},
	{Name: "transaction.state.log.min.isr", Type: Int, Default: "2", Doc: "min.insync.replicas of __transaction_state (capped at its replication factor)", Valid: atLeast(1)},
	{Name: "transaction.state.log.segment.bytes", Type: Int, Default: "104857600", Doc: "segment size of __transaction_state", Valid: atLeast(1)},
	{Name: "transaction.max.timeout.ms", Type: Int, Default: "900000", Doc: "largest transaction.timeout.ms a producer may ask for (INVALID_TRANSACTION_TIMEOUT above it)", Valid: atLeast(1)},
	{Name: "transactional.id.expiration.ms", Type: Int, Default: "604800000", Doc: "a transactional id with no transaction for this long is removed", Valid: atLeast(1)},
	{Name: "transaction.abort.timed.out.transaction.cleanup.interval.ms", Type: Int, Default: "10000", Doc: "how often transactions past their timeout are aborted", Valid: atLeast(1)},
	{Name: "transaction.remove.expired.transaction.cleanup.interval.ms", Type: Int, Default: "3600000", Doc: "how often expired transactional ids are removed", Valid: atLeast(1)},
	{Name: "producer.id.expiration.ms", Type: Int, Default: "86400000", Ignored: true, Doc: "producer state of idle producers expires after this; accepted and ignored"},
	{Name: "leader.replication.throttled.rate", Type: Long, Default: maxLong, Dynamic: true, Valid: atLeast(1),
		Doc: "bytes/s a leader sends to out-of-sync followers of the replicas listed in topics' leader.replication.throttled.replicas (set by reassignments)"},
	{Name: "follower.replication.throttled.rate", Type: Long, Default: maxLong, Dynamic: true, Valid: atLeast(1),
		Doc: "bytes/s a follower fetches for the replicas listed in topics' follower.replication.throttled.replicas (set by reassignments)"},
	{Name: "replica.alter.log.dirs.io.max.bytes.per.second", Type: Long, Default: maxLong, Dynamic: true, Valid: atLeast(1),
		Doc: "bytes/s the broker copies between its log dirs for AlterReplicaLogDirs moves (all moves together)"},
	{Name: "metrics.listener", Type: String, Null: true, Doc: "host:port of the Prometheus metrics and health HTTP listener (ktool)"},
	{Name: "metrics.pprof.enable", Type: Bool, Default: "false", Doc: "also serve Go's runtime profiles under /debug/pprof/ on metrics.listener (ktool)"},
	{Name: "cluster.id", Type: String, Null: true, Doc: "cluster id to use when the store has none yet (ktool)"},
}

// TopicDefs are the topic configs, with their broker synonyms.
var TopicDefs = []Def{
	{Name: "cleanup.policy", Type: List, Default: "delete", Synonyms: []string{"log.cleanup.policy"}, Valid: validCleanup},
	{Name: "compression.type", Type: String, Default: "producer", Synonyms: []string{"compression.type"}, Valid: oneOf(compressionTypes...)},
	{Name: "delete.retention.ms", Type: Long, Default: "86400000", Synonyms: []string{"log.cleaner.delete.retention.ms"}, Valid: atLeast(0)},
	{Name: "file.delete.delay.ms", Type: Long, Default: "60000", Synonyms: []string{"log.segment.delete.delay.ms"}, Ignored: true, Doc: "delay before a deleted segment's files are removed; accepted and ignored", Valid: atLeast(0)},
	{Name: "flush.messages", Type: Long, Default: maxLong, Synonyms: []string{"log.flush.interval.messages"}, Valid: atLeast(1)},
	{Name: "flush.ms", Type: Long, Default: maxLong, Synonyms: []string{"log.flush.interval.ms", "log.flush.scheduler.interval.ms"}, Valid: atLeast(0)},
	{Name: "index.interval.bytes", Type: Int, Default: "4096", Synonyms: []string{"log.index.interval.bytes"}, Valid: atLeast(0)},
	{Name: "max.compaction.lag.ms", Type: Long, Default: maxLong, Synonyms: []string{"log.cleaner.max.compaction.lag.ms"}, Valid: atLeast(1)},
	{Name: "max.message.bytes", Type: Int, Default: "1048588", Synonyms: []string{"message.max.bytes"}, Valid: atLeast(0)},
	{Name: "message.timestamp.type", Type: String, Default: "CreateTime", Synonyms: []string{"log.message.timestamp.type"}, Valid: oneOf("CreateTime", "LogAppendTime")},
	{Name: "message.timestamp.difference.max.ms", Type: Long, Default: maxLong, Synonyms: []string{"log.message.timestamp.difference.max.ms"}, Valid: atLeast(0)},
	{Name: "min.cleanable.dirty.ratio", Type: Double, Default: "0.5", Synonyms: []string{"log.cleaner.min.cleanable.ratio"}, Valid: validRatio},
	{Name: "min.compaction.lag.ms", Type: Long, Default: "0", Synonyms: []string{"log.cleaner.min.compaction.lag.ms"}, Valid: atLeast(0)},
	{Name: "min.insync.replicas", Type: Int, Default: "1", Synonyms: []string{"min.insync.replicas"}, Valid: atLeast(1)},
	{Name: "retention.bytes", Type: Long, Default: "-1", Synonyms: []string{"log.retention.bytes"}},
	{Name: "retention.ms", Type: Long, Default: "604800000", Synonyms: []string{"log.retention.ms", "log.retention.minutes", "log.retention.hours"},
		Scale: map[string]int64{"log.retention.minutes": 60000, "log.retention.hours": 3600000}, Valid: atLeast(-1)},
	{Name: "segment.bytes", Type: Int, Default: "1073741824", Synonyms: []string{"log.segment.bytes"}, Valid: atLeast(14)},
	{Name: "segment.ms", Type: Long, Default: "604800000", Synonyms: []string{"log.roll.ms", "log.roll.hours"},
		Scale: map[string]int64{"log.roll.hours": 3600000}, Valid: atLeast(1)},
	{Name: "unclean.leader.election.enable", Type: Bool, Default: "false", Synonyms: []string{"unclean.leader.election.enable"}},
	{Name: "leader.replication.throttled.replicas", Type: List, Default: "", Valid: validThrottledReplicas,
		Doc: "replicas (partition:broker, or *) whose leader throttles replication to out-of-sync followers at leader.replication.throttled.rate"},
	{Name: "follower.replication.throttled.replicas", Type: List, Default: "", Valid: validThrottledReplicas,
		Doc: "replicas (partition:broker, or *) whose follower throttles its fetching at follower.replication.throttled.rate"},
	{Name: "message.downconversion.enable", Type: Bool, Default: "true", Ignored: true, Doc: "accepted and ignored: ktool never down-converts"},
	{Name: "preallocate", Type: Bool, Default: "false", Ignored: true, Doc: "preallocate segment files; accepted and ignored"},
}

// validThrottledReplicas checks a *.replication.throttled.replicas list:
// empty, "*", or partition:broker pairs.
func validThrottledReplicas(v string) error {
	_, err := ParseThrottledReplicas(v)
	return err
}

func validCleanup(v string) error {
	for _, p := range strings.Split(v, ",") {
		switch strings.TrimSpace(p) {
		case "delete", "compact":
		default:
			return fmt.Errorf("cleanup.policy must be delete, compact or both, not %q", p)
		}
	}
	return nil
}

func validRatio(v string) error {
	f, err := strconv.ParseFloat(v, 64)
	if err != nil || f < 0 || f > 1 || math.IsNaN(f) {
		return fmt.Errorf("must be a number between 0 and 1")
	}
	return nil
}

// LookupBroker returns the definition of a broker setting.
func LookupBroker(name string) (Def, bool) { return lookup(BrokerDefs, name) }

// LookupTopic returns the definition of a topic config.
func LookupTopic(name string) (Def, bool) { return lookup(TopicDefs, name) }

func lookup(defs []Def, name string) (Def, bool) {
	for _, d := range defs {
		if d.Name == name {
			return d, true
		}
	}
	return Def{}, false
}

// Check validates v against d's type and rule.
func (d Def) Check(v string) error {
	var err error
	switch d.Type {
	case Bool:
		if _, e := strconv.ParseBool(v); e != nil {
			err = fmt.Errorf("must be true or false")
		}
	case Int:
		_, err = strconv.ParseInt(v, 10, 32)
	case Long:
		_, err = strconv.ParseInt(v, 10, 64)
	case Double:
		_, err = strconv.ParseFloat(v, 64)
	}
	if err == nil && d.Valid != nil {
		err = d.Valid(v)
	}
	if err != nil {
		return fmt.Errorf("invalid value %q for %s: %v", v, d.Name, err)
	}
	return nil
}

// validIPOverrides checks max.connections.per.ip.overrides: host-or-ip:count pairs.
func validIPOverrides(v string) error {
	_, err := ParseIPOverrides(v)
	return err
}

// ParseIPOverrides reads max.connections.per.ip.overrides ("host:10,10.0.0.1:20";
// IPv6 addresses in brackets).
func ParseIPOverrides(v string) (map[string]int, error) {
	out := map[string]int{}
	for _, item := range SplitList(v) {
		i := strings.LastIndex(item, ":")
		if i <= 0 {
			return nil, fmt.Errorf("max.connections.per.ip.overrides: %q is not host:count", item)
		}
		n, err := strconv.Atoi(strings.TrimSpace(item[i+1:]))
		if err != nil || n < 0 {
			return nil, fmt.Errorf("max.connections.per.ip.overrides: %q: count must be a number >= 0", item)
		}
		host := strings.Trim(strings.TrimSpace(item[:i]), "[]")
		out[host] = n
	}
	return out, nil
}
