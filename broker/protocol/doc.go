// Package protocol is the Kafka wire framing of the broker: size-prefixed frames with a
// limit checked before allocation, request headers (v0-v2) decoded with kmsg, and a
// connection loop that reads requests in order, lets handlers answer now or later, and
// writes responses strictly in request order. A response is a sequence of byte chunks
// and file regions; file regions go to the socket with sendfile(2), so record bytes
// never pass through user space on the fetch path.
package protocol
