package permission

import (
	"fmt"
	"path"
	"regexp"
	"sort"
	"strings"
)

// word is a command or action name as overrides spell them.
var word = regexp.MustCompile(`^[a-z0-9][a-z0-9_-]*$`)

// ParsePolicy builds a Policy from an agent's configuration as written:
// trust is "restricted", "trusted" or "full" ("" is trusted); overrides
// map "command" or "command action" to "allow", "ask" or "deny"; models
// is den-model's allow-list (refs, group names or path.Match patterns).
// Errors name the offending key or value; with several, the first in
// key order.
func ParsePolicy(trust string, overrides map[string]string, models []string) (Policy, error) {
	var p Policy
	t, err := ParseTrust(trust)
	if err != nil {
		return p, err
	}
	p.Trust = t
	keys := make([]string, 0, len(overrides))
	for k := range overrides {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		norm, err := parseKey(k)
		if err != nil {
			return p, err
		}
		d, err := ParseDecision(overrides[k])
		if err != nil {
			return p, fmt.Errorf("permission %q: %w", k, err)
		}
		if p.Overrides == nil {
			p.Overrides = map[string]Decision{}
		}
		if _, dup := p.Overrides[norm]; dup {
			return p, fmt.Errorf("permission %q: set twice", k)
		}
		p.Overrides[norm] = d
	}
	for _, m := range models {
		if strings.TrimSpace(m) == "" {
			return p, fmt.Errorf("model allow-list: empty entry")
		}
		if _, err := path.Match(m, ""); err != nil {
			return p, fmt.Errorf("model allow-list: %q: bad pattern", m)
		}
		p.Models = append(p.Models, m)
	}
	return p, nil
}

// ParseTrust parses a trust level; "" is Trusted.
func ParseTrust(s string) (Trust, error) {
	switch t := Trust(strings.ToLower(strings.TrimSpace(s))); t {
	case "":
		return Trusted, nil
	case Restricted, Trusted, Full:
		return t, nil
	}
	return "", fmt.Errorf("trust %q: want restricted, trusted or full", s)
}

// ParseDecision parses "allow", "ask" or "deny".
func ParseDecision(s string) (Decision, error) {
	switch d := Decision(strings.ToLower(strings.TrimSpace(s))); d {
	case Allow, Ask, Deny:
		return d, nil
	}
	return "", fmt.Errorf("decision %q: want allow, ask or deny", s)
}

// parseKey checks an overrides key, "command" or "command action", and
// returns it with single spaces.
func parseKey(k string) (string, error) {
	f := strings.Fields(k)
	if len(f) == 0 || len(f) > 2 {
		return "", fmt.Errorf("permission %q: want \"command\" or \"command action\"", k)
	}
	for _, w := range f {
		if !word.MatchString(w) {
			return "", fmt.Errorf("permission %q: %q is not a command or action name", k, w)
		}
	}
	return strings.Join(f, " "), nil
}
