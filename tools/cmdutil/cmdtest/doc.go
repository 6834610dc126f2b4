// Package cmdtest runs ktool commands in tests against kfake, franz-go's
// in-memory Kafka cluster, which serves as an implementation independent of
// ktool's own broker.
package cmdtest
