// Package auth is the broker's authentication: listeners as Kafka names them
// (listeners, listener.security.protocol.map, advertised.listeners, the
// inter-broker listener), TLS on SSL and SASL_SSL listeners (PEM per KIP-651 and
// PKCS12 keystores, truststores, ssl.client.auth, reload on file change),
// principals from certificate subjects (ssl.principal.mapping.rules), and SASL
// (PLAIN, SCRAM-SHA-256/512 against credentials kept in /config/users/<user>).
//
// The same settings make the broker's own client side: Dialer connects to
// another broker's inter-broker listener with TLS and SASL.
package auth
