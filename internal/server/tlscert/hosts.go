package tlscert

import (
	"fmt"
	"net"
	"net/netip"
	"os"
	"slices"
	"strings"
)

// HostNames returns the names and addresses a phone may use to reach this
// machine, for LoadOrCreate's hosts: localhost, 127.0.0.1 and ::1; the
// host name and its mDNS form (first label + ".local"); and every
// non-loopback, non-link-local unicast address of the interfaces that
// are up. Link-local addresses are left out because a certificate cannot
// name their zone. Names DNS does not allow and interfaces that cannot be
// listed are skipped, so the result is always acceptable to LoadOrCreate.
func HostNames() []string {
	out := []string{"localhost", "127.0.0.1", "::1"}
	if h, err := os.Hostname(); err == nil {
		if name, ok := dnsName(h); ok {
			short, _, _ := strings.Cut(name, ".")
			out = append(out, name, short+".local")
		}
	}
	ifaces, err := net.Interfaces()
	if err != nil {
		return dedupe(out)
	}
	for _, ifc := range ifaces {
		if ifc.Flags&net.FlagUp == 0 || ifc.Flags&net.FlagLoopback != 0 {
			continue
		}
		addrs, err := ifc.Addrs()
		if err != nil {
			continue
		}
		for _, a := range addrs {
			ipnet, ok := a.(*net.IPNet)
			if !ok {
				continue
			}
			ip, ok := netip.AddrFromSlice(ipnet.IP)
			if ok && keepAddr(ip.Unmap()) {
				out = append(out, ip.Unmap().String())
			}
		}
	}
	return dedupe(out)
}

// keepAddr reports whether an interface address belongs in the default
// certificate: unicast, neither loopback (named already) nor link-local.
func keepAddr(ip netip.Addr) bool {
	return ip.IsGlobalUnicast() && !ip.IsLinkLocalUnicast() && !ip.IsLoopback()
}

// parseHosts splits hosts into DNS names (lower case, without a trailing
// dot) and IP addresses (IPv4-mapped ones unmapped), each list without
// duplicates and in the order given. "[::1]" is read as ::1.
func parseHosts(hosts []string) (names []string, ips []netip.Addr, err error) {
	for _, h := range hosts {
		s := strings.TrimSpace(h)
		if strings.HasPrefix(s, "[") && strings.HasSuffix(s, "]") {
			s = s[1 : len(s)-1]
		}
		if ip, perr := netip.ParseAddr(s); perr == nil {
			if ip.Zone() != "" {
				return nil, nil, fmt.Errorf("tlscert: %q %w", h, ErrHost)
			}
			ips = append(ips, ip.Unmap())
			continue
		}
		name, ok := dnsName(s)
		if !ok {
			return nil, nil, fmt.Errorf("tlscert: %q %w", h, ErrHost)
		}
		names = append(names, name)
	}
	if len(names)+len(ips) == 0 {
		return nil, nil, fmt.Errorf("tlscert: %w", ErrNoHosts)
	}
	return dedupe(names), dedupe(ips), nil
}

// dnsName returns s in lower case without a trailing dot, and whether it
// is a name a certificate may carry: at most 253 bytes of labels of 1 to
// 63 letters, digits, hyphens or underscores, no label starting or ending
// with a hyphen. Underscores are allowed because host names with them
// exist and browsers match them; wildcards are not, since den names
// only real hosts.
func dnsName(s string) (string, bool) {
	s = strings.ToLower(strings.TrimSuffix(s, "."))
	if s == "" || len(s) > 253 {
		return "", false
	}
	for label := range strings.SplitSeq(s, ".") {
		if label == "" || len(label) > 63 || label[0] == '-' || label[len(label)-1] == '-' {
			return "", false
		}
		for _, c := range []byte(label) {
			ok := c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-' || c == '_'
			if !ok {
				return "", false
			}
		}
	}
	return s, true
}

// dedupe returns xs without repeats, keeping the first of each.
func dedupe[T comparable](xs []T) []T {
	out := make([]T, 0, len(xs))
	for _, x := range xs {
		if !slices.Contains(out, x) {
			out = append(out, x)
		}
	}
	return out
}
