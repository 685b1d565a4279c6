// Package netns gives a sandbox's own network namespace its one way
// out: den. Attach configures the namespace so that every connection
// and every DNS query the computer makes arrives at listeners den holds
// inside it, and nothing else leaves; what den does with them (its
// egress proxy) is another package's business.
//
// What Attach makes, in the namespace of a sandbox's first process:
//
//   - den0, one end of a veth pair whose other end (den1) stays in the
//     namespace too, with Address and Address6 and default routes
//     through it, so that connect() to any address finds a route;
//   - den's listeners on the namespace's loopback: TCP on 127.0.0.1 and
//     on ::1 (one port), and DNS over UDP on 127.0.0.1;
//   - an nf_tables table "den" (family inet): every TCP connection
//     (IPv4 and IPv6) that does not go out over lo is redirected to the
//     TCP listeners, every UDP datagram to port 53 over IPv4 to the DNS
//     listener, and every other packet that would leave through den0 is
//     dropped (UDP, ICMP, IPv6 DNS, raw sockets), as is what the
//     redirect did not touch.
//
// OriginalDst tells, for a connection a TCP listener accepted, where
// the computer meant it to go.
//
// With bwrap, Attach runs at the Gate: bwrap sets up a new namespace's
// loopback itself, after --userns-block-fd, and den's listeners need
// it; the gate holds bwrap after its loopback setup and before the
// sandbox's first process, so the rules and listeners are in place
// before anything inside runs.
//
// How den gets into the namespace: as root, from an OS thread of its
// own that joins the namespace (setns) for the setup and leaves it. As
// an ordinary user den cannot join a namespace of the user namespace it
// owns from a multi-threaded process, so it runs a helper: nsenter joins
// the sandbox's user and network namespaces and runs den's own binary
// in helper mode (MaybeHelper), which does the same setup there and
// hands the listeners back over a socket. The helper exits at once; the
// listeners live on in den.
//
// Invariants:
//   - Fail closed: Attach returns an error, and the caller must not let
//     the sandbox run, unless the device, the routes, the rules and the
//     listeners are all in place.
//   - Attach refuses den's own network namespace, so a wrong pid can
//     never redirect the host's traffic, and a namespace whose loopback
//     is not up yet.
//   - The listeners hold the namespace: close the Net when the sandbox
//     ends, or the namespace outlives it.
//   - The computer holds no capability in its user namespace (bwrap
//     drops them all, and den's seccomp filter refuses new namespaces),
//     so it cannot change the rules, open raw sockets or bind den's
//     ports first.
//
// Net's methods are safe for concurrent use. The package holds no
// mutable state of its own.
package netns
