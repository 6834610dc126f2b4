// Package disk holds the process-level disk-fault tests (KIP-112):
// `ktool broker start` processes whose log dirs sit on small tmpfs mounts
// that the tests fill up (ENOSPC), or on FUSE mounts served by the test
// (internal/faultfs) that start returning EIO on writes, fsyncs or reads,
// now and then, or after a torn write. They need root (mount) and skip
// loudly without it; CI runs them as root.
package disk
