// Package quota is `ktool quota set|list|delete`: Kafka client quotas
// (producer_byte_rate, consumer_byte_rate, request_percentage) of users,
// client ids and users+client ids, and their <default> entities, managed over
// DescribeClientQuotas and AlterClientQuotas as kafka-configs.sh does, so it
// works against any cluster that serves them (Kafka 2.6+, ktool).
package quota
