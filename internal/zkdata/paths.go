package zkdata

import (
	"strconv"
)

// Znode paths, as in Kafka 2.8.
const (
	ControllerPath               = "/controller"
	ControllerEpochPath          = "/controller_epoch"
	BrokersPath                  = "/brokers"
	BrokerIDsPath                = "/brokers/ids"
	TopicsPath                   = "/brokers/topics"
	BrokerSeqIDPath              = "/brokers/seqid"
	ClusterPath                  = "/cluster"
	ClusterIDPath                = "/cluster/id"
	AdminPath                    = "/admin"
	DeleteTopicsPath             = "/admin/delete_topics"
	PreferredReplicaElectionPath = "/admin/preferred_replica_election"
	ReassignPartitionsPath       = "/admin/reassign_partitions"
	IsrChangeNotificationPath    = "/isr_change_notification"
	LogDirEventNotificationPath  = "/log_dir_event_notification"
	ConfigPath                   = "/config"
	ConfigTopicsPath             = "/config/topics"
	ConfigClientsPath            = "/config/clients"
	ConfigUsersPath              = "/config/users"
	ConfigBrokersPath            = "/config/brokers"
	ConfigChangesPath            = "/config/changes"
	ConsumersPath                = "/consumers"
	LatestProducerIDBlockPath    = "/latest_producer_id_block"
	FeaturePath                  = "/feature"
)

// Znodes of ktool's own, outside Kafka's layout (Kafka-aware tools ignore them).
const (
	// ControllerTokenPath holds the secret the controller of the epoch it
	// names puts in its requests to brokers (EncodeControllerToken).
	ControllerTokenPath = "/ktool/controller_token"
)

// Name prefixes of sequential notification znodes.
const (
	IsrChangePrefix    = "isr_change_"
	LogDirEventPrefix  = "log_dir_event_"
	ConfigChangePrefix = "config_change_"
)

// Config entity types: the children of /config.
const (
	ConfigTypeTopic  = "topics"
	ConfigTypeClient = "clients"
	ConfigTypeUser   = "users"
	ConfigTypeBroker = "brokers"
)

// DefaultConfigEntity names the cluster-wide default entity, as in
// /config/brokers/<default>.
const DefaultConfigEntity = "<default>"

// PersistentPaths are the znodes a Kafka broker makes sure exist at startup
// (ZkData.PersistentZkPaths).
var PersistentPaths = []string{
	ConsumersPath,
	BrokerIDsPath,
	TopicsPath,
	ConfigChangesPath,
	DeleteTopicsPath,
	BrokerSeqIDPath,
	IsrChangeNotificationPath,
	LatestProducerIDBlockPath,
	LogDirEventNotificationPath,
	ConfigTopicsPath,
	ConfigClientsPath,
	ConfigUsersPath,
	ConfigBrokersPath,
}

// BrokerPath is /brokers/ids/<id>, the broker's ephemeral registration.
func BrokerPath(id int32) string { return BrokerIDsPath + "/" + strconv.Itoa(int(id)) }

// TopicPath is /brokers/topics/<topic>, the topic's replica assignment.
func TopicPath(topic string) string { return TopicsPath + "/" + topic }

// TopicPartitionsPath is /brokers/topics/<topic>/partitions.
func TopicPartitionsPath(topic string) string { return TopicPath(topic) + "/partitions" }

// PartitionPath is /brokers/topics/<topic>/partitions/<p>.
func PartitionPath(topic string, partition int32) string {
	return TopicPartitionsPath(topic) + "/" + strconv.Itoa(int(partition))
}

// PartitionStatePath is /brokers/topics/<topic>/partitions/<p>/state, the
// leader, ISR and epochs.
func PartitionStatePath(topic string, partition int32) string {
	return PartitionPath(topic, partition) + "/state"
}

// DeleteTopicPath is /admin/delete_topics/<topic>, the marker asking the
// controller to delete the topic.
func DeleteTopicPath(topic string) string { return DeleteTopicsPath + "/" + topic }

// ConfigEntityPath is /config/<entityType>/<name>.
func ConfigEntityPath(entityType, name string) string {
	return ConfigPath + "/" + entityType + "/" + name
}

// ConfigTopicPath is /config/topics/<topic>.
func ConfigTopicPath(topic string) string { return ConfigEntityPath(ConfigTypeTopic, topic) }

// ConfigBrokerPath is /config/brokers/<id or DefaultConfigEntity>.
func ConfigBrokerPath(broker string) string { return ConfigEntityPath(ConfigTypeBroker, broker) }

// IsrChangePath is the sequential-create path of an ISR change
// notification.
func IsrChangePath() string { return IsrChangeNotificationPath + "/" + IsrChangePrefix }

// LogDirEventPath is the sequential-create path of a log dir failure
// notification.
func LogDirEventPath() string { return LogDirEventNotificationPath + "/" + LogDirEventPrefix }

// ConfigChangePath is the sequential-create path of a config change
// notification.
func ConfigChangePath() string { return ConfigChangesPath + "/" + ConfigChangePrefix }
