// Package profile implements `ktool profile create|use|list|delete`: named
// connection settings (brokers, ZooKeeper, client id) in ktool's config file,
// one of which is current.
package profile
