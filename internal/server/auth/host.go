package auth

import (
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"os"
	"strings"
)

// hosts decides which Host headers the guard answers, against DNS
// rebinding: a page on an attacker's name that resolves to this machine
// sends that name, which is not on the list.
type hosts struct {
	exact    map[string]bool
	suffixes []string // ".example.ts.net" for "*.example.ts.net"
}

// newHosts builds the list from the caller's names and the machine's
// hostname (if the OS tells it): the name, its first label and that
// label with ".local", as mDNS announces it.
func newHosts(allowed []string) (hosts, error) {
	h := hosts{exact: map[string]bool{}}
	if name, err := os.Hostname(); err == nil && name != "" {
		name = normalHost(name)
		short, _, _ := strings.Cut(name, ".")
		h.exact[name], h.exact[short], h.exact[short+".local"] = true, true, true
	}
	for _, a := range allowed {
		rest, wild := strings.CutPrefix(a, "*.")
		name := normalHost(rest)
		if name == "" || strings.ContainsAny(rest, "*/\\ \t@?#") {
			return hosts{}, fmt.Errorf("auth: allowed host %q: want a name such as den.example or *.example.ts.net", a)
		}
		if wild {
			h.suffixes = append(h.suffixes, "."+name)
		} else {
			h.exact[name] = true
		}
	}
	return h, nil
}

// allow reports whether a request for hostport may be answered: any IP
// literal (an attacker's DNS name never is one), localhost and its
// subdomains, and the listed names. Ports are ignored.
func (h hosts) allow(hostport string) bool {
	name := normalHost(hostport)
	if name == "" {
		return false
	}
	if _, err := netip.ParseAddr(name); err == nil {
		return true
	}
	if name == "localhost" || strings.HasSuffix(name, ".localhost") || h.exact[name] {
		return true
	}
	for _, s := range h.suffixes {
		if strings.HasSuffix(name, s) {
			return true
		}
	}
	return false
}

// normalHost is the name in a Host header (or a configured name):
// without port or IPv6 brackets, lower case, without a trailing dot.
func normalHost(hostport string) string {
	name := hostport
	if host, _, err := net.SplitHostPort(hostport); err == nil {
		name = host
	} else if len(name) > 1 && name[0] == '[' && name[len(name)-1] == ']' {
		name = name[1 : len(name)-1]
	}
	return strings.TrimSuffix(strings.ToLower(name), ".")
}

// sameOrigin reports whether r carries exactly one Origin header and it
// names r's own origin: the scheme the client used, and the Host header,
// default ports ignored.
func sameOrigin(r *http.Request, scheme string) bool {
	vals := r.Header.Values("Origin")
	if len(vals) != 1 {
		return false
	}
	s, host, ok := strings.Cut(vals[0], "://")
	if !ok || !strings.EqualFold(s, scheme) || host == "" || strings.ContainsAny(host, "/?#@\\ ") {
		return false
	}
	return originHost(host, scheme) == originHost(r.Host, scheme)
}

// originHost is host[:port] in lower case, with the scheme's default
// port dropped.
func originHost(hostport, scheme string) string {
	h := strings.ToLower(hostport)
	if scheme == "https" {
		return strings.TrimSuffix(h, ":443")
	}
	return strings.TrimSuffix(h, ":80")
}

// needsOrigin reports whether a cookie-authenticated r must prove it
// comes from den's own pages: it changes state, or opens a WebSocket.
func needsOrigin(r *http.Request) bool {
	switch r.Method {
	case http.MethodGet, http.MethodHead, http.MethodOptions:
	default:
		return true
	}
	for _, v := range r.Header.Values("Upgrade") {
		for _, p := range strings.Split(v, ",") {
			if strings.EqualFold(strings.TrimSpace(p), "websocket") {
				return true
			}
		}
	}
	return false
}
