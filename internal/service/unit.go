package service

import (
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"unicode/utf8"
)

// UnitName is the name of the unit Install writes.
const UnitName = "den.service"

// Options describe the service. Binary is required; the rest is optional.
type Options struct {
	// User selects a --user service (the user's own systemd manager);
	// false selects a --system one.
	User bool

	// Binary is the absolute path of the den executable, usually
	// os.Executable().
	Binary string

	// Args follow "serve" on the command line, e.g. "--tls", "self-signed".
	Args []string

	// DataDir, when set, becomes DEN_HOME in the service's environment.
	// ConfigPath, when set, is passed as --config. Both must be absolute:
	// a service starts in /.
	DataDir, ConfigPath string

	// Env holds further environment variables for the service. Names that
	// look like secrets are refused (see ErrSecret).
	Env map[string]string

	// RunAs names the account a --system service runs as (User=); empty
	// runs it as root. It must be empty for --user.
	RunAs string

	// Systemctl and Loginctl are the commands run, "systemctl" and
	// "loginctl" (looked up in PATH) when empty.
	Systemctl, Loginctl string

	// UnitDir is where den.service is written. When empty: for --user,
	// $XDG_CONFIG_HOME/systemd/user (or ~/.config/systemd/user); for
	// --system, /etc/systemd/system.
	UnitDir string
}

// secretWords mark environment variable names that hold secrets. The
// match is on upper-cased substrings, so OPENAI_API_KEY and
// GithubToken are both caught; a harmless name that contains one (say,
// KEYBOARD) is refused too, which errs the safe way.
var secretWords = []string{"KEY", "TOKEN", "SECRET", "PASSWORD", "PASSWD", "CREDENTIAL"}

var (
	envName  = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)
	userName = regexp.MustCompile(`^([A-Za-z_][A-Za-z0-9_.-]{0,31}|[0-9]+)$`)
)

// Unit returns the text of den.service for o, or an error wrapping
// ErrSecret or ErrInvalid when o cannot be written as a unit faithfully.
func Unit(o Options) (string, error) {
	argv, err := command(o)
	if err != nil {
		return "", err
	}
	env, err := environment(o)
	if err != nil {
		return "", err
	}
	if o.RunAs != "" && (o.User || !userName.MatchString(o.RunAs)) {
		return "", fmt.Errorf("service: RunAs %q: %w: want an account name, for --system only", o.RunAs, ErrInvalid)
	}

	var b strings.Builder
	line := func(format string, a ...any) { fmt.Fprintf(&b, format+"\n", a...) }
	line("# Written by `den service install`; `den service uninstall` removes it.")
	line("[Unit]")
	line("Description=den, a self-hosted AI agent with its own Linux computer")
	// A user manager has no network-online.target, so there these two
	// lines do nothing; den binds its listener without the network up.
	line("After=network-online.target")
	line("Wants=network-online.target")
	line("")
	line("[Service]")
	line("Type=simple")
	words := make([]string, len(argv))
	for i, a := range argv {
		words[i] = execWord(a)
	}
	line("ExecStart=%s", strings.Join(words, " "))
	for _, kv := range env {
		line("Environment=%s", envWord(kv))
	}
	// Keys live here, in a file the user makes with mode 0600; "-" lets
	// the service start without it.
	if o.User {
		line("EnvironmentFile=-%%h/.config/den/env")
	} else {
		line("EnvironmentFile=-/etc/den/env")
	}
	if o.RunAs != "" {
		line("User=%s", o.RunAs)
	}
	line("Restart=on-failure")
	line("RestartSec=2")
	// SIGTERM goes to den alone (KillMode=mixed), which lets running tool
	// calls end within its grace period and then stops its sandboxes;
	// whatever is left at TimeoutStopSec gets SIGKILL.
	line("KillMode=mixed")
	line("KillSignal=SIGTERM")
	line("TimeoutStopSec=30")
	// den makes a cgroup per agent computer under its own, which needs
	// the subtree delegated to it (see package sandbox/cgroup).
	line("Delegate=yes")
	// Hardening is limited to a private umask. The usual options break
	// den's sandbox: bubblewrap makes user and mount namespaces
	// (RestrictNamespaces=, and the mount namespace that ProtectSystem=,
	// PrivateTmp=, ProtectHome= and friends set up around it), and the
	// subordinate ids of a rootfs are mapped by the setuid newuidmap and
	// newgidmap, which NoNewPrivileges= disables, as do the options that
	// imply it outside root's manager (SystemCallFilter=,
	// LockPersonality=, MemoryDenyWriteExecute=, RestrictRealtime=…);
	// CapabilityBoundingSet= would strip what newuidmap gains from its
	// setuid bit. The isolation that matters is the sandbox's.
	line("UMask=0077")
	line("")
	line("[Install]")
	if o.User {
		line("WantedBy=default.target")
	} else {
		line("WantedBy=multi-user.target")
	}
	return b.String(), nil
}

// command returns the service's argv: the binary, "serve", --config when
// asked for, then o.Args.
func command(o Options) ([]string, error) {
	bin := o.Binary
	// systemd refuses quotes, backslashes and control characters in the
	// executable's path, and expands $ in argv[0] but not in the path, so
	// no escaping of $ would be right for both.
	if !filepath.IsAbs(bin) || filepath.Clean(bin) != bin || strings.ContainsAny(bin, "\"'\\$") || !carriable(bin, false) {
		return nil, fmt.Errorf("service: binary %q: %w: want a clean absolute path without quotes, backslashes or $", bin, ErrInvalid)
	}
	argv := []string{bin, "serve"}
	if o.ConfigPath != "" {
		if !filepath.IsAbs(o.ConfigPath) {
			return nil, fmt.Errorf("service: config path %q: %w: want an absolute path", o.ConfigPath, ErrInvalid)
		}
		argv = append(argv, "--config="+o.ConfigPath)
	}
	argv = append(argv, o.Args...)
	for _, a := range argv {
		if !carriable(a, true) {
			return nil, fmt.Errorf("service: argument %q: %w: NUL, control characters other than tab and newline, and invalid UTF-8 cannot be passed", a, ErrInvalid)
		}
	}
	return argv, nil
}

// environment returns the service's variables as sorted NAME=value
// strings: DEN_HOME from o.DataDir, then o.Env.
func environment(o Options) ([]string, error) {
	env := maps.Clone(o.Env)
	if env == nil {
		env = map[string]string{}
	}
	for name := range env {
		if !envName.MatchString(name) {
			return nil, fmt.Errorf("service: environment variable %q: %w: not a valid name", name, ErrInvalid)
		}
		upper := strings.ToUpper(name)
		for _, w := range secretWords {
			if strings.Contains(upper, w) {
				return nil, fmt.Errorf("service: environment variable %s %w; put it in %s instead, a file you create with mode 0600", name, ErrSecret, envFile(o.User))
			}
		}
	}
	if o.DataDir != "" {
		if !filepath.IsAbs(o.DataDir) {
			return nil, fmt.Errorf("service: data dir %q: %w: want an absolute path", o.DataDir, ErrInvalid)
		}
		if _, ok := env["DEN_HOME"]; ok {
			return nil, fmt.Errorf("service: %w: both DataDir and Env set DEN_HOME", ErrInvalid)
		}
		env["DEN_HOME"] = o.DataDir
	}
	var out []string
	for _, name := range slices.Sorted(maps.Keys(env)) {
		if !carriable(env[name], true) {
			return nil, fmt.Errorf("service: environment variable %s: %w: NUL, control characters other than tab and newline, and invalid UTF-8 cannot be passed", name, ErrInvalid)
		}
		out = append(out, name+"="+env[name])
	}
	return out, nil
}

// envFile is where the unit reads optional variables from, as the user
// would write the path.
func envFile(user bool) string {
	if user {
		return "~/.config/den/env"
	}
	return "/etc/den/env"
}

// carriable reports whether s can be written in a unit file and read back
// unchanged: valid UTF-8 without NUL or control characters, except tab and
// newline when ws is true.
func carriable(s string, ws bool) bool {
	if !utf8.ValidString(s) {
		return false
	}
	for _, r := range s {
		if ws && (r == '\t' || r == '\n') {
			continue
		}
		if r < 0x20 || r == 0x7f {
			return false
		}
	}
	return true
}

// execWord writes one ExecStart= word so that systemd reads back exactly
// s: "%" doubled (specifiers are expanded in every word) and "$" doubled
// (variables are expanded in every argument), then, when the word has
// whitespace, quotes, backslashes or is empty or a lone ";" (a command
// separator), double quotes around it with C escapes for backslash,
// double quote, tab and newline.
func execWord(s string) string {
	s = strings.ReplaceAll(s, "$", "$$")
	return unitWord(s)
}

// envWord writes one Environment= assignment: like execWord but without
// doubling "$", since Environment= expands no variables.
func envWord(kv string) string {
	return unitWord(kv)
}

// unitWord doubles "%" and quotes s as one item by systemd.syntax(7)'s
// rules when it needs quoting.
func unitWord(s string) string {
	s = strings.ReplaceAll(s, "%", "%%")
	if s != "" && s != ";" && !strings.ContainsAny(s, " \t\n\"'\\") {
		return s
	}
	var b strings.Builder
	b.WriteByte('"')
	for _, r := range s {
		switch r {
		case '\\':
			b.WriteString(`\\`)
		case '"':
			b.WriteString(`\"`)
		case '\t':
			b.WriteString(`\t`)
		case '\n':
			b.WriteString(`\n`)
		default:
			b.WriteRune(r)
		}
	}
	b.WriteByte('"')
	return b.String()
}

// unitDir returns where den.service lives for o.
func unitDir(o Options) (string, error) {
	if o.UnitDir != "" {
		return o.UnitDir, nil
	}
	if !o.User {
		return "/etc/systemd/system", nil
	}
	// The XDG spec says to ignore a relative XDG_CONFIG_HOME.
	if d := os.Getenv("XDG_CONFIG_HOME"); filepath.IsAbs(d) {
		return filepath.Join(d, "systemd", "user"), nil
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return "", fmt.Errorf("service: find the user unit folder: %w", err)
	}
	return filepath.Join(home, ".config", "systemd", "user"), nil
}
