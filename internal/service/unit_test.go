package service

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

var update = flag.Bool("update", false, "rewrite the golden unit files in testdata")

// tricky are arguments that systemd would change if they were written
// as they are: whitespace, quotes, specifiers, variables, backslashes, a
// lone semicolon (a command separator) and an empty argument.
var tricky = []string{
	"--tls", "self-signed",
	"two words", "  padded  ", "",
	`"double"`, "'single'", `it's "mixed"`,
	"$HOME", "${HOME}", "$$", "cost: $5",
	"100%", "%h", "%%", "%i$x",
	`back\slash`, `trailing\`, `\\double`, `\;`, ";", `\"`,
	"tab\there", "new\nline", "ünïcødé ✓",
}

func trickyOptions(user bool) Options {
	o := Options{
		User:       user,
		Binary:     "/opt/den 1.0/bin/den%v",
		Args:       tricky,
		DataDir:    "/srv/den data/100%",
		ConfigPath: `/etc/den/conf $X "q".toml`,
		Env:        map[string]string{"DEN_LOG": `debug "all" $x %y \z`, "LANG": "C.UTF-8", "MULTI": "a\nb\tc"},
	}
	if !user {
		o.RunAs = "den"
	}
	return o
}

func TestUnitRoundTrip(t *testing.T) {
	for _, user := range []bool{true, false} {
		name := map[bool]string{true: "user", false: "system"}[user]
		t.Run(name, func(t *testing.T) {
			o := trickyOptions(user)
			text, err := Unit(o)
			if err != nil {
				t.Fatalf("Unit: %v", err)
			}
			golden(t, filepath.Join("testdata", name+".service"), text)
			u := parseUnit(t, text)

			exec := u.one(t, "Service", "ExecStart")
			path, argv, err := parseExec(exec)
			if err != nil {
				t.Fatalf("ExecStart=%s: %v", exec, err)
			}
			want := append([]string{o.Binary, "serve", "--config=" + o.ConfigPath}, tricky...)
			if diff := cmp.Diff(want, argv); diff != "" {
				t.Errorf("argv systemd would run (-want +got):\n%s", diff)
			}
			if path != o.Binary {
				t.Errorf("executable %q, want %q", path, o.Binary)
			}

			env := map[string]string{}
			for _, v := range u.all("Service", "Environment") {
				assignments, err := parseEnvironment(v)
				if err != nil {
					t.Fatalf("Environment=%s: %v", v, err)
				}
				for k, val := range assignments {
					env[k] = val
				}
			}
			wantEnv := map[string]string{"DEN_HOME": o.DataDir}
			for k, v := range o.Env {
				wantEnv[k] = v
			}
			if diff := cmp.Diff(wantEnv, env); diff != "" {
				t.Errorf("environment systemd would set (-want +got):\n%s", diff)
			}

			fixed := map[[2]string]string{
				{"Unit", "Description"}:       "den, a self-hosted AI agent with its own Linux computer",
				{"Unit", "After"}:             "network-online.target",
				{"Unit", "Wants"}:             "network-online.target",
				{"Service", "Type"}:           "simple",
				{"Service", "Restart"}:        "on-failure",
				{"Service", "RestartSec"}:     "2",
				{"Service", "KillSignal"}:     "SIGTERM",
				{"Service", "KillMode"}:       "mixed",
				{"Service", "TimeoutStopSec"}: "30",
				{"Service", "Delegate"}:       "yes",
			}
			if user {
				fixed[[2]string{"Service", "EnvironmentFile"}] = "-%h/.config/den/env"
				fixed[[2]string{"Install", "WantedBy"}] = "default.target"
			} else {
				fixed[[2]string{"Service", "EnvironmentFile"}] = "-/etc/den/env"
				fixed[[2]string{"Service", "User"}] = "den"
				fixed[[2]string{"Install", "WantedBy"}] = "multi-user.target"
			}
			for k, want := range fixed {
				if got := u.one(t, k[0], k[1]); got != want {
					t.Errorf("[%s] %s=%s, want %s", k[0], k[1], got, want)
				}
			}
			if user && len(u.all("Service", "User")) != 0 {
				t.Error("a --user unit sets User=")
			}
			// These would break bubblewrap or the setuid newuidmap.
			for _, k := range []string{"NoNewPrivileges", "PrivateTmp", "ProtectSystem", "ProtectHome",
				"RestrictNamespaces", "SystemCallFilter", "LockPersonality", "CapabilityBoundingSet", "PrivateUsers"} {
				if len(u.all("Service", k)) != 0 {
					t.Errorf("unit sets %s=, which breaks den's sandbox", k)
				}
			}
		})
	}
}

func TestUnitPlain(t *testing.T) {
	text, err := Unit(Options{User: true, Binary: "/usr/local/bin/den", Args: []string{"--tls", "self-signed"}})
	if err != nil {
		t.Fatal(err)
	}
	u := parseUnit(t, text)
	// Words that need nothing are written bare, for the user reading it.
	if got := u.one(t, "Service", "ExecStart"); got != "/usr/local/bin/den serve --tls self-signed" {
		t.Errorf("ExecStart=%s", got)
	}
	if env := u.all("Service", "Environment"); len(env) != 0 {
		t.Errorf("Environment=%q without DataDir or Env", env)
	}
}

func TestUnitRefuses(t *testing.T) {
	ok := Options{User: true, Binary: "/usr/bin/den"}
	tests := []struct {
		name string
		edit func(*Options)
		want error
	}{
		{"api key", func(o *Options) { o.Env = map[string]string{"OPENAI_API_KEY": "sk-x"} }, ErrSecret},
		{"token, lower case", func(o *Options) { o.Env = map[string]string{"github_token": "x"} }, ErrSecret},
		{"password", func(o *Options) { o.Env = map[string]string{"DB_PASSWORD": "x"} }, ErrSecret},
		{"secret", func(o *Options) { o.Env = map[string]string{"MySecret": "x"} }, ErrSecret},
		{"secret, --system", func(o *Options) { o.User = false; o.Env = map[string]string{"ANTHROPIC_API_KEY": "x"} }, ErrSecret},
		{"relative binary", func(o *Options) { o.Binary = "den" }, ErrInvalid},
		{"unclean binary", func(o *Options) { o.Binary = "/usr/bin/../bin/den" }, ErrInvalid},
		{"binary with $", func(o *Options) { o.Binary = "/opt/$x/den" }, ErrInvalid},
		{"binary with quote", func(o *Options) { o.Binary = `/opt/"x"/den` }, ErrInvalid},
		{"binary with backslash", func(o *Options) { o.Binary = `/opt/x\y/den` }, ErrInvalid},
		{"binary with newline", func(o *Options) { o.Binary = "/opt/x\ny/den" }, ErrInvalid},
		{"relative data dir", func(o *Options) { o.DataDir = "den" }, ErrInvalid},
		{"relative config", func(o *Options) { o.ConfigPath = "config.toml" }, ErrInvalid},
		{"NUL argument", func(o *Options) { o.Args = []string{"a\x00b"} }, ErrInvalid},
		{"control character", func(o *Options) { o.Args = []string{"a\x1bb"} }, ErrInvalid},
		{"invalid UTF-8", func(o *Options) { o.Args = []string{"a\xffb"} }, ErrInvalid},
		{"bad env name", func(o *Options) { o.Env = map[string]string{"A-B": "x"} }, ErrInvalid},
		{"env name digit", func(o *Options) { o.Env = map[string]string{"1X": "x"} }, ErrInvalid},
		{"env value control", func(o *Options) { o.Env = map[string]string{"X": "\r"} }, ErrInvalid},
		{"DEN_HOME twice", func(o *Options) { o.DataDir = "/d"; o.Env = map[string]string{"DEN_HOME": "/e"} }, ErrInvalid},
		{"RunAs for --user", func(o *Options) { o.RunAs = "den" }, ErrInvalid},
		{"bad RunAs", func(o *Options) { o.User = false; o.RunAs = "den %h" }, ErrInvalid},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o := ok
			tt.edit(&o)
			text, err := Unit(o)
			if !errors.Is(err, tt.want) {
				t.Fatalf("Unit: err = %v, want %v", err, tt.want)
			}
			if text != "" {
				t.Error("Unit returned text with its error")
			}
			if tt.want == ErrSecret {
				want := map[bool]string{true: "~/.config/den/env", false: "/etc/den/env"}[o.User]
				if !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), "0600") {
					t.Errorf("error %q does not point to %s with mode 0600", err, want)
				}
			}
		})
	}
}

// TestParseExec checks the test's own systemd parser against examples
// from systemd.service(5) and systemd.syntax(7), so that the round trip
// above proves something.
func TestParseExec(t *testing.T) {
	tests := []struct {
		line string
		argv []string
		bad  bool
	}{
		{line: `/bin/echo one "two two" 'three three'`, argv: []string{"/bin/echo", "one", "two two", "three three"}},
		{line: `/bin/echo "a\"b" "c\\d" "e\x41\101\u00e9" "\s"`, argv: []string{"/bin/echo", `a"b`, `c\d`, "eAAé", " "}},
		{line: `/bin/echo $$HOME %% \;`, argv: []string{"/bin/echo", "$HOME", "%", ";"}},
		{line: `"/opt/a b/x" y`, argv: []string{"/opt/a b/x", "y"}},
		{line: `/bin/echo "unbalanced`, bad: true},
		{line: `/bin/echo "\q"`, bad: true},            // unknown escape
		{line: `/bin/echo %h`, bad: true},              // specifier: not literal
		{line: `/bin/echo $HOME`, bad: true},           // variable: not literal
		{line: `/bin/echo ${HOME}x`, bad: true},        // variable: not literal
		{line: `/bin/echo a ; /bin/echo b`, bad: true}, // two commands
		{line: `/bin/echo trailing\`, bad: true},       // continuation
	}
	for _, tt := range tests {
		_, argv, err := parseExec(tt.line)
		if tt.bad {
			if err == nil {
				t.Errorf("parseExec(%s) = %q, want an error", tt.line, argv)
			}
			continue
		}
		if err != nil {
			t.Errorf("parseExec(%s): %v", tt.line, err)
			continue
		}
		if diff := cmp.Diff(tt.argv, argv); diff != "" {
			t.Errorf("parseExec(%s) (-want +got):\n%s", tt.line, diff)
		}
	}
}

// TestSystemdAnalyzeVerify has systemd itself load the unit with tricky
// values and asserts it complains about nothing. systemd-analyze verify
// needs no running systemd, so it works in containers too; CI installs
// the package, and there a missing systemd-analyze fails the test.
func TestSystemdAnalyzeVerify(t *testing.T) {
	analyze, err := exec.LookPath("systemd-analyze")
	if _, serr := exec.LookPath("systemctl"); err != nil || serr != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("systemd-analyze or systemctl not found: install the Debian package systemd")
		}
		t.Skip("systemd-analyze or systemctl not installed (package systemd)")
	}
	bin, err := exec.LookPath("true")
	if err != nil {
		t.Skip("no true(1) to stand in for den")
	}
	bin, _ = filepath.EvalSymlinks(bin)
	for _, user := range []bool{true, false} {
		o := trickyOptions(user)
		o.Binary = bin
		text, err := Unit(o)
		if err != nil {
			t.Fatal(err)
		}
		dir := t.TempDir()
		path := filepath.Join(dir, UnitName)
		if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		args := []string{"verify", path}
		cmd := exec.Command(analyze, args...)
		if user {
			cmd = exec.Command(analyze, append([]string{"--user"}, args...)...)
			// The user manager wants a runtime dir, which a test has none of.
			cmd.Env = append(os.Environ(), "XDG_RUNTIME_DIR="+t.TempDir())
		}
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Errorf("user=%v: systemd-analyze verify: %v\n%s", user, err, out)
		}
		for _, line := range strings.Split(string(out), "\n") {
			if strings.Contains(line, path) {
				t.Errorf("user=%v: systemd-analyze: %s", user, line)
			}
		}
	}
}

// unit is a parsed unit file: section → key → values in order.
type unit map[string]map[string][]string

// parseUnit reads text as systemd.syntax(7) describes, strictly: no
// continuation lines (Unit never writes them).
func parseUnit(t *testing.T, text string) unit {
	t.Helper()
	u := unit{}
	section := ""
	for i, line := range strings.Split(text, "\n") {
		line = strings.TrimSpace(line)
		switch {
		case line == "" || line[0] == '#' || line[0] == ';':
		case line[0] == '[' && line[len(line)-1] == ']':
			section = line[1 : len(line)-1]
			u[section] = map[string][]string{}
		case strings.HasSuffix(line, `\`):
			t.Fatalf("line %d continues: %s", i+1, line)
		default:
			k, v, ok := strings.Cut(line, "=")
			if !ok || section == "" {
				t.Fatalf("line %d: not an assignment in a section: %s", i+1, line)
			}
			u[section][k] = append(u[section][k], v)
		}
	}
	return u
}

func (u unit) all(section, key string) []string { return u[section][key] }

func (u unit) one(t *testing.T, section, key string) string {
	t.Helper()
	vs := u.all(section, key)
	if len(vs) != 1 {
		t.Fatalf("[%s] %s= appears %d times", section, key, len(vs))
	}
	return vs[0]
}

// parseExec reads an ExecStart= value as systemd does
// (src/core/load-fragment.c, config_parse_exec, and replace_env_argv at
// exec time): words unquoted and C-unescaped, specifiers expanded in each,
// then variables in each argument but not in the executable's path. It
// fails on anything Unit should never produce: several commands, a
// specifier other than %%, a variable other than $$, a bad escape.
func parseExec(line string) (path string, argv []string, err error) {
	words, err := splitWords(line)
	if err != nil {
		return "", nil, err
	}
	if len(words) == 0 {
		return "", nil, errors.New("no command")
	}
	for i, w := range words {
		if words[i], err = expand(w, '%'); err != nil {
			return "", nil, err
		}
	}
	path = words[0]
	for _, w := range words {
		a, err := expand(w, '$')
		if err != nil {
			return "", nil, err
		}
		argv = append(argv, a)
	}
	return path, argv, nil
}

// parseEnvironment reads an Environment= value: unquoted, C-unescaped,
// specifiers expanded; no variables.
func parseEnvironment(value string) (map[string]string, error) {
	words, err := splitWords(value)
	if err != nil {
		return nil, err
	}
	env := map[string]string{}
	for _, w := range words {
		w, err := expand(w, '%')
		if err != nil {
			return nil, err
		}
		k, v, ok := strings.Cut(w, "=")
		if !ok {
			return nil, fmt.Errorf("%q is not an assignment", w)
		}
		env[k] = v
	}
	return env, nil
}

// splitWords splits s into words as systemd's extract_first_word does with
// EXTRACT_UNQUOTE|EXTRACT_CUNESCAPE, failing on a lone ";" (a separator).
func splitWords(s string) ([]string, error) {
	var words []string
	i := 0
	for {
		for i < len(s) && isSpace(s[i]) {
			i++
		}
		if i == len(s) {
			return words, nil
		}
		if s[i] == ';' && (i+1 == len(s) || isSpace(s[i+1])) {
			return nil, errors.New("a lone ; separates commands")
		}
		if s[i] == '\\' && i+1 < len(s) && s[i+1] == ';' && (i+2 == len(s) || isSpace(s[i+2])) {
			words = append(words, ";")
			i += 2
			continue
		}
		var w strings.Builder
		var quote byte
	word:
		for ; i < len(s); i++ {
			c := s[i]
			switch {
			case c == '\\':
				r, n, err := unescape(s[i+1:])
				if err != nil {
					return nil, err
				}
				w.WriteString(r)
				i += n
			case quote != 0 && c == quote:
				quote = 0
			case quote != 0:
				w.WriteByte(c)
			case c == '"' || c == '\'':
				quote = c
			case isSpace(c):
				break word
			default:
				w.WriteByte(c)
			}
		}
		if quote != 0 {
			return nil, errors.New("unbalanced quotes")
		}
		words = append(words, w.String())
	}
}

func isSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }

// unescape decodes the escape after a backslash at the start of s, per
// systemd.syntax(7)'s table, returning the text and the bytes consumed.
func unescape(s string) (string, int, error) {
	if s == "" {
		return "", 0, errors.New("trailing backslash")
	}
	simple := map[byte]string{'a': "\a", 'b': "\b", 'f': "\f", 'n': "\n", 'r': "\r", 't': "\t",
		'v': "\v", '\\': `\`, '"': `"`, '\'': "'", 's': " "}
	if r, ok := simple[s[0]]; ok {
		return r, 1, nil
	}
	// \x and octal escapes give a raw byte, \u and \U a code point in UTF-8.
	number := func(start, digits, base int, raw bool) (string, int, error) {
		if len(s) < start+digits {
			return "", 0, fmt.Errorf("short escape \\%s", s)
		}
		n, err := strconv.ParseUint(s[start:start+digits], base, 32)
		if err != nil || n == 0 || (raw && n > 0xff) {
			return "", 0, fmt.Errorf("bad escape \\%s", s[:start+digits])
		}
		if raw {
			return string([]byte{byte(n)}), start + digits, nil
		}
		return string(rune(n)), start + digits, nil
	}
	switch s[0] {
	case 'x':
		return number(1, 2, 16, true)
	case 'u':
		return number(1, 4, 16, false)
	case 'U':
		return number(1, 8, 16, false)
	case '0', '1', '2', '3', '4', '5', '6', '7':
		return number(0, 3, 8, true)
	}
	return "", 0, fmt.Errorf("unknown escape \\%c", s[0])
}

// expand replaces the doubled sigil ("%%" or "$$") by one and fails on any
// other use of it: Unit writes only literals.
func expand(s string, sigil byte) (string, error) {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] != sigil {
			b.WriteByte(s[i])
			continue
		}
		if i+1 < len(s) && s[i+1] == sigil {
			b.WriteByte(sigil)
			i++
			continue
		}
		return "", fmt.Errorf("%q would be expanded by systemd", s[i:])
	}
	return b.String(), nil
}

func golden(t *testing.T, path, got string) {
	t.Helper()
	if *update {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -update to create it)", err)
	}
	if diff := cmp.Diff(string(want), got); diff != "" {
		t.Errorf("%s (-want +got; go test -update rewrites it):\n%s", path, diff)
	}
}
