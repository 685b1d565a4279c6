package clitest

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/google/go-cmp/cmp"

	"den.dev/den/internal/sandbox/sandboxtest"
)

func TestExecExitCodesAndStreams(t *testing.T) {
	t.Parallel()
	d := newDen(t)
	provision(t, d, "default")

	r := d.Run("exec", "--", "sh", "-c", "echo out; echo err >&2; exit 7")
	if r.Code != 7 || r.Stdout != "out\n" || r.Stderr != "err\n" {
		t.Errorf("sh -c 'echo out; echo err >&2; exit 7': want exit 7, stdout \"out\\n\", err on stderr only; got %v", r)
	}
	if r := d.Run("exec", "--", "true"); r.Code != 0 {
		t.Errorf("true: want exit 0, got %v", r)
	}
	if r := d.Run("exec", "--", "no-such-command-here"); r.Code != 127 || !strings.Contains(r.Stderr, "no-such-command-here") {
		t.Errorf("a missing command: want exit 127 naming it on stderr, got %v", r)
	}
}

func TestExecArgumentsPassLiterally(t *testing.T) {
	t.Parallel()
	d := newDen(t)
	provision(t, d, "default")

	r := d.Run("exec", "--", "printf", "%s|", "a b", "$HOME", "it's", `"q"`, "`id`", "*", "")
	if diff := cmp.Diff("a b|$HOME|it's|\"q\"|`id`|*||", r.Stdout); r.Code != 0 || diff != "" {
		t.Errorf("printf: exit %d, stdout (-want +got):\n%s\nstderr: %s", r.Code, diff, r.Stderr)
	}
}

func TestExecStdin(t *testing.T) {
	t.Parallel()
	d := newDen(t)
	provision(t, d, "default")

	r := d.RunInput(strings.NewReader("piped\nsecond line\n"), "exec", "--", "cat")
	if r.Code != 0 || r.Stdout != "piped\nsecond line\n" {
		t.Errorf("cat from a pipe: want the piped lines and exit 0, got %v", r)
	}

	devNull, err := os.Open(os.DevNull)
	if err != nil {
		t.Fatal(err)
	}
	defer devNull.Close()
	// Bounded by RunBound: a cat that waits for input fails the test.
	r = d.RunInput(devNull, "exec", "--", "cat")
	if r.Code != 0 || r.Stdout != "" {
		t.Errorf("cat from /dev/null: want no output and exit 0, got %v", r)
	}
}

func TestExecTimeout(t *testing.T) {
	t.Parallel()
	d := newDen(t)
	provision(t, d, "default")

	arg := uniqueSleep(t, 30)
	killOnCleanup(t, "sleep", arg)
	r := d.Run("exec", "--timeout", "500ms", "--", "sh", "-c", "sleep "+arg)
	if r.Code != 124 || !strings.Contains(r.Stderr, "timed out") {
		t.Errorf("--timeout 500ms, sleep %s: want exit 124 and \"timed out\" on stderr, got %v", arg, r)
	}
	if left := WaitNoProcs("sleep", arg); len(left) > 0 {
		t.Errorf("the timed-out sleep still runs: %v", left)
	}

	host := t.TempDir()
	for _, timeout := range []string{"-1s", "1000h"} {
		t.Run(timeout, func(t *testing.T) {
			r := d.Run("exec", "--timeout", timeout, "--mount", host+":/mnt/w", "--",
				"sh", "-c", "touch /mnt/w/ran")
			if r.Code != 2 || !strings.Contains(r.Stderr, "--timeout") {
				t.Errorf("want exit 2 and a message about --timeout, got %v", r)
			}
			if _, err := os.Stat(filepath.Join(host, "ran")); err == nil {
				t.Errorf("the command ran despite the refused timeout")
			}
		})
	}
}

func TestExecNetworkOff(t *testing.T) {
	t.Parallel()
	d := newDen(t)
	provision(t, d, "default")

	r := d.Run("exec", "--network", "off", "--", "cat", "/proc/net/dev")
	if r.Code != 0 {
		t.Fatalf("cat /proc/net/dev: %v", r)
	}
	// Two header lines, then "  IFACE: counters..." per interface.
	var ifaces []string
	for _, line := range strings.Split(r.Stdout, "\n") {
		name, _, ok := strings.Cut(line, ":")
		if ok && !strings.Contains(name, "|") {
			ifaces = append(ifaces, strings.TrimSpace(name))
		}
	}
	if diff := cmp.Diff([]string{"lo"}, ifaces); diff != "" {
		t.Errorf("interfaces with --network off (-want +got):\n%s\n%s", diff, r.Stdout)
	}
}

func TestExecMounts(t *testing.T) {
	t.Parallel()
	d := newDen(t)
	provision(t, d, "default")

	t.Run("read-write", func(t *testing.T) {
		host := sandboxtest.UserFolder(t)
		r := d.Run("exec", "--mount", host+":/mnt/x", "--", "sh", "-c", "echo inside > /mnt/x/new")
		if r.Code != 0 {
			t.Fatalf("write to a read-write mount: %v", r)
		}
		got, err := os.ReadFile(filepath.Join(host, "new"))
		if err != nil || string(got) != "inside\n" {
			t.Errorf("host file written inside: got %q, %v; want \"inside\\n\"", got, err)
		}
		// It belongs to the folder's owner, not to the computer's ids.
		if fi, err := os.Lstat(filepath.Join(host, "new")); err == nil {
			if uid := fi.Sys().(*syscall.Stat_t).Uid; uid != sandboxtest.FolderOwner() {
				t.Errorf("the file the computer wrote belongs to host uid %d, not the folder's owner %d", uid, sandboxtest.FolderOwner())
			}
		}
	})

	t.Run("folder of host root", func(t *testing.T) {
		if os.Geteuid() != 0 {
			t.Skip("den as root only")
		}
		host := t.TempDir()
		os.Chmod(host, 0o755)
		r := d.Run("exec", "--mount", host+":/mnt/r", "--", "sh", "-c", "echo inside > /mnt/r/new")
		if r.Code == 0 {
			t.Errorf("the computer wrote into a folder only host root may write: %v", r)
		}
		if !strings.Contains(r.Stderr, "belongs to host root") {
			t.Errorf("no warning that the folder belongs to host root: %v", r)
		}
	})

	t.Run("read-only", func(t *testing.T) {
		host := sandboxtest.UserFolder(t)
		if err := os.WriteFile(filepath.Join(host, "f"), []byte("host\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		sandboxtest.GiveToUser(t, filepath.Join(host, "f"))
		r := d.Run("exec", "--mount", host+":/mnt/y:ro", "--", "sh", "-c", "cat /mnt/y/f; echo inside > /mnt/y/f")
		if r.Code == 0 || r.Stdout != "host\n" || !strings.Contains(r.Stderr, "Read-only file system") {
			t.Errorf("write to a read-only mount: want the host file readable, the write failing with \"Read-only file system\"; got %v", r)
		}
		r = d.Run("exec", "--mount", host+":/mnt/y:ro", "--", "touch", "/mnt/y/g")
		if r.Code == 0 || !strings.Contains(r.Stderr, "Read-only file system") {
			t.Errorf("create in a read-only mount: want failure with \"Read-only file system\", got %v", r)
		}
		ents, _ := os.ReadDir(host)
		got, _ := os.ReadFile(filepath.Join(host, "f"))
		if len(ents) != 1 || string(got) != "host\n" {
			t.Errorf("host dir changed through a read-only mount: %d entries, f = %q", len(ents), got)
		}
	})

	t.Run("missing host path", func(t *testing.T) {
		missing := filepath.Join(t.TempDir(), "no-such-dir")
		r := d.Run("exec", "--mount", missing+":/mnt/z", "--", "true")
		if r.Code != 2 || !strings.Contains(r.Stderr, missing) {
			t.Errorf("want exit 2 and a message naming %s, got %v", missing, r)
		}
	})

	host := t.TempDir()
	for _, bad := range []string{
		"nocolon",
		host + ":/mnt/x:zz",
		host + ":/mnt/x:ro:extra",
		host + ":relative",
		host + ":/mnt/../etc",
		"relative:/mnt/x",
		host + ":/workspace",
		host + ":/",
	} {
		t.Run("syntax "+bad, func(t *testing.T) {
			r := d.Run("exec", "--mount", bad, "--", "true")
			if r.Code != 2 || !strings.Contains(r.Stderr, "mount") {
				t.Errorf("--mount %q: want exit 2 and a message about the mount, got %v", bad, r)
			}
		})
	}
}
