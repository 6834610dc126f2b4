// Package cli runs ktool's operator commands against in-process ktool
// clusters (broker/brokertest) on both coordination stores, as an operator
// would: the commands' own tests run them against franz-go's kfake, these
// check that ktool's brokers serve them the same way.
package cli
