// Package egress is den's egress proxy: the one way out of a computer's
// network. With the network on, every TCP connection and DNS query the
// computer makes arrives at den (package netns redirects them in the
// computer's own network namespace, so that nothing inside can bypass
// den by ignoring proxy variables), and a Net, one per sandbox start,
// decides and serves each under the agent's Policy.
//
// A connection's name is what the client itself sent (the TLS server
// name, the HTTP Host) or, for other protocols, the name den's DNS gave
// its address for: den answers every DNS query itself, with an address
// of the computer's own from 198.18.0.0/15 per name, and never asks the
// world about a name (so that a name cannot carry data out). A
// connection to an address den did not give is known by that address
// only. The policy decides on the name (open: everything; allowlist:
// the rules; ask: the rules, then a person; off: nothing), and den then
// connects to that name itself, from its own namespace: never to an
// address the computer picked for it, and never to the host's loopback
// or own addresses, link-local or multicast ones, unless Options.Hosts
// pins the name there. UDP other than DNS, ICMP and raw sockets never
// leave.
//
// Each connection is recorded (Record) once it ends, a refused one at
// once; a refused HTTP request gets a 403 whose body says what was
// refused and how the user can allow it (Denied).
//
// Invariants:
//   - den reads a connection's first bytes (a ClientHello, a request's
//     head) only to learn its name, and relays them unchanged.
//   - Nothing the computer sends decides what den dials but the name:
//     an address in den's own range that den did not give is refused.
//   - Towards a host a secret is bound to, nothing the server sends
//     reaches the computer but with the values masked: HTTP responses,
//     and after an upgrade WebSocket frames without extensions, read
//     one by one; any other upgrade is refused.
//   - stop (from Serve) closes every listener and connection of the
//     computer and waits for every goroutine of its Net.
//
// Proxy and Net are safe for concurrent use.
package egress
