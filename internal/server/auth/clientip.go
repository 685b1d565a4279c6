package auth

import (
	"net/http"
	"net/netip"
	"strings"
)

// ClientIP returns the address of the client that made r: the direct
// peer (r.RemoteAddr), or, when the peer is one of Options.TrustedProxies,
// the right-most address in X-Forwarded-For that is not a trusted proxy
// (addresses to its left were written by the client and prove nothing).
// If every address is trusted it is the left-most one; if the walk meets
// an entry that is not an address, it stops at the last trusted hop. The
// result has IPv4-mapped addresses unmapped, and is the zero Addr when
// RemoteAddr is not an address (a Unix socket). X-Real-IP, Forwarded and
// the like are never read. The guard's rate limit uses the same answer.
func (g *Guard) ClientIP(r *http.Request) netip.Addr {
	client := peerAddr(r.RemoteAddr)
	if !g.trusted(client) {
		return client
	}
	xff := r.Header.Values("X-Forwarded-For")
	for i := len(xff) - 1; i >= 0; i-- {
		hops := strings.Split(xff[i], ",")
		for j := len(hops) - 1; j >= 0; j-- {
			a, ok := parseHop(hops[j])
			if !ok {
				return client
			}
			if !g.trusted(a) {
				return a
			}
			client = a
		}
	}
	return client
}

// trusted reports whether a is one of the configured proxies.
func (g *Guard) trusted(a netip.Addr) bool {
	a = a.WithZone("")
	for _, p := range g.proxies {
		if p.Contains(a) {
			return true
		}
	}
	return false
}

// forwardedTLS reports whether a trusted proxy says the client used
// https.
func (g *Guard) forwardedTLS(r *http.Request) bool {
	if !g.trusted(peerAddr(r.RemoteAddr)) {
		return false
	}
	proto, _, _ := strings.Cut(r.Header.Get("X-Forwarded-Proto"), ",")
	return strings.EqualFold(strings.TrimSpace(proto), "https")
}

// scheme is the scheme the client used to reach den: https when the
// server runs TLS or a trusted proxy says so.
func (g *Guard) scheme(r *http.Request) string {
	if g.tls || r.TLS != nil || g.forwardedTLS(r) {
		return "https"
	}
	return "http"
}

// peerAddr parses a RemoteAddr ("1.2.3.4:5678", "[::1]:80").
func peerAddr(remote string) netip.Addr {
	if ap, err := netip.ParseAddrPort(remote); err == nil {
		return ap.Addr().Unmap()
	}
	a, _ := netip.ParseAddr(remote)
	return a.Unmap()
}

// parseHop parses one X-Forwarded-For entry, which some proxies write
// with a port.
func parseHop(s string) (netip.Addr, bool) {
	s = strings.TrimSpace(s)
	if a, err := netip.ParseAddr(s); err == nil {
		return a.Unmap(), true
	}
	if ap, err := netip.ParseAddrPort(s); err == nil {
		return ap.Addr().Unmap(), true
	}
	return netip.Addr{}, false
}

// limitKey is the rate limit's key for r: its client IP, with an IPv6
// address cut to its /64, since one host on a LAN can pick any address
// in its prefix.
func (g *Guard) limitKey(r *http.Request) netip.Addr {
	a := g.ClientIP(r).WithZone("")
	if a.Is6() {
		p, _ := a.Prefix(64)
		return p.Addr()
	}
	return a
}
