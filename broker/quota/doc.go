// Package quota holds Kafka's client quotas: the configured quotas of users,
// client ids and users+client ids with their <default> entities, resolved in
// KIP-55's precedence order, and the windowed rates (quota.window.num samples
// of quota.window.size.seconds) they are measured with, as Kafka's
// ClientQuotaManager does. A client over its bound is given the throttle time
// of KIP-219: how long its channel stays muted so that it falls back to the
// bound. For request_percentage that time comes from the windowed rate, as in
// Kafka; for the byte quotas from a leaky bucket (Bucket), which remembers
// what a client owes until it has waited for it.
//
// The package knows nothing of the wire or the store: the broker feeds it the
// stored configs (Table) and the bytes or request time of each request
// (Manager.Record).
package quota
