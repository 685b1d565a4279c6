package mcpclient

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"net/url"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode"

	"den.dev/den/internal/egress"
	"den.dev/den/internal/permission"
	"den.dev/den/internal/privfile"
)

// FileName is the servers' file, beside den's config.toml.
const FileName = "mcp.json"

// PathBeside is the servers' file beside the config file at
// configPath.
func PathBeside(configPath string) string {
	return filepath.Join(filepath.Dir(configPath), FileName)
}

// The transports a server is reached by.
const (
	Stdio = "stdio" // a program den starts, spoken to on its stdin and stdout
	HTTP  = "http"  // streamable HTTP (MCP 2025-03-26 and later)
	SSE   = "sse"   // HTTP with server-sent events (MCP 2024-11-05)
)

// Defaults of a server's timeouts.
const (
	DefaultTimeout        = 60 * time.Second // one call
	DefaultStartupTimeout = 60 * time.Second // start and initialize
	maxTimeout            = time.Hour
)

// Server is one server of the file: how to reach it (command, args and
// env; or url and headers) as Claude Desktop and Claude Code write it,
// and den's own keys.
type Server struct {
	Name string
	// Type is Stdio, HTTP or SSE. A server with a url and no type is
	// HTTP, falling back to SSE when the server does not speak it.
	Type string
	// Command, Args and Env start a stdio server.
	Command string
	Args    []string
	Env     []KV
	// URL and Headers reach an HTTP or SSE server.
	URL     string
	Headers []KV
	// Host runs a stdio server on the host, with a clean environment,
	// instead of inside the agent's computer.
	Host bool
	// Egress and Allow are the server's own egress policy (as an
	// agent's: "open", "allowlist", "ask" or "off", and its rules),
	// for a server den starts: in the computer it replaces the agent's
	// for the server's connections; on the host it confines a server
	// that otherwise has the host's network. Egress "" is none.
	Egress string
	Allow  []string
	// Agents are the agents that have the server; none: every agent.
	Agents []string
	// Enabled is false for a server den keeps but does not use.
	Enabled bool
	// Tools hides tools from the model: a tool is shown when it matches
	// an Allow pattern (or Allow is empty) and no Deny pattern.
	Tools Filter
	// Permissions decide calls of the server's tools by tool name,
	// before den's defaults (see Decide).
	Permissions []Rule
	// Timeout bounds one call (DefaultTimeout when 0), StartupTimeout
	// starting the server and its initialization (DefaultStartupTimeout).
	Timeout, StartupTimeout time.Duration
	// OAuth configures den mcp login for a server that has no dynamic
	// client registration.
	OAuth *OAuth
	// Note is a line about the server for the agent's system prompt.
	Note string

	urlOnly bool    // a url without a type: HTTP, else SSE
	extra   []field // keys den does not read, written back as they were
}

// KV is a variable or a header.
type KV struct{ Key, Value string }

// Filter selects tools by glob patterns (path.Match: *, ?, [...]).
type Filter struct{ Allow, Deny []string }

// Rule decides the calls of the tools whose names match Pattern.
type Rule struct {
	Pattern  string
	Decision permission.Decision
}

// OAuth is a client den registered with the server's authorization
// server beforehand.
type OAuth struct {
	ClientID     string
	ClientSecret string
	Scopes       []string
	// CallbackPort is the loopback port of the redirect URI
	// (http://127.0.0.1:PORT/callback); 0 picks a free one, which only
	// servers with dynamic registration accept.
	CallbackPort int
}

type field struct {
	key string
	raw json.RawMessage
}

// File is the servers' file: {"mcpServers": {NAME: {...}}}, with other
// keys kept as they were.
type File struct {
	Servers []*Server
	// Warnings are what den ignored: keys it does not know (kept when
	// the file is written back).
	Warnings []string
	extra    []field // top-level keys but mcpServers
}

// Get returns the named server, or nil.
func (f *File) Get(name string) *Server {
	for _, s := range f.Servers {
		if s.Name == name {
			return s
		}
	}
	return nil
}

// Set adds s, or replaces the server of that name in place.
func (f *File) Set(s *Server) {
	for i, old := range f.Servers {
		if old.Name == s.Name {
			f.Servers[i] = s
			return
		}
	}
	f.Servers = append(f.Servers, s)
}

// Remove removes the named server and reports whether there was one.
func (f *File) Remove(name string) bool {
	for i, s := range f.Servers {
		if s.Name == name {
			f.Servers = slices.Delete(f.Servers, i, i+1)
			return true
		}
	}
	return false
}

// For is the enabled servers of agent, in file order.
func (f *File) For(agent string) []*Server {
	var out []*Server
	for _, s := range f.Servers {
		if s.Enabled && (len(s.Agents) == 0 || slices.Contains(s.Agents, agent)) {
			out = append(out, s)
		}
	}
	return out
}

// EgressPolicy is the server's own egress policy, marked as the
// server's ("mcp:NAME"); ok is false when it has none.
func (s *Server) EgressPolicy() (pol egress.Policy, ok bool, err error) {
	if s.Egress == "" {
		return egress.Policy{}, false, nil
	}
	pol, err = egress.ParsePolicy(s.Egress, s.Allow)
	pol.Of = "mcp:" + s.Name
	return pol, err == nil, err
}

// Place is where the server runs, for the permission gate.
func (s *Server) Place() permission.MCPPlace {
	switch {
	case s.Type != Stdio:
		return permission.MCPRemote
	case s.Host:
		return permission.MCPOnHost
	}
	return permission.MCPInComputer
}

// Where says where the server runs, in words: "computer", "host" or
// the transport and host of its URL.
func (s *Server) Where() string {
	switch {
	case s.Type == Stdio && s.Host:
		return "host"
	case s.Type == Stdio:
		return "computer"
	}
	if u, err := url.Parse(s.URL); err == nil {
		return s.Type + " " + u.Host
	}
	return s.Type
}

// CallTimeout is the bound on one call.
func (s *Server) CallTimeout() time.Duration {
	if s.Timeout > 0 {
		return s.Timeout
	}
	return DefaultTimeout
}

// StartTimeout is the bound on starting and initializing.
func (s *Server) StartTimeout() time.Duration {
	if s.StartupTimeout > 0 {
		return s.StartupTimeout
	}
	return DefaultStartupTimeout
}

// Shows reports whether the tool named name is offered, by Tools.
func (s *Server) Shows(name string) bool {
	match := func(pats []string) bool {
		return slices.ContainsFunc(pats, func(p string) bool { ok, _ := path.Match(p, name); return ok })
	}
	return (len(s.Tools.Allow) == 0 || match(s.Tools.Allow)) && !match(s.Tools.Deny)
}

// Rule returns the decision the server's permissions give the tool
// named name: an exact name first, else the longest matching pattern
// (the first of equal length); ok is false when none matches.
func (s *Server) Rule(name string) (d permission.Decision, ok bool) {
	best := -1
	for _, r := range s.Permissions {
		if r.Pattern == name {
			return r.Decision, true
		}
		if m, _ := path.Match(r.Pattern, name); m && len(r.Pattern) > best {
			best, d, ok = len(r.Pattern), r.Decision, true
		}
	}
	return d, ok
}

// Decide is the decision for a call of the server's tool: the server's
// permissions, else the agent's policy for MCP tools
// (permission.Policy.DecideMCP), which looks at where the server runs
// and whether the tool says it only reads.
func (s *Server) Decide(p permission.Policy, tool string, readOnly bool) permission.Decision {
	if d, ok := s.Rule(tool); ok {
		return d
	}
	return p.DecideMCP(s.Place(), readOnly)
}

// Fingerprint identifies how the server is reached: two servers with
// the same fingerprint are the same server.
func (s *Server) Fingerprint() string {
	b, _ := json.Marshal([]any{s.Type, s.Command, s.Args, s.Env, s.URL, s.Headers, s.Host})
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:8])
}

// ConfigError is a problem of the file at a place in it.
type ConfigError struct {
	File      string // "" when parsed from bytes
	Line, Col int
	Field     string // mcpServers.NAME.args[1]
	Problem   string
}

func (e *ConfigError) Error() string {
	where := fmt.Sprintf("line %d, column %d", e.Line, e.Col)
	if e.File != "" {
		where = fmt.Sprintf("%s:%d:%d", e.File, e.Line, e.Col)
	}
	if e.Field == "" {
		return where + ": " + e.Problem
	}
	return where + ": " + e.Field + ": " + e.Problem
}

func (e *ConfigError) Unwrap() error { return ErrConfig }

// Load reads the file at p; a file that does not exist is an empty
// one.
func Load(p string) (*File, error) {
	data, err := os.ReadFile(p)
	if errors.Is(err, fs.ErrNotExist) {
		return &File{}, nil
	}
	if err != nil {
		return nil, fmt.Errorf("mcp: %w", err)
	}
	f, err := Parse(data)
	var ce *ConfigError
	if errors.As(err, &ce) {
		ce.File = p
	}
	if err != nil {
		return nil, err
	}
	if fi, err := os.Stat(p); err == nil && fi.Mode().Perm()&0o077 != 0 && f.holdsSecrets() {
		f.Warnings = append(f.Warnings, fmt.Sprintf("%s holds env or headers and other users may read it (mode %04o): chmod 600 %s", p, fi.Mode().Perm(), p))
	}
	return f, nil
}

func (f *File) holdsSecrets() bool {
	for _, s := range f.Servers {
		if len(s.Env) > 0 || len(s.Headers) > 0 || (s.OAuth != nil && s.OAuth.ClientSecret != "") {
			return true
		}
	}
	return false
}

// Save writes the file at p whole (a reader sees the old file or the
// new one), mode 0600: it may hold secrets in env and headers.
func (f *File) Save(p string) error {
	data, err := f.Marshal()
	if err != nil {
		return err
	}
	if err := privfile.Replace(p, data); err != nil {
		return fmt.Errorf("mcp: save %s: %w", p, err)
	}
	return nil
}

// Parse reads a servers' file. Keys den does not know are kept (other
// programs write this format too) and listed in Warnings; a known key
// with a value of the wrong kind, a server without a command or a url,
// or one with both, is an error naming the line, the column and the
// field.
func Parse(data []byte) (*File, error) {
	f := &File{}
	if len(bytes.TrimSpace(data)) == 0 {
		return f, nil
	}
	root, err := parseTree(data)
	if err != nil {
		var se *syntaxError
		errors.As(err, &se)
		line, col := position(data, se.off)
		return nil, &ConfigError{Line: line, Col: col, Problem: "not valid JSON: " + se.msg}
	}
	p := &parser{data: data, f: f}
	if root.kind != '{' {
		return nil, p.errAt(root, "", "the file must be a JSON object, {\"mcpServers\": {...}}")
	}
	for i, k := range root.keys {
		v := root.vals[i]
		if k != "mcpServers" {
			f.extra = append(f.extra, field{k, json.RawMessage(v.raw)})
			continue
		}
		if v.kind != '{' {
			return nil, p.errAt(v, "mcpServers", "want an object of servers by name, got "+v.what())
		}
		for j, name := range v.keys {
			s, err := p.server(name, v.vals[j])
			if err != nil {
				return nil, err
			}
			f.Servers = append(f.Servers, s)
		}
	}
	return f, nil
}

type parser struct {
	data []byte
	f    *File
}

func (p *parser) errAt(n *node, field, problem string) *ConfigError {
	line, col := position(p.data, n.start)
	return &ConfigError{Line: line, Col: col, Field: field, Problem: problem}
}

var serverName = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_-]{0,47}$`)

// ValidName checks a server's name: 1-48 letters, digits, '_' or '-',
// not starting with either of those two.
func ValidName(name string) error {
	if !serverName.MatchString(name) {
		return fmt.Errorf("server name %q: use 1-48 letters, digits, '_' or '-', starting with a letter or digit", name)
	}
	return nil
}

func (p *parser) server(name string, n *node) (*Server, error) {
	at := "mcpServers." + name
	if err := ValidName(name); err != nil {
		return nil, p.errAt(n, at, err.Error())
	}
	if n.kind != '{' {
		return nil, p.errAt(n, at, "want an object, got "+n.what())
	}
	s := &Server{Name: name, Enabled: true}
	var err error
	for i, k := range n.keys {
		v := n.vals[i]
		fat := at + "." + k
		switch k {
		case "type":
			var t string
			if t, err = p.str(v, fat); err == nil {
				switch t {
				case Stdio, HTTP, SSE:
					s.Type = t
				case "streamable-http", "streamableHttp", "streamable_http", "streamable":
					s.Type = HTTP
				default:
					err = p.errAt(v, fat, fmt.Sprintf("%q: want \"stdio\", \"http\" or \"sse\"", t))
				}
			}
		case "command":
			s.Command, err = p.str(v, fat)
			if err == nil && strings.TrimSpace(s.Command) == "" {
				err = p.errAt(v, fat, "empty")
			}
		case "args":
			s.Args, err = p.strs(v, fat)
		case "env":
			s.Env, err = p.kvs(v, fat)
		case "url":
			if s.URL, err = p.str(v, fat); err == nil {
				err = p.checkURL(v, fat, s.URL)
			}
		case "headers":
			s.Headers, err = p.kvs(v, fat)
		case "host":
			s.Host, err = p.boolean(v, fat)
		case "egress":
			s.Egress, err = p.str(v, fat)
			if err == nil {
				if _, perr := egress.ParseMode(s.Egress); perr != nil || strings.TrimSpace(s.Egress) == "" {
					err = p.errAt(v, fat, fmt.Sprintf("%q: want \"open\", \"allowlist\", \"ask\" or \"off\"", s.Egress))
				}
			}
		case "allow":
			s.Allow, err = p.strs(v, fat)
			for j, r := range s.Allow {
				if _, perr := egress.ParseRule(r); err == nil && perr != nil {
					err = p.errAt(v.vals[j], fmt.Sprintf("%s[%d]", fat, j), perr.Error())
				}
			}
		case "agents":
			s.Agents, err = p.strs(v, fat)
			for j, a := range s.Agents {
				if err == nil && (strings.TrimSpace(a) == "" || strings.ContainsFunc(a, unicode.IsControl)) {
					err = p.errAt(v.vals[j], fmt.Sprintf("%s[%d]", fat, j), "not an agent's name")
				}
			}
		case "enabled":
			s.Enabled, err = p.boolean(v, fat)
		case "timeout":
			s.Timeout, err = p.seconds(v, fat)
		case "startupTimeout":
			s.StartupTimeout, err = p.seconds(v, fat)
		case "tools":
			s.Tools, err = p.filter(v, fat)
		case "permissions":
			s.Permissions, err = p.rules(v, fat)
		case "oauth":
			s.OAuth, err = p.oauth(v, fat)
		case "note":
			s.Note, err = p.str(v, fat)
			if err == nil && (len(s.Note) > 500 || strings.ContainsFunc(s.Note, unicode.IsControl)) {
				err = p.errAt(v, fat, "a note is one line of at most 500 bytes")
			}
		default:
			s.extra = append(s.extra, field{k, json.RawMessage(v.raw)})
			p.f.Warnings = append(p.f.Warnings, fmt.Sprintf("%s: den does not read this key; it is kept as it is", fat))
		}
		if err != nil {
			return nil, err
		}
	}
	switch {
	case s.Command != "" && s.URL != "":
		return nil, p.errAt(n, at, "has both a command and a url: a server is either started (command) or reached (url)")
	case s.Command == "" && s.URL == "":
		return nil, p.errAt(n, at, "has neither a command (a server den starts) nor a url (a server den reaches)")
	case s.Command != "" && s.Type != "" && s.Type != Stdio:
		return nil, p.errAt(n, at, fmt.Sprintf("type %q needs a url, not a command", s.Type))
	case s.URL != "" && s.Type == Stdio:
		return nil, p.errAt(n, at, "type \"stdio\" needs a command, not a url")
	case s.URL != "" && (s.Host || len(s.Args) > 0 || len(s.Env) > 0):
		return nil, p.errAt(n, at, "host, args and env are for servers den starts (command); den reaches a url from the host")
	case s.URL != "" && (s.Egress != "" || len(s.Allow) > 0):
		return nil, p.errAt(n, at, "egress and allow are for servers den starts (command): den itself reaches a url")
	case len(s.Allow) > 0 && s.Egress == "":
		return nil, p.errAt(n, at, "allow without egress: set \"egress\": \"allowlist\" (or \"ask\") for the rules to decide")
	case s.Command != "" && len(s.Headers) > 0:
		return nil, p.errAt(n, at, "headers are for servers den reaches (url)")
	case s.Command != "" && s.OAuth != nil:
		return nil, p.errAt(n, at, "oauth is for servers den reaches (url)")
	}
	if s.Command != "" {
		s.Type = Stdio
	} else if s.Type == "" {
		s.Type, s.urlOnly = HTTP, true
	}
	return s, nil
}

func (p *parser) str(n *node, at string) (string, error) {
	if n.kind != '"' {
		return "", p.errAt(n, at, "want a string, got "+n.what())
	}
	if strings.ContainsRune(n.str, 0) {
		return "", p.errAt(n, at, "holds a NUL byte")
	}
	return n.str, nil
}

func (p *parser) strs(n *node, at string) ([]string, error) {
	if n.kind != '[' {
		return nil, p.errAt(n, at, "want an array of strings, got "+n.what())
	}
	out := make([]string, 0, len(n.vals))
	for i, v := range n.vals {
		s, err := p.str(v, fmt.Sprintf("%s[%d]", at, i))
		if err != nil {
			return nil, err
		}
		out = append(out, s)
	}
	return out, nil
}

var envName = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

func (p *parser) kvs(n *node, at string) ([]KV, error) {
	if n.kind != '{' {
		return nil, p.errAt(n, at, "want an object of strings, got "+n.what())
	}
	out := make([]KV, 0, len(n.keys))
	for i, k := range n.keys {
		v := n.vals[i]
		if v.kind == '0' || v.kind == 't' {
			return nil, p.errAt(v, at+"."+k, fmt.Sprintf("want a string, got %s: write it in quotes, \"%s\"", v.what(), v.raw))
		}
		s, err := p.str(v, at+"."+k)
		if err != nil {
			return nil, err
		}
		if strings.HasSuffix(at, ".env") && !envName.MatchString(k) {
			return nil, p.errAt(v, at+"."+k, "not a variable name (letters, digits and '_', not starting with a digit)")
		}
		if strings.HasSuffix(at, ".headers") && (k == "" || strings.ContainsAny(k, " :\r\n") || strings.ContainsAny(s, "\r\n")) {
			return nil, p.errAt(v, at+"."+k, "not a valid HTTP header")
		}
		out = append(out, KV{k, s})
	}
	return out, nil
}

func (p *parser) boolean(n *node, at string) (bool, error) {
	if n.kind != 't' {
		return false, p.errAt(n, at, "want true or false, got "+n.what())
	}
	return n.b, nil
}

func (p *parser) seconds(n *node, at string) (time.Duration, error) {
	if n.kind != '0' {
		return 0, p.errAt(n, at, "want a number of seconds, got "+n.what())
	}
	f, err := n.num.Float64()
	d := time.Duration(f * float64(time.Second))
	if err != nil || math.IsNaN(f) || f <= 0 || d > maxTimeout {
		return 0, p.errAt(n, at, fmt.Sprintf("want seconds above 0 and at most %d", int(maxTimeout/time.Second)))
	}
	return d, nil
}

func (p *parser) checkURL(n *node, at, raw string) error {
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return p.errAt(n, at, fmt.Sprintf("%q is not an http or https URL", raw))
	}
	return nil
}

func (p *parser) patterns(n *node, at string) ([]string, error) {
	pats, err := p.strs(n, at)
	for i, pat := range pats {
		if _, perr := path.Match(pat, ""); err == nil && (perr != nil || pat == "") {
			err = p.errAt(n.vals[i], fmt.Sprintf("%s[%d]", at, i), fmt.Sprintf("%q is not a glob pattern", pat))
		}
	}
	return pats, err
}

func (p *parser) filter(n *node, at string) (Filter, error) {
	var f Filter
	if n.kind != '{' {
		return f, p.errAt(n, at, `want {"allow": [patterns], "deny": [patterns]}, got `+n.what())
	}
	for i, k := range n.keys {
		var err error
		switch k {
		case "allow":
			f.Allow, err = p.patterns(n.vals[i], at+".allow")
		case "deny":
			f.Deny, err = p.patterns(n.vals[i], at+".deny")
		default:
			err = p.errAt(n.vals[i], at+"."+k, "unknown key: want allow or deny")
		}
		if err != nil {
			return f, err
		}
	}
	return f, nil
}

func (p *parser) rules(n *node, at string) ([]Rule, error) {
	if n.kind != '{' {
		return nil, p.errAt(n, at, `want an object of tool patterns to "allow", "ask" or "deny", got `+n.what())
	}
	var out []Rule
	for i, k := range n.keys {
		v := n.vals[i]
		if _, err := path.Match(k, ""); err != nil || k == "" {
			return nil, p.errAt(v, at+"."+k, fmt.Sprintf("%q is not a glob pattern", k))
		}
		s, err := p.str(v, at+"."+k)
		if err != nil {
			return nil, err
		}
		d, err := permission.ParseDecision(s)
		if err != nil {
			return nil, p.errAt(v, at+"."+k, fmt.Sprintf("%q: want \"allow\", \"ask\" or \"deny\"", s))
		}
		out = append(out, Rule{Pattern: k, Decision: d})
	}
	return out, nil
}

func (p *parser) oauth(n *node, at string) (*OAuth, error) {
	if n.kind != '{' {
		return nil, p.errAt(n, at, "want an object, got "+n.what())
	}
	o := &OAuth{}
	for i, k := range n.keys {
		v := n.vals[i]
		var err error
		switch k {
		case "clientId":
			o.ClientID, err = p.str(v, at+"."+k)
		case "clientSecret":
			o.ClientSecret, err = p.str(v, at+"."+k)
		case "scopes":
			o.Scopes, err = p.strs(v, at+"."+k)
		case "callbackPort":
			var port int64
			port, err = v.num.Int64()
			if v.kind != '0' || err != nil || port < 1 || port > 65535 {
				err = p.errAt(v, at+"."+k, "want a port number, 1 to 65535")
			}
			o.CallbackPort = int(port)
		default:
			err = p.errAt(v, at+"."+k, "unknown key: want clientId, clientSecret, scopes or callbackPort")
		}
		if err != nil {
			return nil, err
		}
	}
	return o, nil
}

// Marshal writes the file as JSON, indented: the servers with den's
// keys and, after them, the keys den does not read, as they were.
func (f *File) Marshal() ([]byte, error) {
	var b bytes.Buffer
	b.WriteString(`{"mcpServers":{`)
	for i, s := range f.Servers {
		if i > 0 {
			b.WriteByte(',')
		}
		writeJSON(&b, s.Name)
		b.WriteByte(':')
		s.marshal(&b)
	}
	b.WriteByte('}')
	for _, x := range f.extra {
		b.WriteByte(',')
		writeJSON(&b, x.key)
		b.WriteByte(':')
		b.Write(x.raw)
	}
	b.WriteByte('}')
	var out bytes.Buffer
	if err := json.Indent(&out, b.Bytes(), "", "  "); err != nil {
		return nil, fmt.Errorf("mcp: %w", err)
	}
	out.WriteByte('\n')
	return out.Bytes(), nil
}

func (s *Server) marshal(b *bytes.Buffer) {
	b.WriteByte('{')
	first := true
	put := func(k string, v any) {
		if !first {
			b.WriteByte(',')
		}
		first = false
		writeJSON(b, k)
		b.WriteByte(':')
		if raw, ok := v.(json.RawMessage); ok {
			b.Write(raw)
			return
		}
		writeJSON(b, v)
	}
	kvs := func(k string, list []KV) {
		if len(list) == 0 {
			return
		}
		var o bytes.Buffer
		o.WriteByte('{')
		for i, kv := range list {
			if i > 0 {
				o.WriteByte(',')
			}
			writeJSON(&o, kv.Key)
			o.WriteByte(':')
			writeJSON(&o, kv.Value)
		}
		o.WriteByte('}')
		put(k, json.RawMessage(o.Bytes()))
	}
	if s.Type != Stdio && !s.urlOnly {
		put("type", s.Type)
	}
	if s.Command != "" {
		put("command", s.Command)
		put("args", nonNil(s.Args))
	}
	kvs("env", s.Env)
	if s.URL != "" {
		put("url", s.URL)
	}
	kvs("headers", s.Headers)
	if s.Host {
		put("host", true)
	}
	if s.Egress != "" {
		put("egress", s.Egress)
	}
	if len(s.Allow) > 0 {
		put("allow", s.Allow)
	}
	if len(s.Agents) > 0 {
		put("agents", s.Agents)
	}
	if !s.Enabled {
		put("enabled", false)
	}
	if s.Timeout > 0 {
		put("timeout", json.RawMessage(secs(s.Timeout)))
	}
	if s.StartupTimeout > 0 {
		put("startupTimeout", json.RawMessage(secs(s.StartupTimeout)))
	}
	if len(s.Tools.Allow)+len(s.Tools.Deny) > 0 {
		t := map[string][]string{}
		if len(s.Tools.Allow) > 0 {
			t["allow"] = s.Tools.Allow
		}
		if len(s.Tools.Deny) > 0 {
			t["deny"] = s.Tools.Deny
		}
		put("tools", t)
	}
	if len(s.Permissions) > 0 {
		var o bytes.Buffer
		o.WriteByte('{')
		for i, r := range s.Permissions {
			if i > 0 {
				o.WriteByte(',')
			}
			writeJSON(&o, r.Pattern)
			o.WriteByte(':')
			writeJSON(&o, string(r.Decision))
		}
		o.WriteByte('}')
		put("permissions", json.RawMessage(o.Bytes()))
	}
	if o := s.OAuth; o != nil {
		m := map[string]any{}
		if o.ClientID != "" {
			m["clientId"] = o.ClientID
		}
		if o.ClientSecret != "" {
			m["clientSecret"] = o.ClientSecret
		}
		if len(o.Scopes) > 0 {
			m["scopes"] = o.Scopes
		}
		if o.CallbackPort != 0 {
			m["callbackPort"] = o.CallbackPort
		}
		put("oauth", m)
	}
	if s.Note != "" {
		put("note", s.Note)
	}
	for _, x := range s.extra {
		put(x.key, x.raw)
	}
	b.WriteByte('}')
}

// writeJSON writes v as JSON without escaping <, > and &.
func writeJSON(b *bytes.Buffer, v any) {
	enc := json.NewEncoder(b)
	enc.SetEscapeHTML(false)
	enc.Encode(v)
	b.Truncate(b.Len() - 1) // Encode's newline
}

func secs(d time.Duration) string {
	return strconv.FormatFloat(d.Seconds(), 'f', -1, 64)
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}
