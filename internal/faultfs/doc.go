// Package faultfs gives tests a real failing disk: a FUSE loopback file
// system over a backing directory whose operations can be made to fail at
// run time (EIO, ENOSPC, or any errno) by class: reads, writes, syncs,
// opens, metadata changes, or all of them; always, for F of every N
// operations (flakey), or once K bytes have been written (the write that
// crosses K lands in part: a torn write).
//
// It stands in for device-mapper's error and flakey targets, which the
// kernel of this project's machines lacks (no /dev/mapper/control); FUSE is
// built in (/dev/fuse). The file system is served by the process that mounts
// it (the test), so a broker in another process meets the faults through the
// kernel exactly as it would meet a failing disk, and the test switches them
// from Go with Set and Clear. Every open file is in direct I/O mode, so each
// read and write reaches the server and none is answered from the page cache,
// and no file is handed to the kernel for FUSE passthrough.
//
// Mounting needs root (mount(2) of type fuse, no fusermount). A mount never
// outlives its server in a way that hangs: the /dev/fuse descriptor is
// close-on-exec, so only the test process holds it and the kernel aborts the
// connection (ENOTCONN) when that process dies; Close unmounts (lazily when a
// file is still open) and aborts the connection when a copy of the mount in
// another mount namespace keeps it alive; and Mount first detaches the
// mounts of this package whose process no longer runs.
package faultfs
