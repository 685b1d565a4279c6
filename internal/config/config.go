package config

import (
	"errors"
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/BurntSushi/toml"

	"den.dev/den/internal/egress"
)

// Config is den's configuration.
type Config struct {
	Sandbox   Sandbox             `toml:"sandbox"`
	Rootfs    Rootfs              `toml:"rootfs"`
	Agents    map[string]Agent    `toml:"agents"`
	Providers map[string]Provider `toml:"providers"`
	Models    map[string]Model    `toml:"models"`
	Groups    map[string]Group    `toml:"groups"`
	Retry     Retry               `toml:"retry"`
	Server    Server              `toml:"server"`
	// MCPClients are what each MCP client of den's MCP server may do,
	// keyed by the client's name ("*": every client without a table of
	// its own). See MCPClient.
	MCPClients map[string]MCPClient `toml:"mcp_clients"`
	// Browser is the agents' browsers' settings.
	Browser Browser `toml:"browser"`
	// Network is what every computer's network shares.
	Network Network `toml:"network"`
	// Profiles are how sub-agents run, by name; Subagents limits them.
	Profiles  map[string]Profile `toml:"profiles"`
	Subagents Subagents          `toml:"subagents"`
	// Backup is den serve's scheduled backups.
	Backup Backup `toml:"backup"`
	// Schedule is den serve's scheduler's settings.
	Schedule Schedule `toml:"schedule"`

	path string
}

// Network is what every computer's network shares.
type Network struct {
	// Hosts pins names ("name", or "name:port" for one port) to
	// addresses ("host" or "host:port") for den's egress proxy: den
	// connects there for them, even to the host's loopback (a
	// development server the user chooses to show the computers). The
	// policy still decides whether a computer may connect at all.
	Hosts map[string]string `toml:"hosts"`
	// CAFiles are PEM files of certificate authorities den trusts,
	// besides the host's, when it speaks TLS itself to a host a secret
	// is bound to (a company's own CA, a self-hosted Git server's).
	CAFiles []string `toml:"ca_files"`
}

// Server is den serve's settings; its flags win.
type Server struct {
	Listen string `toml:"listen"` // host:port, default 127.0.0.1:7700
	// TLS is "self-signed" for a certificate den makes and keeps, or
	// empty; TLSCert and TLSKey name a certificate of the user's.
	TLS     string `toml:"tls"`
	TLSCert string `toml:"tls_cert"`
	TLSKey  string `toml:"tls_key"`
	// AllowedHosts are names the daemon answers to besides loopback, IP
	// addresses and the machine's own name ("den.example.ts.net",
	// "*.example.ts.net"): the Host check against DNS rebinding.
	AllowedHosts []string `toml:"allowed_hosts"`
	// TrustedProxies are the addresses or CIDR ranges of reverse proxies
	// whose X-Forwarded-For and X-Forwarded-Proto den believes.
	TrustedProxies []string `toml:"trusted_proxies"`
	// IdleStop stops a session's computer after it has been idle this
	// long (a duration such as "15m"; default 15m, "0" never).
	IdleStop string `toml:"idle_stop"`
	// Push is false to turn Web Push off (on when unset): no key is
	// made and the push routes answer 404.
	Push *bool `toml:"push"`
	// PushContact is the VAPID subject push services may reach den's
	// operator at: a mailto: or https: URI. Unset, den uses the https
	// origin the browser subscribed from, or mailto:den@localhost.
	PushContact string `toml:"push_contact"`
}

// Browser shapes every agent's browser; unset values are den's
// defaults.
type Browser struct {
	// Chromium is the program to run (chromium-headless-shell, else
	// chromium, found on PATH and in /usr/lib/chromium when unset).
	Chromium string `toml:"chromium"`
	// MaxTabs is the tabs a session may have open (5).
	MaxTabs int `toml:"max_tabs"`
	// TabIdle closes a tab no action used for that long ("30m").
	TabIdle string `toml:"tab_idle"`
	// Idle stops an agent's Chromium unused for that long ("10m").
	Idle string `toml:"idle"`
	// Memory bounds the memory of an agent's Chromium, all its
	// processes together ("2GiB"; "unlimited" for none), and Pids its
	// processes and threads (4096), where den can make cgroups.
	Memory string `toml:"memory"`
	Pids   int64  `toml:"pids"`
}

// Limits reads Memory and Pids: zero when unset (den's defaults
// apply), memory -1 when "unlimited".
func (b Browser) Limits() (memory, pids int64, err error) {
	if b.Pids < 0 {
		return 0, 0, fmt.Errorf("browser.pids %d: must not be negative", b.Pids)
	}
	n, set, err := ParseLimit(b.Memory)
	if err != nil {
		return 0, 0, fmt.Errorf("browser.memory: %v", err)
	}
	if set && n == 0 {
		n = -1
	}
	return n, b.Pids, nil
}

// Durations reads TabIdle and Idle (zero when unset).
func (b Browser) Durations() (tabIdle, idle time.Duration, err error) {
	for _, f := range []struct {
		s string
		d *time.Duration
		k string
	}{{b.TabIdle, &tabIdle, "tab_idle"}, {b.Idle, &idle, "idle"}} {
		if f.s == "" {
			continue
		}
		if *f.d, err = time.ParseDuration(f.s); err != nil || *f.d <= 0 {
			return 0, 0, fmt.Errorf("browser.%s %q: want a positive duration such as \"10m\"", f.k, f.s)
		}
	}
	return tabIdle, idle, nil
}

// Schedule shapes den serve's scheduler; unset values are den's
// defaults.
type Schedule struct {
	// MaxRunning bounds the scheduled runs at once (4); the others wait
	// their turn and say how late they started.
	MaxRunning int `toml:"max_running"`
	// DeliveryRetry are the waits before a failed delivery is tried
	// again (["30s", "2m", "10m", "30m"]); after the last it is failed
	// and reported.
	DeliveryRetry []string `toml:"delivery_retry"`
}

// Retries reads DeliveryRetry (nil when unset).
func (s Schedule) Retries() ([]time.Duration, error) {
	if s.DeliveryRetry == nil {
		return nil, nil
	}
	out := []time.Duration{}
	for _, v := range s.DeliveryRetry {
		d, err := time.ParseDuration(v)
		if err != nil || d <= 0 {
			return nil, fmt.Errorf("schedule.delivery_retry: %q is not a positive duration such as \"30s\"", v)
		}
		out = append(out, d)
	}
	return out, nil
}

// Sandbox chooses the backend.
type Sandbox struct {
	Backend string `toml:"backend"` // "bwrap" (default) or "proot"
	Bwrap   string `toml:"bwrap"`   // path of bwrap; empty: PATH
	Proot   string `toml:"proot"`   // path of proot; empty: PATH
}

// Rootfs holds the mirrors used to provision computers.
type Rootfs struct {
	AlpineMirror string `toml:"alpine_mirror"`
	DebianMirror string `toml:"debian_mirror"`
	UbuntuMirror string `toml:"ubuntu_mirror"`
}

// Provider is a configured model provider: any OpenAI-compatible
// endpoint, or a second account of a built-in API.
type Provider struct {
	Type      string            `toml:"type"` // anthropic, openai, openai-responses, gemini
	BaseURL   string            `toml:"base_url"`
	APIKey    string            `toml:"api_key"`     // prefer api_key_env
	APIKeyEnv string            `toml:"api_key_env"` // the variable holding the key
	Headers   map[string]string `toml:"headers"`
}

// Model overrides or adds catalog facts about a model ("provider/model").
type Model struct {
	ContextWindow   int      `toml:"context_window"`
	MaxOutput       int      `toml:"max_output"`
	Input           []string `toml:"input"` // "text", "image"
	Thinking        *bool    `toml:"thinking"`
	PriceInput      *float64 `toml:"price_input"` // USD per million tokens
	PriceOutput     *float64 `toml:"price_output"`
	PriceCacheRead  *float64 `toml:"price_cache_read"`
	PriceCacheWrite *float64 `toml:"price_cache_write"`
}

// Retry is how model requests are retried.
type Retry struct {
	Delays       []string `toml:"delays"`        // e.g. ["3s", "5s", "10s", "15s", "30s"]
	StallTimeout string   `toml:"stall_timeout"` // e.g. "120s"
}

// Group is an ordered list of model refs tried in turn.
type Group struct {
	Members  []string `toml:"members"`
	Strategy string   `toml:"strategy"` // "fallback" (default) or "always"
}

// Agent is one agent's settings.
type Agent struct {
	Model            string `toml:"model"`             // a model ref or group name
	Instructions     string `toml:"instructions"`      // extra instructions for the system prompt
	InstructionsFile string `toml:"instructions_file"` // or read them from a file

	Rootfs  string `toml:"rootfs"`
	Network string `toml:"network"` // "on" or "off"; "off" is egress = "off"
	// Egress is the computer's egress policy: "open" (the default),
	// "allowlist", "ask" or "off"; Allow are its rules ("pypi.org",
	// "*.github.com", "db.example.com:5432").
	Egress string   `toml:"egress"`
	Allow  []string `toml:"allow"`
	Mounts []string `toml:"mounts"`
	// Limits: sizes such as "2GiB", or "unlimited"; unset, den's
	// defaults apply (half the host's memory, a 1 GiB /tmp, 20 GiB of
	// disk, 4096 processes, CPU weight 50).
	Memory string `toml:"memory"`
	Tmp    string `toml:"tmp"`
	Disk   string `toml:"disk"`
	// Host commands: the trust level (restricted, trusted, full), per
	// command overrides ("den-config set" = "deny"), and the models
	// den-model may call.
	Trust         string            `toml:"trust"`
	Permissions   map[string]string `toml:"permissions"`
	AllowedModels []string          `toml:"allowed_models"`
	Pids          int64             `toml:"pids"`
	CPUWeight     uint64            `toml:"cpu_weight"`
	// Remember turns the agent's memory (/den/memory, the memory tools,
	// memory in every request) on or off for its sessions; unset, on.
	// A session may differ (/memory). (Memory above is the computer's
	// RAM.)
	Remember *bool `toml:"remember"`
	// Browser gives the agent a web browser (the browser_use tool and
	// den-browser); unset, on where Chromium is installed.
	Browser *bool `toml:"browser"`
	// Checkpoints is the disk budget of the computer's checkpoints
	// (undo): a size such as "4GiB" (the default), or "off";
	// CheckpointsKeep is how many are kept at most (default 100).
	Checkpoints     string `toml:"checkpoints"`
	CheckpointsKeep int    `toml:"checkpoints_keep"`
	// Skills are settings of the agent's skills, by skill name.
	Skills map[string]SkillSettings `toml:"skills"`
}

// SkillSettings are what the config says of one skill of an agent.
type SkillSettings struct {
	// Allow are egress rules ("api.weather.gov", "*.example.com:443")
	// the agent's computer gets in a session while the skill is in use
	// there, besides the agent's own: they widen an allowlist or an ask
	// policy.
	Allow []string `toml:"allow"`
}

// SkillRules are the egress rules the skills of the agent bring while
// in use, by skill name, each marked as the skill's ("skill:NAME").
func (a Agent) SkillRules() (map[string][]egress.Rule, error) {
	out := map[string][]egress.Rule{}
	for name, s := range a.Skills {
		for _, raw := range s.Allow {
			r, err := egress.ParseRule(raw)
			if err != nil {
				return nil, fmt.Errorf("skills.%s.allow: %w", name, err)
			}
			r.From = "skill:" + name
			out[name] = append(out[name], r)
		}
	}
	return out, nil
}

// CheckpointBudget reads Checkpoints: off, or the budget in bytes (0:
// den's default).
func (a Agent) CheckpointBudget() (budget int64, off bool, err error) {
	switch strings.ToLower(strings.TrimSpace(a.Checkpoints)) {
	case "":
		return 0, false, nil
	case "off", "none", "0":
		return 0, true, nil
	}
	n, err := ParseBytes(a.Checkpoints)
	if err == nil && n < 16<<20 {
		err = fmt.Errorf("size %q: at least 16 MiB, or \"off\"", a.Checkpoints)
	}
	return n, false, err
}

// EgressPolicy is the agent's egress policy: Egress and Allow, with
// network = "off" meaning egress = "off".
func (a Agent) EgressPolicy() (egress.Policy, error) {
	p, err := egress.ParsePolicy(a.Egress, a.Allow)
	if err != nil {
		return p, err
	}
	if a.Network == "off" {
		if a.Egress != "" && p.Mode != egress.Off {
			return p, fmt.Errorf("network = \"off\" but egress = %q: set one of them", a.Egress)
		}
		p.Mode = egress.Off
	}
	if a.Network == "on" && p.Mode == egress.Off {
		return p, fmt.Errorf("network = \"on\" but egress = \"off\": set one of them")
	}
	return p, nil
}

// BrowserOn reports whether the agent may have a browser: unless
// browser = false.
func (a Agent) BrowserOn() bool { return a.Browser == nil || *a.Browser }

// MemoryOn reports whether the agent's sessions have memory unless a
// session says otherwise.
func (a Agent) MemoryOn() bool { return a.Remember == nil || *a.Remember }

// Path is the file the config was read from ("" when there was none).
func (c *Config) Path() string { return c.path }

// DefaultPath is $XDG_CONFIG_HOME/den/config.toml (or ~/.config/…).
func DefaultPath() string {
	dir := os.Getenv("XDG_CONFIG_HOME")
	if dir == "" {
		home, _ := os.UserHomeDir()
		dir = filepath.Join(home, ".config")
	}
	return filepath.Join(dir, "den", "config.toml")
}

// Load reads path. A missing file at the default path is an empty
// config; a missing file the user named is an error.
func Load(path string, named bool) (*Config, error) {
	data, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) && !named {
		return &Config{Agents: map[string]Agent{}}, nil
	}
	if err != nil {
		return nil, fmt.Errorf("config: %w", err)
	}
	return parse(path, data)
}

// parse decodes and validates data, the contents of the file at path.
func parse(path string, data []byte) (*Config, error) {
	c := &Config{path: path}
	md, err := toml.Decode(string(data), c)
	if err != nil {
		return nil, decodeError(path, err)
	}
	if und := md.Undecoded(); len(und) > 0 {
		keys := make([]string, len(und))
		for i, k := range und {
			keys[i] = k.String()
		}
		sort.Strings(keys)
		return nil, fmt.Errorf("%w: %s:%d: unknown key %s", ErrInvalid, path, lineOf(data, und[0]), strings.Join(keys, ", "))
	}
	if c.Agents == nil {
		c.Agents = map[string]Agent{}
	}
	if c.Providers == nil {
		c.Providers = map[string]Provider{}
	}
	if err := c.validate(data); err != nil {
		return nil, err
	}
	return c, nil
}

// decodeError names the file and, for a syntax error, the line.
func decodeError(path string, err error) error {
	var pe toml.ParseError
	if errors.As(err, &pe) {
		return fmt.Errorf("%w: %s:%d: %s", ErrInvalid, path, pe.Position.Line, pe.Message)
	}
	return fmt.Errorf("%w: %s: %v", ErrInvalid, path, err)
}

// lineOf finds the line where key is set (or, failing that, its
// table's header), by following table headers and key lines; 0 when it
// cannot tell.
func lineOf(data []byte, key toml.Key) int {
	want := strings.Join(key, ".")
	table := ""
	best := 0
	for i, raw := range strings.Split(string(data), "\n") {
		line := strings.TrimSpace(raw)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		if strings.HasPrefix(line, "[") {
			end := strings.LastIndex(line, "]")
			if end < 0 {
				continue
			}
			table = normKey(strings.Trim(line[:end+1], "[]"))
			if table == want || strings.HasPrefix(want, table+".") && best == 0 {
				best = i + 1
			}
			continue
		}
		eq := strings.Index(line, "=")
		if eq < 0 {
			continue
		}
		full := normKey(line[:eq])
		if table != "" {
			full = table + "." + full
		}
		if full == want {
			return i + 1
		}
	}
	return best
}

// normKey turns a written key ("a . b", "agents.\"x\"") into a.b form.
func normKey(s string) string {
	parts := strings.Split(s, ".")
	for i, p := range parts {
		parts[i] = strings.Trim(strings.TrimSpace(p), `"'`)
	}
	return strings.Join(parts, ".")
}

func (c *Config) validate(data []byte) error {
	switch c.Sandbox.Backend {
	case "", "bwrap", "proot":
	default:
		return fmt.Errorf("%w: %s:%d: sandbox.backend %q: want \"bwrap\" or \"proot\"", ErrInvalid, c.path, lineOf(data, toml.Key{"sandbox", "backend"}), c.Sandbox.Backend)
	}
	if err := c.Server.validate(c.path, data); err != nil {
		return err
	}
	if err := c.validateMCPClients(data); err != nil {
		return err
	}
	if err := c.validateProfiles(data); err != nil {
		return err
	}
	if err := c.Backup.validate(c.path, data); err != nil {
		return err
	}
	if _, _, err := c.Browser.Durations(); err != nil {
		return fmt.Errorf("%w: %s:%d: %v", ErrInvalid, c.path, lineOf(data, toml.Key{"browser"}), err)
	}
	for name, addr := range c.Network.Hosts {
		r, err := egress.ParseRule(name)
		if err == nil && (strings.HasPrefix(r.Host, "*.") || strings.TrimSpace(addr) == "") {
			err = fmt.Errorf("want a name (or name:port) and an address (host or host:port)")
		}
		if err != nil {
			return fmt.Errorf("%w: %s:%d: network.hosts %q: %v", ErrInvalid, c.path, lineOf(data, toml.Key{"network", "hosts", name}), name, err)
		}
	}
	if _, err := c.Schedule.Retries(); err != nil {
		return fmt.Errorf("%w: %s:%d: %v", ErrInvalid, c.path, lineOf(data, toml.Key{"schedule", "delivery_retry"}), err)
	}
	if c.Schedule.MaxRunning < 0 || c.Schedule.MaxRunning > 100 {
		return fmt.Errorf("%w: %s:%d: schedule.max_running %d: want 1 to 100", ErrInvalid, c.path, lineOf(data, toml.Key{"schedule", "max_running"}), c.Schedule.MaxRunning)
	}
	if _, _, err := c.Browser.Limits(); err != nil {
		key := "memory"
		if c.Browser.Pids < 0 {
			key = "pids"
		}
		return fmt.Errorf("%w: %s:%d: %v", ErrInvalid, c.path, lineOf(data, toml.Key{"browser", key}), err)
	}
	if c.Browser.MaxTabs < 0 || c.Browser.MaxTabs > 50 {
		return fmt.Errorf("%w: %s:%d: browser.max_tabs %d: want 1 to 50", ErrInvalid, c.path, lineOf(data, toml.Key{"browser", "max_tabs"}), c.Browser.MaxTabs)
	}
	for name, p := range c.Providers {
		switch p.Type {
		case "anthropic", "openai", "openai-responses", "gemini":
		default:
			return fmt.Errorf("%w: %s:%d: providers.%s.type %q: want anthropic, openai, openai-responses or gemini", ErrInvalid, c.path, lineOf(data, toml.Key{"providers", name, "type"}), name, p.Type)
		}
		if strings.Contains(name, "/") {
			return fmt.Errorf("%w: %s:%d: provider name %q must not contain '/'", ErrInvalid, c.path, lineOf(data, toml.Key{"providers", name}), name)
		}
	}
	for name, g := range c.Groups {
		if len(g.Members) == 0 {
			return fmt.Errorf("%w: %s:%d: groups.%s has no members", ErrInvalid, c.path, lineOf(data, toml.Key{"groups", name}), name)
		}
		if g.Strategy != "" && g.Strategy != "fallback" && g.Strategy != "always" {
			return fmt.Errorf("%w: %s:%d: groups.%s.strategy %q: want fallback or always", ErrInvalid, c.path, lineOf(data, toml.Key{"groups", name, "strategy"}), name, g.Strategy)
		}
	}
	for name, a := range c.Agents {
		at := func(k string) string {
			return fmt.Sprintf("%s:%d: agents.%s.%s", c.path, lineOf(data, toml.Key{"agents", name, k}), name, k)
		}
		switch a.Network {
		case "", "on", "off":
		default:
			return fmt.Errorf("%w: %s %q: want \"on\" or \"off\"", ErrInvalid, at("network"), a.Network)
		}
		if _, err := a.EgressPolicy(); err != nil {
			key := "egress"
			if a.Egress == "" && len(a.Allow) > 0 {
				key = "allow"
			}
			return fmt.Errorf("%w: %s: %v", ErrInvalid, at(key), err)
		}
		for skill, ss := range a.Skills {
			for _, r := range ss.Allow {
				if _, err := egress.ParseRule(r); err != nil {
					return fmt.Errorf("%w: %s:%d: agents.%s.skills.%s.allow: %v", ErrInvalid, c.path, lineOf(data, toml.Key{"agents", name, "skills", skill, "allow"}), name, skill, err)
				}
			}
		}
		for k, v := range map[string]string{"memory": a.Memory, "tmp": a.Tmp, "disk": a.Disk} {
			if _, _, err := ParseLimit(v); err != nil {
				return fmt.Errorf("%w: %s: %v", ErrInvalid, at(k), err)
			}
		}
		if a.Pids < 0 {
			return fmt.Errorf("%w: %s: must not be negative", ErrInvalid, at("pids"))
		}
		if _, _, err := a.CheckpointBudget(); err != nil {
			return fmt.Errorf("%w: %s: %v", ErrInvalid, at("checkpoints"), err)
		}
		if a.CheckpointsKeep < 0 {
			return fmt.Errorf("%w: %s: must not be negative", ErrInvalid, at("checkpoints_keep"))
		}
		switch a.Trust {
		case "", "restricted", "trusted", "full":
		default:
			return fmt.Errorf("%w: %s %q: want restricted, trusted or full", ErrInvalid, at("trust"), a.Trust)
		}
		for k, v := range a.Permissions {
			switch v {
			case "allow", "ask", "deny":
			default:
				return fmt.Errorf("%w: %s:%d: agents.%s.permissions %q = %q: want allow, ask or deny", ErrInvalid, c.path, lineOf(data, toml.Key{"agents", name, "permissions", k}), name, k, v)
			}
		}
		if a.CPUWeight > 10000 {
			return fmt.Errorf("%w: %s: %d is above 10000", ErrInvalid, at("cpu_weight"), a.CPUWeight)
		}
	}
	return nil
}

// Agent returns the settings of the named agent (zero when unset).
func (c *Config) Agent(name string) Agent { return c.Agents[name] }

// ParseLimit reads a size limit: "" is unset (den's default applies),
// "unlimited" (or "none", "0") is no limit, else ParseBytes.
func ParseLimit(s string) (n int64, set bool, err error) {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "":
		return 0, false, nil
	case "unlimited", "none", "0":
		return 0, true, nil
	}
	n, err = ParseBytes(s)
	if err == nil && n < 1<<20 {
		err = fmt.Errorf("size %q: at least 1 MiB, or \"unlimited\"", s)
	}
	return n, true, err
}

// FormatBytes writes a size for people: 1.5 GiB, 12.0 MiB, 3.2 KiB,
// 300 B.
func FormatBytes(n int64) string {
	switch {
	case n >= 1<<30:
		return fmt.Sprintf("%.1f GiB", float64(n)/(1<<30))
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%.1f KiB", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%d B", n)
}

// ParseBytes reads sizes such as 512M, 2GiB, 1.5G or 1048576.
func ParseBytes(s string) (int64, error) {
	t := strings.TrimSpace(strings.ToUpper(s))
	t = strings.TrimSuffix(strings.TrimSuffix(t, "IB"), "B")
	mult := int64(1)
	if n := len(t); n > 0 {
		switch t[n-1] {
		case 'K':
			mult = 1 << 10
		case 'M':
			mult = 1 << 20
		case 'G':
			mult = 1 << 30
		case 'T':
			mult = 1 << 40
		}
		if mult > 1 {
			t = t[:n-1]
		}
	}
	f, err := strconv.ParseFloat(t, 64)
	if err != nil || f < 0 {
		return 0, fmt.Errorf("size %q: want a number with an optional K, M, G or T suffix", s)
	}
	return int64(f * float64(mult)), nil
}

func (s Server) validate(path string, data []byte) error {
	at := func(k string) string {
		return fmt.Sprintf("%s:%d: server.%s", path, lineOf(data, toml.Key{"server", k}), k)
	}
	switch s.TLS {
	case "", "self-signed":
	default:
		return fmt.Errorf("%w: %s %q: want \"self-signed\", or tls_cert and tls_key", ErrInvalid, at("tls"), s.TLS)
	}
	if (s.TLSCert == "") != (s.TLSKey == "") {
		return fmt.Errorf("%w: %s: tls_cert and tls_key go together", ErrInvalid, at("tls_cert"))
	}
	if s.TLS != "" && s.TLSCert != "" {
		return fmt.Errorf("%w: %s: either tls = \"self-signed\" or tls_cert and tls_key", ErrInvalid, at("tls"))
	}
	if _, err := s.Proxies(); err != nil {
		return fmt.Errorf("%w: %s: %v", ErrInvalid, at("trusted_proxies"), err)
	}
	if _, err := s.IdleStopAfter(); err != nil {
		return fmt.Errorf("%w: %s: %v", ErrInvalid, at("idle_stop"), err)
	}
	if s.PushContact != "" && !validContact(s.PushContact) {
		return fmt.Errorf("%w: %s %q: want a mailto: or https: URI such as \"mailto:you@example.org\"", ErrInvalid, at("push_contact"), s.PushContact)
	}
	return nil
}

// PushOn reports whether Web Push is on: unless push = false.
func (s Server) PushOn() bool { return s.Push == nil || *s.Push }

// validContact reports whether c can be a VAPID subject: a mailto: URI
// with an address, or an https: URL with a host, without spaces or
// quotes.
func validContact(c string) bool {
	if strings.ContainsAny(c, " \t\r\n\"\\") {
		return false
	}
	if addr, ok := strings.CutPrefix(c, "mailto:"); ok {
		local, domain, found := strings.Cut(addr, "@")
		return found && local != "" && domain != ""
	}
	if rest, ok := strings.CutPrefix(c, "https://"); ok {
		host, _, _ := strings.Cut(rest, "/")
		return host != ""
	}
	return false
}

// Proxies parses TrustedProxies: addresses (a /32 or /128) or CIDR
// ranges.
func (s Server) Proxies() ([]netip.Prefix, error) {
	var out []netip.Prefix
	for _, p := range s.TrustedProxies {
		if pf, err := netip.ParsePrefix(p); err == nil {
			out = append(out, pf)
			continue
		}
		a, err := netip.ParseAddr(p)
		if err != nil {
			return nil, fmt.Errorf("%q is not an address or a CIDR range", p)
		}
		out = append(out, netip.PrefixFrom(a, a.BitLen()))
	}
	return out, nil
}

// DefaultIdleStop is how long a session's computer runs idle by default.
const DefaultIdleStop = 15 * time.Minute

// IdleStopAfter parses IdleStop: DefaultIdleStop when unset, 0 for
// never.
func (s Server) IdleStopAfter() (time.Duration, error) {
	switch strings.TrimSpace(s.IdleStop) {
	case "":
		return DefaultIdleStop, nil
	case "0", "never":
		return 0, nil
	}
	d, err := time.ParseDuration(s.IdleStop)
	if err != nil || d < 0 {
		return 0, fmt.Errorf("%q is not a duration such as 15m", s.IdleStop)
	}
	return d, nil
}
