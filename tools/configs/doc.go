// Package configs implements `ktool config describe|alter` for every entity
// kafka-configs.sh knows: topics and brokers (DescribeConfigs and
// IncrementalAlterConfigs; a broker's dynamic configs and the cluster-wide
// dynamic default), and users and clients (their quotas, DescribeClientQuotas
// and AlterClientQuotas).
package configs
