// Package nethost turns one Linux machine into a small network of hosts for
// fault tests. Each host is a network namespace with its own address on
// 10.50.0.0/24 and a veth pair to a bridge in a hub namespace; processes run
// in a host under `ip netns exec`, and the test process dials from a host
// through a thread that entered its namespace. Faults are real: nftables
// rules on the hub's bridge drop packets between hosts (both ways or one
// way, all or a random share of them), and a netfilter queue in a host,
// served by the test process, delays and reorders what it sends (queue.go:
// user space instead of tc netem, which many kernels lack).
//
// Everything is created under a name prefix unique to the run (ktn<pid>-<n>-)
// and removed when the test ends; namespaces left by a run that was killed
// are removed by the next one, once their process is gone. Without root, or
// without network namespaces, nftables and iproute2, New skips the test with
// a loud message (and fails it on a root machine with CI=true).
package nethost
