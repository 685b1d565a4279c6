package egress

import (
	"fmt"
	"net"
	"net/netip"
	"slices"
	"strconv"
	"strings"
)

// Mode is an egress policy's kind.
type Mode string

// The modes.
const (
	// Open lets every connection out, and records each.
	Open Mode = "open"
	// Allowlist lets out connections to the hosts (and ports) of the
	// policy's rules, and denies the rest.
	Allowlist Mode = "allowlist"
	// Ask lets out what the rules allow and asks a person about the
	// rest, as any approval: once, for the session, or always.
	Ask Mode = "ask"
	// Off: the computer has no network at all, only its loopback.
	Off Mode = "off"
)

// ParseMode parses a mode's name; "" is Open, den's default.
func ParseMode(s string) (Mode, error) {
	switch m := Mode(strings.ToLower(strings.TrimSpace(s))); m {
	case "":
		return Open, nil
	case Open, Allowlist, Ask, Off:
		return m, nil
	}
	return "", fmt.Errorf("egress %q: want open, allowlist, ask or off", s)
}

// Rule allows one host, or a family of hosts, on one port or on all.
type Rule struct {
	// Host is a domain ("pypi.org"), a wildcard ("*.github.com": every
	// name below github.com, at any depth, but not github.com itself),
	// an IP address or a CIDR prefix.
	Host string
	// Port is the one port the rule allows; 0 allows every port.
	Port int
	// From says where the rule comes from when it is not the policy's
	// own: "skill:NAME" for a rule a skill brings while it is in use.
	From string

	prefix netip.Prefix // for an address or a prefix
}

// ParseRule parses "HOST" or "HOST:PORT" (an IPv6 address or prefix in
// brackets when it has a port: "[2001:db8::/32]:443").
func ParseRule(s string) (Rule, error) {
	s = strings.TrimSpace(s)
	host, port := s, 0
	if h, p, err := net.SplitHostPort(s); err == nil {
		n, err := strconv.Atoi(p)
		if err != nil || n < 1 || n > 65535 {
			return Rule{}, fmt.Errorf("egress rule %q: bad port %q", s, p)
		}
		host, port = h, n
	} else if strings.Count(s, ":") == 1 {
		return Rule{}, fmt.Errorf("egress rule %q: bad port", s)
	}
	r := Rule{Host: strings.ToLower(strings.TrimSuffix(host, ".")), Port: port}
	if p, err := netip.ParsePrefix(r.Host); err == nil {
		r.prefix = p.Masked()
		return r, nil
	}
	if a, err := netip.ParseAddr(r.Host); err == nil {
		r.prefix = netip.PrefixFrom(a.Unmap(), a.Unmap().BitLen())
		return r, nil
	}
	name := strings.TrimPrefix(r.Host, "*.")
	if !validName(name) {
		return Rule{}, fmt.Errorf("egress rule %q: not a domain, a wildcard (*.example.com), an address or a prefix", s)
	}
	return r, nil
}

// String is the rule as ParseRule reads it.
func (r Rule) String() string {
	if r.Port == 0 {
		return r.Host
	}
	h := r.Host
	if strings.Contains(h, ":") {
		h = "[" + h + "]"
	}
	return h + ":" + strconv.Itoa(r.Port)
}

// Matches reports whether the rule allows host (a name or an address)
// on port.
func (r Rule) Matches(host string, port int) bool {
	if r.Port != 0 && r.Port != port {
		return false
	}
	if r.prefix.IsValid() {
		a, err := netip.ParseAddr(host)
		return err == nil && r.prefix.Contains(a.Unmap())
	}
	host = canonical(host)
	if rest, ok := strings.CutPrefix(r.Host, "*."); ok {
		return strings.HasSuffix(host, "."+rest)
	}
	return host == r.Host
}

// Policy is an agent's egress policy, or an MCP server's.
type Policy struct {
	Mode  Mode
	Allow []Rule
	// Of says whose policy it is when not the agent's: "mcp:NAME" for
	// an MCP server's own.
	Of string
}

// ParsePolicy parses a mode and its rules.
func ParsePolicy(mode string, allow []string) (Policy, error) {
	m, err := ParseMode(mode)
	if err != nil {
		return Policy{}, err
	}
	p := Policy{Mode: m}
	for _, s := range allow {
		r, err := ParseRule(s)
		if err != nil {
			return Policy{}, err
		}
		p.Allow = append(p.Allow, r)
	}
	return p, nil
}

// Decision is what a policy says of one connection.
type Decision int

// The decisions.
const (
	Deny Decision = iota
	Allow
	AskUser
)

// Decide says what p does with a connection to host (a name or an
// address) on port.
func (p Policy) Decide(host string, port int) Decision {
	d, _ := p.Match(host, port)
	return d
}

// Match is Decide, with the rule that allowed the connection when one
// did.
func (p Policy) Match(host string, port int) (Decision, Rule) {
	switch p.Mode {
	case Open:
		return Allow, Rule{}
	case Off:
		return Deny, Rule{}
	}
	for _, r := range p.Allow {
		if r.Matches(host, port) {
			return Allow, r
		}
	}
	if p.Mode == Ask {
		return AskUser, Rule{}
	}
	return Deny, Rule{}
}

// With is p with more rules, those a skill in use brings: they widen
// an allowlist or an ask policy, and change nothing of an open one or
// of one that is off.
func (p Policy) With(more []Rule) Policy {
	if len(more) == 0 || p.Mode == Open || p.Mode == Off {
		return p
	}
	p.Allow = append(slices.Clip(p.Allow), more...)
	return p
}

// Reaches reports whether p lets the computer reach name on some port
// without asking.
func (p Policy) Reaches(name string) bool {
	switch p.Mode {
	case Open, "":
		return true
	case Off:
		return false
	}
	for _, r := range p.Allow {
		if r.prefix.IsValid() {
			continue
		}
		any := r
		any.Port = 0
		if any.Matches(name, 0) {
			return true
		}
	}
	return false
}

// canonical is a name as den compares it: lower case, without the
// root's dot.
func canonical(name string) string {
	return strings.ToLower(strings.TrimSuffix(name, "."))
}

// validName reports whether s is a plausible domain name: labels of
// letters, digits, '-' and '_', none empty, at most 253 bytes.
func validName(s string) bool {
	if s == "" || len(s) > 253 {
		return false
	}
	for _, label := range strings.Split(s, ".") {
		if label == "" || len(label) > 63 {
			return false
		}
		for _, c := range label {
			if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_') {
				return false
			}
		}
	}
	return true
}
