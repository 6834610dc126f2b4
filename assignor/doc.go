// Package assignor holds the consumer-group partition assignors: the Assignor
// contract, Kafka's Range (the default), RoundRobin, Sticky and
// CooperativeSticky, and Balancer, which lets a franz-go consumer group use
// any Assignor. The protocol names and user-data formats are Kafka's, so a
// group can mix ktool-assigned members with Java and librdkafka ones.
package assignor
