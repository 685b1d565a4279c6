// Package secret keeps the secrets agents use without ever seeing them:
// a value (a token, a password), the hosts it is bound to, and where in
// a request to those hosts it goes (a header, a query parameter, or the
// password of basic authentication).
//
// Inside a computer an agent sees only a placeholder, "den-secret:NAME"
// (Placeholder), in the environment variable NAME; den's egress proxy
// puts the value into requests to the bound hosts (package egress).
//
// The secrets live in one file, DATA/secrets.json, mode 0600 in a 0700
// folder (privfile), readable by den's user alone: den has no keyring to
// lean on, and a key kept beside the file would protect nothing more.
// The file is read on each use and replaced atomically on each change;
// two changes made at the same moment by two den processes may lose
// one.
//
// Invariants: nothing in this package prints or logs a value; String
// omits it, and only Secret.Value (and the file) holds it.
package secret

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"den.dev/den/internal/privfile"
)

// Prefix starts every placeholder.
const Prefix = "den-secret:"

// ValueToken is where the value goes in a header's template.
const ValueToken = "{{value}}"

// maxFile bounds the secrets file.
const maxFile = 1 << 20

// ErrNotFound is a secret that does not exist.
var ErrNotFound = errors.New("no such secret")

// Secret is one secret and its binding.
type Secret struct {
	Name  string `json:"name"`
	Value string `json:"value"`
	// Hosts are the names the value may be sent to: exact names, or
	// wildcards ("*.example.com": every name below example.com).
	Hosts []string `json:"hosts"`
	// Where the value goes, exactly one of: Header, "NAME: TEMPLATE"
	// with ValueToken in TEMPLATE ("Authorization: Bearer {{value}}");
	// Query, a query parameter's name; Basic, the user of basic
	// authentication whose password is the value.
	Header string `json:"header,omitempty"`
	Query  string `json:"query,omitempty"`
	Basic  string `json:"basic,omitempty"`
	// Agents may use it; empty: every agent.
	Agents  []string  `json:"agents,omitempty"`
	Created time.Time `json:"created"`
}

// Placeholder is what the computer sees instead of the value.
func (s Secret) Placeholder() string { return Prefix + s.Name }

// String describes the secret without its value.
func (s Secret) String() string {
	return fmt.Sprintf("%s (%s to %s)", s.Name, s.Form(), strings.Join(s.Hosts, ", "))
}

// Form says where the value goes, in words.
func (s Secret) Form() string {
	switch {
	case s.Query != "":
		return "query parameter " + s.Query
	case s.Basic != "":
		return "basic auth as " + s.Basic
	}
	return "header " + s.Header
}

// HeaderName and HeaderTemplate split Header.
func (s Secret) HeaderName() string {
	name, _, _ := strings.Cut(s.Header, ":")
	return strings.TrimSpace(name)
}

func (s Secret) HeaderTemplate() string {
	_, tmpl, _ := strings.Cut(s.Header, ":")
	return strings.TrimSpace(tmpl)
}

// Binds reports whether the value may be sent to host.
func (s Secret) Binds(host string) bool {
	host = strings.ToLower(strings.TrimSuffix(host, "."))
	for _, h := range s.Hosts {
		if rest, ok := strings.CutPrefix(h, "*."); ok {
			if strings.HasSuffix(host, "."+rest) {
				return true
			}
		} else if h == host {
			return true
		}
	}
	return false
}

// For reports whether agent may use the secret.
func (s Secret) For(agent string) bool {
	return len(s.Agents) == 0 || slices.Contains(s.Agents, agent)
}

// Validate checks a secret before it is kept: a name that is also an
// environment variable's, a value, at least one host, one form.
func (s *Secret) Validate() error {
	if err := ValidName(s.Name); err != nil {
		return err
	}
	if s.Value == "" {
		return fmt.Errorf("secret %s: empty value", s.Name)
	}
	if strings.ContainsAny(s.Value, "\r\n\x00") {
		return fmt.Errorf("secret %s: the value holds a line break or NUL, which no header can carry", s.Name)
	}
	if len(s.Hosts) == 0 {
		return fmt.Errorf("secret %s: no host: name the hosts it may be sent to (--host)", s.Name)
	}
	for i, h := range s.Hosts {
		h = strings.ToLower(strings.TrimSuffix(strings.TrimSpace(h), "."))
		if !validHost(strings.TrimPrefix(h, "*.")) {
			return fmt.Errorf("secret %s: host %q: want a name such as api.github.com or *.example.com", s.Name, h)
		}
		s.Hosts[i] = h
	}
	forms := 0
	for _, f := range []string{s.Header, s.Query, s.Basic} {
		if f != "" {
			forms++
		}
	}
	switch {
	case forms == 0:
		s.Header = "Authorization: Bearer " + ValueToken
	case forms > 1:
		return fmt.Errorf("secret %s: one of --header, --query and --basic", s.Name)
	}
	if s.Header != "" {
		name, tmpl := s.HeaderName(), s.HeaderTemplate()
		if !validToken(name) || !strings.Contains(tmpl, ValueToken) {
			return fmt.Errorf("secret %s: header %q: want \"Name: template\" with %s in the template", s.Name, s.Header, ValueToken)
		}
		s.Header = name + ": " + tmpl
	}
	if s.Query != "" && strings.ContainsAny(s.Query, "&=#? ") {
		return fmt.Errorf("secret %s: query parameter %q", s.Name, s.Query)
	}
	if s.Basic != "" && strings.ContainsAny(s.Basic, ":\r\n") {
		return fmt.Errorf("secret %s: basic auth user %q may not hold a colon", s.Name, s.Basic)
	}
	return nil
}

// ValidName checks a secret's name: an environment variable's name in
// capitals (A-Z, 0-9, _, not starting with a digit), at most 64 long.
func ValidName(name string) error {
	if name == "" || len(name) > 64 || name[0] >= '0' && name[0] <= '9' {
		return fmt.Errorf("secret name %q: want capitals, digits and _, such as GITHUB_TOKEN", name)
	}
	for _, c := range name {
		if !(c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_') {
			return fmt.Errorf("secret name %q: want capitals, digits and _, such as GITHUB_TOKEN", name)
		}
	}
	return nil
}

func validHost(s string) bool {
	if s == "" || len(s) > 253 {
		return false
	}
	for _, label := range strings.Split(s, ".") {
		if label == "" || !validToken(label) {
			return false
		}
	}
	return true
}

func validToken(s string) bool {
	if s == "" {
		return false
	}
	for _, c := range s {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_') {
			return false
		}
	}
	return true
}

// Store is the secrets file.
type Store struct {
	path string
}

// Open returns the store of the data dir; the file is made on the
// first Set.
func Open(dataDir string) *Store {
	return &Store{path: filepath.Join(dataDir, "secrets.json")}
}

// Path is the file's path.
func (s *Store) Path() string { return s.path }

type file struct {
	Secrets []Secret `json:"secrets"`
}

func (s *Store) read() (file, error) {
	var f file
	b, _, err := privfile.Read(s.path, maxFile)
	if errors.Is(err, fs.ErrNotExist) {
		return f, nil
	}
	if err != nil {
		return f, fmt.Errorf("secrets: %s: %w", s.path, err)
	}
	if err := json.Unmarshal(b, &f); err != nil {
		return f, fmt.Errorf("secrets: %s: %w", s.path, err)
	}
	return f, nil
}

func (s *Store) write(f file) error {
	b, err := json.MarshalIndent(f, "", "  ")
	if err != nil {
		return err
	}
	if err := privfile.Replace(s.path, append(b, '\n')); err != nil {
		return fmt.Errorf("secrets: %w", err)
	}
	return nil
}

// Set keeps x, in place of a secret of the same name.
func (s *Store) Set(x Secret) error {
	if err := x.Validate(); err != nil {
		return err
	}
	f, err := s.read()
	if err != nil {
		return err
	}
	if x.Created.IsZero() {
		x.Created = time.Now().UTC()
	}
	i := slices.IndexFunc(f.Secrets, func(y Secret) bool { return y.Name == x.Name })
	if i >= 0 {
		f.Secrets[i] = x
	} else {
		f.Secrets = append(f.Secrets, x)
	}
	return s.write(f)
}

// Remove deletes the secret name.
func (s *Store) Remove(name string) error {
	f, err := s.read()
	if err != nil {
		return err
	}
	i := slices.IndexFunc(f.Secrets, func(y Secret) bool { return y.Name == name })
	if i < 0 {
		return fmt.Errorf("secret %s: %w", name, ErrNotFound)
	}
	f.Secrets = slices.Delete(f.Secrets, i, i+1)
	return s.write(f)
}

// List returns every secret, by name.
func (s *Store) List() ([]Secret, error) {
	f, err := s.read()
	if err != nil {
		return nil, err
	}
	slices.SortFunc(f.Secrets, func(a, b Secret) int { return strings.Compare(a.Name, b.Name) })
	return f.Secrets, nil
}

// For returns the secrets agent may use.
func (s *Store) For(agent string) ([]Secret, error) {
	all, err := s.List()
	if err != nil {
		return nil, err
	}
	out := all[:0]
	for _, x := range all {
		if x.For(agent) {
			out = append(out, x)
		}
	}
	return out, nil
}
