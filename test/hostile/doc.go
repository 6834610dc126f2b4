// Package hostile attacks a `ktool broker start` child process the way a hostile
// or broken client would, on its plaintext listener, and checks from the outside
// that the broker stays alive and serving, that its memory (VmHWM from
// /proc/<pid>/status) stays within a bound of its baseline, that nothing appears
// or vanishes outside log.dirs, and that no forged inter-broker request changes
// cluster state. One test per attack of issue 11; every case is short, so CI runs
// them all. KTOOL_TEST_BIN points the tests at a prebuilt binary.
package hostile
