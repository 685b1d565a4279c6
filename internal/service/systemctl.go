package service

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strings"
	"time"
)

// Result tells what Install did.
type Result struct {
	// UnitPath is the file written.
	UnitPath string

	// Restarted is true when a different den.service was installed
	// already and the running service was restarted onto the new one.
	Restarted bool

	// Linger reports, for --user, whether lingering is enabled for the
	// user, so that the service runs without a login session.
	Linger bool

	// Note is advice for the user, empty when there is none: for --user
	// without lingering, that the service stops at logout unless
	// `loginctl enable-linger` is run.
	Note string
}

// Install writes den.service (atomically, mode 0644) in the unit folder,
// then runs systemctl daemon-reload and enable --now den.service, and a
// restart when it replaced a different unit. For --user it asks loginctl
// whether lingering is on; not knowing is a Note, not an error, since the
// service is installed by then.
func Install(ctx context.Context, o Options) (Result, error) {
	text, err := Unit(o)
	if err != nil {
		return Result{}, err
	}
	systemctl, err := lookSystemctl(o)
	if err != nil {
		return Result{}, err
	}
	dir, err := unitDir(o)
	if err != nil {
		return Result{}, err
	}
	path := filepath.Join(dir, UnitName)
	old, err := os.ReadFile(path)
	replaced := err == nil && !bytes.Equal(old, []byte(text))
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return Result{}, fmt.Errorf("service: make %s: %w%s", dir, err, rootHint(o, err))
	}
	if err := writeAtomic(path, []byte(text), 0o644); err != nil {
		return Result{}, fmt.Errorf("service: write %s: %w%s", path, err, rootHint(o, err))
	}
	if _, err := run(ctx, o, systemctl, "daemon-reload"); err != nil {
		return Result{}, err
	}
	if _, err := run(ctx, o, systemctl, "enable", "--now", UnitName); err != nil {
		return Result{}, err
	}
	if replaced {
		if _, err := run(ctx, o, systemctl, "restart", UnitName); err != nil {
			return Result{}, err
		}
	}
	r := Result{UnitPath: path, Restarted: replaced}
	if o.User {
		r.Linger, r.Note = linger(ctx, o)
	}
	return r, nil
}

// Status returns the output of systemctl status den.service. An inactive
// or failed service (exit code 3) is a status, not an error; a unit
// systemd does not know (exit code 4) is ErrNotInstalled.
func Status(ctx context.Context, o Options) (string, error) {
	systemctl, err := lookSystemctl(o)
	if err != nil {
		return "", err
	}
	out, err := run(ctx, o, systemctl, "status", UnitName, "--no-pager")
	var ce *commandError
	switch {
	case err == nil:
		return out, nil
	case errors.As(err, &ce) && ce.code == 3:
		return out, nil
	case errors.As(err, &ce) && ce.code == 4:
		return "", fmt.Errorf("service: %w (%s)", ErrNotInstalled, ce.stderr)
	}
	return "", err
}

// Uninstall stops and disables den.service, removes its file and reloads
// systemd. A unit folder without den.service is ErrNotInstalled, and then
// nothing is run. When disabling fails the file stays, so that a retry
// finds it.
func Uninstall(ctx context.Context, o Options) error {
	dir, err := unitDir(o)
	if err != nil {
		return err
	}
	path := filepath.Join(dir, UnitName)
	if _, err := os.Lstat(path); errors.Is(err, fs.ErrNotExist) {
		other := "--system"
		if !o.User {
			other = "--user"
		}
		return fmt.Errorf("service: no %s: %w (installed with %s?)", path, ErrNotInstalled, other)
	} else if err != nil {
		return fmt.Errorf("service: %w", err)
	}
	systemctl, err := lookSystemctl(o)
	if err != nil {
		return err
	}
	if _, err := run(ctx, o, systemctl, "disable", "--now", UnitName); err != nil {
		return err
	}
	if err := os.Remove(path); err != nil {
		return fmt.Errorf("service: remove %s: %w%s", path, err, rootHint(o, err))
	}
	_, err = run(ctx, o, systemctl, "daemon-reload")
	return err
}

// linger reports whether the user's services outlive their sessions, and
// the advice to give.
func linger(ctx context.Context, o Options) (bool, string) {
	name := os.Getenv("USER")
	if name == "" {
		if u, err := user.Current(); err == nil {
			name = u.Username
		}
	}
	advice := "den stops when you log out; to keep it running, run: loginctl enable-linger " + name
	loginctl := o.Loginctl
	if loginctl == "" {
		loginctl = "loginctl"
	}
	out, err := output(ctx, loginctl, "show-user", name, "-p", "Linger")
	if err != nil {
		return false, fmt.Sprintf("could not tell whether lingering is on (%v); if it is not, %s", err, advice)
	}
	if strings.TrimSpace(out) == "Linger=yes" {
		return true, ""
	}
	return false, advice
}

// lookSystemctl finds the systemctl to run.
func lookSystemctl(o Options) (string, error) {
	name := o.Systemctl
	if name == "" {
		name = "systemctl"
	}
	path, err := exec.LookPath(name)
	if err != nil {
		return "", fmt.Errorf("service: %v: %w", err, ErrNoSystemd)
	}
	return path, nil
}

// commandError is a command that ran and failed.
type commandError struct {
	cmd    string
	code   int
	stderr string
}

func (e *commandError) Error() string {
	if e.stderr == "" {
		return fmt.Sprintf("%s: exit code %d", e.cmd, e.code)
	}
	return fmt.Sprintf("%s: exit code %d: %s", e.cmd, e.code, e.stderr)
}

// run runs systemctl, with --user for a user service, and returns its
// standard output.
func run(ctx context.Context, o Options, systemctl string, args ...string) (string, error) {
	if o.User {
		args = append([]string{"--user"}, args...)
	}
	out, err := output(ctx, systemctl, args...)
	var ce *commandError
	if errors.As(err, &ce) && strings.Contains(ce.stderr, "has not been booted with systemd") {
		return out, fmt.Errorf("service: %w: %w", err, ErrNoSystemd)
	}
	if err != nil {
		return out, fmt.Errorf("service: %w", err)
	}
	return out, nil
}

// output runs name with args and returns its standard output; a failure
// is a *commandError carrying standard error.
func output(ctx context.Context, name string, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Cancel = func() error { return cmd.Process.Signal(os.Interrupt) }
	cmd.WaitDelay = 5 * time.Second
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	line := strings.Join(append([]string{filepath.Base(name)}, args...), " ")
	var ee *exec.ExitError
	if errors.As(err, &ee) && ctx.Err() == nil {
		return stdout.String(), &commandError{cmd: line, code: ee.ExitCode(), stderr: strings.TrimSpace(stderr.String())}
	}
	if err != nil {
		return stdout.String(), fmt.Errorf("%s: %w", line, err)
	}
	return stdout.String(), nil
}

// rootHint adds advice to a permission error for a --system service.
func rootHint(o Options, err error) string {
	if !o.User && errors.Is(err, fs.ErrPermission) {
		return " (a --system service needs root: run with sudo, or use --user)"
	}
	return ""
}

// writeAtomic stores data at path with mode perm: written to a temporary
// file beside it, synced, renamed over path, and the folder synced, so
// systemd reads the old unit or the new one, never part of one.
func writeAtomic(path string, data []byte, perm fs.FileMode) (err error) {
	dir := filepath.Dir(path)
	f, err := os.CreateTemp(dir, "."+filepath.Base(path)+".tmp*")
	if err != nil {
		return err
	}
	defer func() {
		if err != nil {
			f.Close()
			os.Remove(f.Name())
		}
	}()
	if err := f.Chmod(perm); err != nil {
		return err
	}
	if _, err := f.Write(data); err != nil {
		return err
	}
	if err := f.Sync(); err != nil {
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	if err := os.Rename(f.Name(), path); err != nil {
		return err
	}
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}
