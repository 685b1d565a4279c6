package config

import (
	"fmt"
	"path"
	"strconv"
	"strings"

	"github.com/BurntSushi/toml"
)

// Profile is how a sub-agent runs ([profiles.NAME]): what an agent's
// den-agent run --profile NAME, or the API, starts. Unset fields are
// the parent session's.
type Profile struct {
	// Description tells the parent's model when to use the profile.
	Description string `toml:"description"`
	// Model is a model ref or group name; unset, the parent's model.
	Model string `toml:"model"`
	// Instructions are added to the agent's in the sub-agent's system
	// prompt.
	Instructions string `toml:"instructions"`
	// Tools is an allow-list of what the sub-agent may use: the model's
	// tools (shell_execute, file_read, ..., browser_use, memory_get),
	// host commands (den-notify, den-model, ...), and "mcp" for the MCP
	// servers' tools and den-mcp; path.Match patterns ("file_*",
	// "den-*") match several. Unset, everything its agent has.
	Tools []string `toml:"tools"`
	// Trust is restricted, trusted or full, and never more than the
	// parent's (a higher level is lowered to the parent's).
	Trust string `toml:"trust"`
	// Budget bounds what the sub-agent's session spends, in dollars
	// ("0.50") or tokens ("200k tokens"); its spending also counts
	// against the parent's budget.
	Budget string `toml:"budget"`
	// MaxTurns bounds each of its runs (0: den's default).
	MaxTurns int `toml:"max_turns"`
}

// Subagents limits sub-agents ([subagents]).
type Subagents struct {
	// MaxRunning is how many sub-agents of one session may run at once
	// (0: DefaultMaxRunning).
	MaxRunning int `toml:"max_running"`
	// MaxDepth is how deep sub-agents may nest (0: DefaultMaxDepth): 1
	// lets a session start sub-agents that start none.
	MaxDepth int `toml:"max_depth"`
}

// The defaults of [subagents].
const (
	DefaultMaxRunning = 3
	DefaultMaxDepth   = 1
)

// Running is MaxRunning, or its default.
func (s Subagents) Running() int {
	if s.MaxRunning <= 0 {
		return DefaultMaxRunning
	}
	return s.MaxRunning
}

// Depth is MaxDepth, or its default.
func (s Subagents) Depth() int {
	if s.MaxDepth <= 0 {
		return DefaultMaxDepth
	}
	return s.MaxDepth
}

// validateProfiles checks [subagents] and every [profiles.NAME].
func (c *Config) validateProfiles(data []byte) error {
	if s := c.Subagents; s.MaxRunning < 0 || s.MaxRunning > 32 {
		return fmt.Errorf("%w: %s:%d: subagents.max_running %d: want 1 to 32", ErrInvalid, c.path, lineOf(data, toml.Key{"subagents", "max_running"}), s.MaxRunning)
	}
	if s := c.Subagents; s.MaxDepth < 0 || s.MaxDepth > 5 {
		return fmt.Errorf("%w: %s:%d: subagents.max_depth %d: want 1 to 5", ErrInvalid, c.path, lineOf(data, toml.Key{"subagents", "max_depth"}), s.MaxDepth)
	}
	for name, p := range c.Profiles {
		at := func(k string) string {
			return fmt.Sprintf("%s:%d: profiles.%s.%s", c.path, lineOf(data, toml.Key{"profiles", name, k}), name, k)
		}
		if !agentName.MatchString(name) {
			return fmt.Errorf("%w: %s:%d: profile name %q: want 1-64 letters, digits, '.', '_' or '-'", ErrInvalid, c.path, lineOf(data, toml.Key{"profiles", name}), name)
		}
		switch p.Trust {
		case "", "restricted", "trusted", "full":
		default:
			return fmt.Errorf("%w: %s %q: want restricted, trusted or full", ErrInvalid, at("trust"), p.Trust)
		}
		if _, _, err := ParseBudget(p.Budget); err != nil {
			return fmt.Errorf("%w: %s: %v", ErrInvalid, at("budget"), err)
		}
		if p.MaxTurns < 0 {
			return fmt.Errorf("%w: %s: must not be negative", ErrInvalid, at("max_turns"))
		}
		for _, t := range p.Tools {
			if _, err := path.Match(t, ""); err != nil || t == "" || strings.ContainsFunc(t, func(r rune) bool { return r <= ' ' }) {
				return fmt.Errorf("%w: %s: %q is not a tool's name or pattern", ErrInvalid, at("tools"), t)
			}
		}
	}
	return nil
}

// Profile returns the named profile (ok false when the config has
// none of that name).
func (c *Config) Profile(name string) (p Profile, ok bool) {
	p, ok = c.Profiles[name]
	return p, ok
}

// ParseBudget reads a budget: "0.50", "$2" or "2usd" as dollars, and
// "200k tokens", "1.5m tok" or "50000t" as tokens; "" is none.
func ParseBudget(s string) (usd float64, tokens int64, err error) {
	t := strings.ToLower(strings.TrimSpace(s))
	if t == "" {
		return 0, 0, nil
	}
	bad := fmt.Errorf("budget %q: want dollars (0.50, $2) or tokens (200k tokens)", s)
	for _, suf := range []string{"tokens", "token", "tok", "t"} {
		if rest, ok := strings.CutSuffix(t, suf); ok {
			rest = strings.TrimSpace(rest)
			mult := 1.0
			switch {
			case strings.HasSuffix(rest, "k"):
				mult, rest = 1e3, strings.TrimSuffix(rest, "k")
			case strings.HasSuffix(rest, "m"):
				mult, rest = 1e6, strings.TrimSuffix(rest, "m")
			}
			n, err := strconv.ParseFloat(strings.TrimSpace(rest), 64)
			if err != nil || n <= 0 {
				return 0, 0, bad
			}
			return 0, int64(n * mult), nil
		}
	}
	t = strings.TrimSpace(strings.TrimSuffix(strings.TrimPrefix(t, "$"), "usd"))
	v, err := strconv.ParseFloat(t, 64)
	if err != nil || v <= 0 {
		return 0, 0, bad
	}
	return v, 0, nil
}
