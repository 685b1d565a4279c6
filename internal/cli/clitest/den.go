package clitest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// Bounds on every wait, so that a hung den fails the test instead of
// hanging it. They are limits, never expectations.
const (
	// RunBound is the longest one den command may take before the test
	// kills it and fails.
	RunBound = 2 * time.Minute
	// PollInterval is the pause between two looks at /proc.
	PollInterval = 50 * time.Millisecond
	// MaxPolls bounds a wait for processes to appear or go: about 30s.
	MaxPolls = 600
)

// Build compiles ./cmd/den of the module the current directory belongs
// to (found with `go env GOMOD`) into dir and returns the binary's path.
func Build(dir string) (string, error) {
	out, err := exec.Command("go", "env", "GOMOD").Output()
	if err != nil {
		return "", fmt.Errorf("go env GOMOD: %w", err)
	}
	mod := strings.TrimSpace(string(out))
	if mod == "" || mod == os.DevNull {
		return "", errors.New("go env GOMOD: not inside a module")
	}
	bin := filepath.Join(dir, "den")
	cmd := exec.Command("go", "build", "-o", bin, "./cmd/den")
	cmd.Dir = filepath.Dir(mod)
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("go build ./cmd/den: %w\n%s", err, out)
	}
	return bin, nil
}

// Den is one installation of den for one test: the binary, and a data
// dir and a config dir of its own.
type Den struct {
	t          testing.TB
	Bin        string
	Home       string // DEN_HOME
	ConfigHome string // XDG_CONFIG_HOME; holds no config unless a test writes one
}

// New returns a Den running bin on fresh temporary folders.
func New(t testing.TB, bin string) *Den {
	t.Helper()
	d := &Den{t: t, Bin: bin, Home: t.TempDir(), ConfigHome: t.TempDir()}
	// Runs before t.TempDir removes the folder: a rootfs may hold
	// directories without write permission.
	t.Cleanup(func() { makeWritable(d.Home) })
	return d
}

// AgentDir is the host folder of an agent under the data dir.
func (d *Den) AgentDir(agent string) string {
	return filepath.Join(d.Home, "agents", agent)
}

// Env is den's environment: the test's own, with the data and config
// locations replaced.
func (d *Den) Env() []string {
	var env []string
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		switch k {
		case "DEN_HOME", "XDG_CONFIG_HOME", "XDG_DATA_HOME":
			continue
		}
		env = append(env, kv)
	}
	return append(env, "DEN_HOME="+d.Home, "XDG_CONFIG_HOME="+d.ConfigHome)
}

// Command returns den with args, not started, reading /dev/null.
func (d *Den) Command(args ...string) *exec.Cmd {
	cmd := exec.Command(d.Bin, args...)
	cmd.Env = d.Env()
	return cmd
}

// Result is what one den command left.
type Result struct {
	Stdout, Stderr string
	Code           int
}

// String describes the result for failure messages.
func (r Result) String() string {
	return fmt.Sprintf("exit %d\nstdout:\n%s\nstderr:\n%s", r.Code, r.Stdout, r.Stderr)
}

// Run runs den with args and standard input /dev/null, and fails the
// test if den cannot be started or runs longer than RunBound.
func (d *Den) Run(args ...string) Result {
	d.t.Helper()
	return d.RunInput(nil, args...)
}

// RunInput is Run with standard input read from stdin (nil: /dev/null).
func (d *Den) RunInput(stdin io.Reader, args ...string) Result {
	d.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), RunBound)
	defer cancel()
	cmd := exec.CommandContext(ctx, d.Bin, args...)
	cmd.Env = d.Env()
	cmd.Stdin = stdin
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	// den has exited but something it started still holds its output.
	cmd.WaitDelay = 10 * time.Second
	err := cmd.Run()
	r := Result{Stdout: stdout.String(), Stderr: stderr.String(), Code: -1}
	if cmd.ProcessState != nil {
		r.Code = cmd.ProcessState.ExitCode()
	}
	var exit *exec.ExitError
	switch {
	case ctx.Err() != nil:
		d.t.Fatalf("den %s: still running after %v, killed\n%v", quote(args), RunBound, r)
	case errors.Is(err, exec.ErrWaitDelay):
		d.t.Fatalf("den %s: exited but left a process holding its output open\n%v", quote(args), r)
	case err != nil && !errors.As(err, &exit):
		d.t.Fatalf("den %s: %v", quote(args), err)
	}
	return r
}

// MustRun runs den and fails the test unless it exits 0.
func (d *Den) MustRun(args ...string) Result {
	d.t.Helper()
	r := d.Run(args...)
	if r.Code != 0 {
		d.t.Fatalf("den %s: want exit 0, got %v", quote(args), r)
	}
	return r
}

// WriteConfig writes a config file in the test's config dir and returns
// its path, for --config.
func (d *Den) WriteConfig(name, text string) string {
	d.t.Helper()
	p := filepath.Join(d.ConfigHome, name)
	if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
		d.t.Fatal(err)
	}
	return p
}

func quote(args []string) string {
	q := make([]string, len(args))
	for i, a := range args {
		q[i] = strconv.Quote(a)
	}
	return strings.Join(q, " ")
}

func makeWritable(dir string) {
	filepath.WalkDir(dir, func(p string, e fs.DirEntry, err error) error {
		if err == nil && e.IsDir() {
			os.Chmod(p, 0o700)
		}
		return nil
	})
}

// Procs lists the running host processes (zombies excluded) whose
// argument vector is exactly argv.
func Procs(argv ...string) []int {
	want := strings.Join(argv, "\x00") + "\x00"
	ents, _ := os.ReadDir("/proc")
	var out []int
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err != nil || string(b) != want || zombie(pid) {
			continue
		}
		out = append(out, pid)
	}
	return out
}

func zombie(pid int) bool {
	b, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "stat"))
	if err != nil {
		return true // gone
	}
	s := string(b)
	i := strings.LastIndex(s, ") ")
	return i >= 0 && i+2 < len(s) && s[i+2] == 'Z'
}

// WaitProcs polls, at most MaxPolls times, until at least n processes
// run argv, and returns the last list found.
func WaitProcs(n int, argv ...string) []int {
	var pids []int
	for range MaxPolls {
		if pids = Procs(argv...); len(pids) >= n {
			return pids
		}
		time.Sleep(PollInterval)
	}
	return pids
}

// WaitNoProcs polls, at most MaxPolls times, until no process runs
// argv, and returns what is still running.
func WaitNoProcs(argv ...string) []int {
	var pids []int
	for range MaxPolls {
		if pids = Procs(argv...); len(pids) == 0 {
			return nil
		}
		time.Sleep(PollInterval)
	}
	return pids
}
