// Package config defines the broker and topic settings under Kafka's names
// (server.properties and topic configs), their defaults, types, synonyms and
// sources, and parses Java-style properties files. One table drives parsing,
// validation, DescribeConfigs and the documentation.
package config
