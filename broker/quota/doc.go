// Package quota holds Kafka's client quotas: the configured quotas of users,
// client ids and users+client ids with their <default> entities, resolved in
// KIP-55's precedence order, and the windowed rates (quota.window.num samples
// of quota.window.size.seconds) they are measured with, as Kafka's
// ClientQuotaManager does. A rate over its bound gives the throttle time of
// KIP-219: how long the client's channel stays muted so that its rate falls
// back to the bound.
//
// The package knows nothing of the wire or the store: the broker feeds it the
// stored configs (Table) and the bytes or request time of each request
// (Manager.Record).
package quota
