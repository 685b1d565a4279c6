// Package netns gives a sandbox's own network namespace user-mode
// networking: slirp4netns, run by den on the host, puts a tap device in
// the namespace with an address, a default route and a DNS forwarder,
// and relays the sandbox's TCP and UDP through ordinary host sockets.
//
// A sandbox always has its own network namespace; this package is what
// makes "network on" mean the internet without the host: the host's
// loopback (127.0.0.0/8, also as the gateway 10.0.2.2) and its abstract
// unix sockets, which belong to the host's namespace, stay unreachable.
//
// With bwrap, Attach runs at the Gate: bwrap sets up a new namespace's
// loopback itself, after --userns-block-fd, and fails if slirp4netns
// has brought lo up first; the gate holds bwrap after its loopback
// setup and before the sandbox's first process.
//
// Invariants:
//   - slirp4netns always runs with --disable-host-loopback. Its own
//     sandbox (a mount namespace holding only /etc and /run, and no
//     capability but CAP_NET_BIND_SERVICE) and seccomp filter are on;
//     each is dropped, with a line to Options.Log, only when
//     slirp4netns reports it cannot work on this host.
//   - The one way to the host's loopback is the DNS forwarder: 10.0.2.3
//     port 53, and no other port, reaches the first nameserver of the
//     host's /etc/resolv.conf, which may be a loopback resolver such as
//     systemd-resolved's 127.0.0.53.
//   - The computer has IPv4 only.
//   - slirp4netns runs with the least privilege that works: as den's
//     own user when den is not root, inside the sandbox's user
//     namespace; when den is root, as the owner of the sandbox's user
//     namespace, or as root (still with its sandbox and seccomp, and
//     a line to Options.Log) when /dev/net/tun is closed to that owner.
//   - slirp4netns never outlives den or the sandbox: it holds the read
//     end of a pipe whose write end only den has (--exit-fd), it gets
//     SIGKILL when den dies (Pdeathsig), and den ends it as soon as the
//     sandbox's process exits, whether or not Close is called.
//   - Attach refuses den's own network namespace, so a wrong pid can
//     never give the host a second default route, and a namespace
//     whose loopback is not up yet.
//
// Net's methods are safe for concurrent use. The package holds no
// mutable state of its own.
package netns
