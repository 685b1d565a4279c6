package service

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// reply is what a fake command does for one argument list.
type reply struct {
	code           int
	stdout, stderr string
}

// fakes are a fake systemctl and loginctl: shell scripts that append
// their name and arguments to one log, then answer from replies (keyed
// by "name args…"), or exit 0 silently.
type fakes struct {
	systemctl, loginctl, log string
}

func newFakes(t *testing.T, replies map[string]reply) fakes {
	t.Helper()
	dir := t.TempDir()
	f := fakes{
		systemctl: filepath.Join(dir, "systemctl"),
		loginctl:  filepath.Join(dir, "loginctl"),
		log:       filepath.Join(dir, "log"),
	}
	for _, name := range []string{"systemctl", "loginctl"} {
		var b strings.Builder
		fmt.Fprintf(&b, "#!/bin/sh\nprintf '%%s\\n' \"%s $*\" >> %s\ncase \"%s $*\" in\n", name, sq(f.log), name)
		for args, r := range replies {
			if strings.HasPrefix(args, name+" ") {
				fmt.Fprintf(&b, "%s) printf '%%s' %s; printf '%%s' %s >&2; exit %d;;\n", sq(args), sq(r.stdout), sq(r.stderr), r.code)
			}
		}
		b.WriteString("esac\nexit 0\n")
		if err := os.WriteFile(filepath.Join(dir, name), []byte(b.String()), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	return f
}

// sq quotes s for sh.
func sq(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }

// calls returns the commands run so far, one "name args…" each.
func (f fakes) calls(t *testing.T) []string {
	t.Helper()
	data, err := os.ReadFile(f.log)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	return strings.Split(strings.TrimSuffix(string(data), "\n"), "\n")
}

func (f fakes) options(t *testing.T, user bool) Options {
	return Options{
		User:      user,
		Binary:    "/usr/local/bin/den",
		Args:      []string{"--tls", "self-signed"},
		DataDir:   "/home/alice/.local/share/den",
		Systemctl: f.systemctl,
		Loginctl:  f.loginctl,
		UnitDir:   filepath.Join(t.TempDir(), "systemd", "user"), // not there yet
	}
}

func TestInstallUser(t *testing.T) {
	t.Setenv("USER", "alice")
	for _, linger := range []string{"yes", "no"} {
		t.Run("linger="+linger, func(t *testing.T) {
			f := newFakes(t, map[string]reply{
				"loginctl show-user alice -p Linger": {stdout: "Linger=" + linger + "\n"},
			})
			o := f.options(t, true)
			r, err := Install(context.Background(), o)
			if err != nil {
				t.Fatalf("Install: %v", err)
			}
			want := []string{
				"systemctl --user daemon-reload",
				"systemctl --user enable --now den.service",
				"loginctl show-user alice -p Linger",
			}
			if diff := cmp.Diff(want, f.calls(t)); diff != "" {
				t.Errorf("commands (-want +got):\n%s", diff)
			}
			path := filepath.Join(o.UnitDir, UnitName)
			if r.UnitPath != path || r.Restarted {
				t.Errorf("Result = %+v, want UnitPath %s, not restarted", r, path)
			}
			assertUnitFile(t, o, path)
			if r.Linger != (linger == "yes") {
				t.Errorf("Linger = %v with Linger=%s", r.Linger, linger)
			}
			if linger == "no" && !strings.Contains(r.Note, "loginctl enable-linger alice") {
				t.Errorf("Note %q does not say how to keep den running after logout", r.Note)
			}
			if linger == "yes" && r.Note != "" {
				t.Errorf("Note %q with lingering on", r.Note)
			}
		})
	}
}

func TestInstallSystem(t *testing.T) {
	f := newFakes(t, nil)
	o := f.options(t, false)
	o.RunAs = "den"
	if _, err := Install(context.Background(), o); err != nil {
		t.Fatalf("Install: %v", err)
	}
	want := []string{"systemctl daemon-reload", "systemctl enable --now den.service"}
	if diff := cmp.Diff(want, f.calls(t)); diff != "" {
		t.Errorf("commands (-want +got):\n%s", diff)
	}
	assertUnitFile(t, o, filepath.Join(o.UnitDir, UnitName))
}

// TestReinstall proves the same unit is left running as it is, and a
// changed one is restarted onto.
func TestReinstall(t *testing.T) {
	f := newFakes(t, nil)
	o := f.options(t, false)
	ctx := context.Background()
	for i, args := range [][]string{{"--tls", "self-signed"}, {"--tls", "self-signed"}, {"--addr", ":8443"}} {
		o.Args = args
		r, err := Install(ctx, o)
		if err != nil {
			t.Fatal(err)
		}
		if want := i == 2; r.Restarted != want {
			t.Errorf("install %d: Restarted = %v, want %v", i, r.Restarted, want)
		}
		assertUnitFile(t, o, r.UnitPath)
	}
	calls := f.calls(t)
	if got := calls[len(calls)-1]; got != "systemctl restart den.service" {
		t.Errorf("last command %q, want a restart onto the changed unit", got)
	}
	if n := strings.Count(strings.Join(calls, "\n"), "restart"); n != 1 {
		t.Errorf("%d restarts, want 1: %q", n, calls)
	}
}

func TestStatus(t *testing.T) {
	const line = "systemctl --user status den.service --no-pager"
	tests := []struct {
		name string
		r    reply
		text string
		err  error // nil: no error; errAny: some error
	}{
		{"active", reply{code: 0, stdout: "● den.service - den\n   Active: active (running)\n"}, "● den.service - den\n   Active: active (running)\n", nil},
		{"inactive", reply{code: 3, stdout: "○ den.service\n   Active: inactive (dead)\n"}, "○ den.service\n   Active: inactive (dead)\n", nil},
		{"unknown unit", reply{code: 4, stderr: "Unit den.service could not be found."}, "", ErrNotInstalled},
		{"no bus", reply{code: 1, stderr: "Failed to connect to bus: No medium found"}, "", errAny},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFakes(t, map[string]reply{line: tt.r})
			text, err := Status(context.Background(), f.options(t, true))
			switch {
			case tt.err == nil && err != nil:
				t.Fatalf("Status: %v", err)
			case tt.err == errAny && err == nil, tt.err != nil && tt.err != errAny && !errors.Is(err, tt.err):
				t.Fatalf("Status: err = %v, want %v", err, tt.err)
			}
			if err != nil && tt.r.stderr != "" && !strings.Contains(err.Error(), tt.r.stderr) {
				t.Errorf("error %q lacks systemctl's stderr %q", err, tt.r.stderr)
			}
			if text != tt.text {
				t.Errorf("text = %q, want %q", text, tt.text)
			}
			if diff := cmp.Diff([]string{line}, f.calls(t)); diff != "" {
				t.Errorf("commands (-want +got):\n%s", diff)
			}
		})
	}
}

var errAny = errors.New("any error")

func TestUninstall(t *testing.T) {
	t.Setenv("USER", "alice")
	f := newFakes(t, nil)
	o := f.options(t, true)
	ctx := context.Background()
	r, err := Install(ctx, o)
	if err != nil {
		t.Fatal(err)
	}
	before := len(f.calls(t))
	if err := Uninstall(ctx, o); err != nil {
		t.Fatalf("Uninstall: %v", err)
	}
	want := []string{"systemctl --user disable --now den.service", "systemctl --user daemon-reload"}
	if diff := cmp.Diff(want, f.calls(t)[before:]); diff != "" {
		t.Errorf("commands (-want +got):\n%s", diff)
	}
	if _, err := os.Stat(r.UnitPath); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("unit file still there: %v", err)
	}

	before = len(f.calls(t))
	err = Uninstall(ctx, o)
	if !errors.Is(err, ErrNotInstalled) || !strings.Contains(err.Error(), r.UnitPath) {
		t.Errorf("second Uninstall: err = %v, want ErrNotInstalled naming %s", err, r.UnitPath)
	}
	if calls := f.calls(t)[before:]; len(calls) != 0 {
		t.Errorf("Uninstall without a unit ran %q", calls)
	}
}

func TestSystemctlFails(t *testing.T) {
	tests := []struct {
		name    string
		replies map[string]reply
		want    error
		stderr  string
	}{
		{"enable fails", map[string]reply{"systemctl --user enable --now den.service": {code: 1, stderr: "Failed to enable unit: Access denied"}},
			nil, "Failed to enable unit: Access denied"},
		{"no systemd", map[string]reply{"systemctl --user daemon-reload": {code: 1, stderr: "System has not been booted with systemd as init system (PID 1). Can't operate."}},
			ErrNoSystemd, "has not been booted with systemd"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFakes(t, tt.replies)
			_, err := Install(context.Background(), f.options(t, true))
			if err == nil {
				t.Fatal("Install succeeded")
			}
			if tt.want != nil && !errors.Is(err, tt.want) {
				t.Errorf("err = %v, want %v", err, tt.want)
			}
			if !strings.Contains(err.Error(), tt.stderr) {
				t.Errorf("error %q lacks systemctl's stderr %q", err, tt.stderr)
			}
		})
	}

	t.Run("no systemctl", func(t *testing.T) {
		ctx := context.Background()
		for _, name := range []string{filepath.Join(t.TempDir(), "systemctl"), "den-test-no-such-systemctl"} {
			o := Options{User: true, Binary: "/usr/bin/den", Systemctl: name, UnitDir: t.TempDir()}
			_, err := Install(ctx, o)
			if !errors.Is(err, ErrNoSystemd) || !strings.Contains(err.Error(), "another supervisor") {
				t.Errorf("Install with %s: err = %v, want ErrNoSystemd saying what to do", name, err)
			}
			if _, serr := os.Stat(filepath.Join(o.UnitDir, UnitName)); !errors.Is(serr, os.ErrNotExist) {
				t.Error("Install without systemctl wrote the unit file")
			}
			if _, err := Status(ctx, o); !errors.Is(err, ErrNoSystemd) {
				t.Errorf("Status with %s: err = %v, want ErrNoSystemd", name, err)
			}
		}
	})

	t.Run("secret", func(t *testing.T) {
		f := newFakes(t, nil)
		o := f.options(t, true)
		o.Env = map[string]string{"ANTHROPIC_API_KEY": "sk-ant-x"}
		if _, err := Install(context.Background(), o); !errors.Is(err, ErrSecret) {
			t.Errorf("err = %v, want ErrSecret", err)
		}
		if calls := f.calls(t); len(calls) != 0 {
			t.Errorf("ran %q for a refused unit", calls)
		}
	})
}

func TestUnitDir(t *testing.T) {
	home := t.TempDir()
	t.Setenv("HOME", home)
	tests := []struct {
		user bool
		xdg  string
		want string
	}{
		{true, "/cfg", "/cfg/systemd/user"},
		{true, "", filepath.Join(home, ".config/systemd/user")},
		{true, "relative", filepath.Join(home, ".config/systemd/user")},
		{false, "/cfg", "/etc/systemd/system"},
	}
	for _, tt := range tests {
		t.Setenv("XDG_CONFIG_HOME", tt.xdg)
		got, err := unitDir(Options{User: tt.user})
		if err != nil || got != tt.want {
			t.Errorf("unitDir(user=%v, XDG_CONFIG_HOME=%q) = %q, %v; want %q", tt.user, tt.xdg, got, err, tt.want)
		}
	}
	if got, _ := unitDir(Options{User: true, UnitDir: "/x"}); got != "/x" {
		t.Errorf("UnitDir not honoured: %q", got)
	}
}

// assertUnitFile checks path holds Unit(o), mode 0644, and nothing else
// was left in its folder.
func assertUnitFile(t *testing.T, o Options, path string) {
	t.Helper()
	want, err := Unit(o)
	if err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("unit file: %v", err)
	}
	if string(got) != want {
		t.Errorf("unit file differs from Unit(o)")
	}
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o644 {
		t.Errorf("unit file mode %v, want 0644", fi.Mode().Perm())
	}
	entries, _ := os.ReadDir(filepath.Dir(path))
	if len(entries) != 1 {
		t.Errorf("unit folder holds %d entries, want den.service alone", len(entries))
	}
}
