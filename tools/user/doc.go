// Package user is `ktool user`: SCRAM users as Kafka keeps them. Through the
// cluster (DescribeUserScramCredentials and AlterUserScramCredentials, APIs 50
// and 51) or, with --zookeeper, straight in /config/users/<user> with a
// /config/changes notification, as kafka-configs.sh --zookeeper does, which is
// how the first users (the brokers' own) are made before any broker runs.
package user
