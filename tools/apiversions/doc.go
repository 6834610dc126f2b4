// Package apiversions implements `ktool api-versions`: every broker's
// supported version range of each Kafka API and the version ktool would use,
// as kafka-broker-api-versions.sh prints them.
package apiversions
