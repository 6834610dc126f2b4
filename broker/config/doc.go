// Package config defines the broker and topic settings under Kafka's names
// (server.properties and topic configs), their defaults, types, synonyms and
// sources, and parses Java-style properties files. One table drives parsing,
// validation, DescribeConfigs and the documentation.
//
// The broker reads its settings typed: NewBroker builds Settings (the static
// broker settings, with durations and byte sizes in their units) once and
// validates it; Broker.Topic resolves a topic's TopicSettings from its overrides,
// the dynamic broker settings and the defaults. Nothing outside this package
// looks a setting up by name; the tests check that every field names a defined
// setting and every defined setting is read or marked Ignored.
package config
