// Package disk holds the process-level disk-fault tests (KIP-112): a
// `ktool broker start` process whose log dirs sit on small tmpfs mounts that
// the tests fill up. They need root (mount) and skip loudly without it; CI
// runs them as root. Disks that return EIO (device-mapper error or flakey
// targets) are not tested: the kernel of this project's machines has no
// device-mapper driver.
package disk
