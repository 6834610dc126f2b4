// Package plugins runs partition assignors and compression codecs as
// hashicorp/go-plugin plugins over gRPC. The contract (handshake, kinds,
// Info) lives in contract.go, the gRPC shims in grpc_*.go with the wire
// encoding of domain types kept apart in translate.go, and the Catalog finds,
// starts, caches and stops plugin processes: the built-ins are served by the
// ktool binary itself (`ktool __plugin serve KIND NAME`), external plugins
// are executables named ktool-KIND-NAME in the plugin directory.
package plugins
