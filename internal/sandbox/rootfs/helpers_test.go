package rootfs

import (
	"archive/tar"
	"bytes"
	"context"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"syscall"
	"testing"
)

// requireTool returns the path of a system tool. A missing tool fails the
// test in CI (naming the Debian package to install) and skips it elsewhere.
func requireTool(t testing.TB, name, pkg string) string {
	t.Helper()
	p, err := lookSbin(name)
	if err == nil {
		return p
	}
	if os.Getenv("CI") == "true" {
		t.Fatalf("%s not found: install the %s package", name, pkg)
	}
	t.Skipf("%s not found (install the %s package)", name, pkg)
	return ""
}

// testCache is the persistent cache shared by test runs, so debootstrap runs
// once per machine.
func testCache(t testing.TB) string {
	t.Helper()
	dir := os.Getenv("DEN_TEST_CACHE")
	if dir == "" {
		if os.Geteuid() == 0 {
			dir = "/var/cache/den-test"
		} else {
			home, err := os.UserHomeDir()
			if err != nil {
				t.Fatal(err)
			}
			dir = filepath.Join(home, ".cache", "den-test")
		}
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	return dir
}

// progressLog collects progress reports.
type progressLog struct {
	mu  sync.Mutex
	all []Progress
}

func (l *progressLog) add(p Progress) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.all = append(l.all, p)
}

func (l *progressLog) has(stage Stage, substr string) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, p := range l.all {
		if p.Stage == stage && strings.Contains(p.Message, substr) {
			return true
		}
	}
	return false
}

func (l *progressLog) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	var b strings.Builder
	for _, p := range l.all {
		fmt.Fprintf(&b, "%s: %s %d/%d\n", p.Stage, p.Message, p.Done, p.Total)
	}
	return b.String()
}

// busyboxRoot provisions the busybox source into a fresh directory.
func busyboxRoot(t testing.TB) string {
	t.Helper()
	requireTool(t, "busybox", "busybox-static")
	dst := filepath.Join(t.TempDir(), "bb")
	if _, err := Provision(context.Background(), dst, Source{Kind: Busybox}, Options{}); err != nil {
		t.Fatal(err)
	}
	return dst
}

// tarDir archives dir with the system tar; flag selects compression ("",
// "-z", "-J", "--zstd").
func tarDir(t testing.TB, dir, out, flag string) {
	t.Helper()
	requireTool(t, "tar", "tar")
	args := []string{"--format=posix", "-C", dir, "-cf", out}
	if flag != "" {
		args = append(args, flag)
	}
	args = append(args, ".")
	if b, err := exec.Command("tar", args...).CombinedOutput(); err != nil {
		t.Fatalf("tar %v: %v\n%s", args, err, b)
	}
}

// tarEntry is one entry of a hand-built archive.
type tarEntry struct {
	name, link, body string
	typ              byte
	mode             int64
}

// writeTarFile builds an archive from entries, adding a /bin/sh so the result
// passes the rootfs check unless noShell is set.
func writeTarFile(t testing.TB, file string, entries []tarEntry) {
	t.Helper()
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, e := range entries {
		h := &tar.Header{Name: e.name, Linkname: e.link, Typeflag: e.typ, Mode: e.mode, Size: int64(len(e.body))}
		if h.Mode == 0 {
			h.Mode = 0o644
		}
		if e.typ != tar.TypeReg {
			h.Size = 0
		}
		if err := tw.WriteHeader(h); err != nil {
			t.Fatal(err)
		}
		if h.Size > 0 {
			if _, err := tw.Write([]byte(e.body)); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(file, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
}

// listing describes a tree: path, type, mode, owner, size, mtime, link target.
func listing(t testing.TB, dir string, only map[string]bool) string {
	t.Helper()
	var lines []string
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		if only != nil && !only[rel] {
			return nil
		}
		fi, err := d.Info()
		if err != nil {
			return err
		}
		st := fi.Sys().(*syscall.Stat_t)
		line := fmt.Sprintf("%s %v %d:%d", rel, fi.Mode(), st.Uid, st.Gid)
		switch {
		case fi.Mode().IsRegular():
			line += fmt.Sprintf(" size=%d nlink=%d mtime=%d", fi.Size(), st.Nlink, fi.ModTime().UnixNano())
		case fi.Mode()&fs.ModeSymlink != 0:
			target, _ := os.Readlink(p)
			line += " -> " + target
		case fi.IsDir() && rel != ".":
			line += fmt.Sprintf(" mtime=%d", fi.ModTime().UnixNano())
		}
		lines = append(lines, line)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	sort.Strings(lines)
	return strings.Join(lines, "\n")
}

// names lists the relative paths under dir.
func names(t testing.TB, dir string) map[string]bool {
	t.Helper()
	m := map[string]bool{}
	filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		rel, _ := filepath.Rel(dir, p)
		m[rel] = true
		return nil
	})
	return m
}

// assertClean checks that dst does not exist and that no temporary sibling
// was left next to it.
func assertClean(t testing.TB, dst string) {
	t.Helper()
	if _, err := os.Lstat(dst); err == nil {
		t.Errorf("%s exists after a failed provision", dst)
	}
	ents, _ := os.ReadDir(filepath.Dir(dst))
	for _, e := range ents {
		if strings.Contains(e.Name(), ".tmp-") {
			t.Errorf("temporary %s left in %s", e.Name(), filepath.Dir(dst))
		}
	}
}

func readFile(t testing.TB, p string) string {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// bwrap runs script in the rootfs with bubblewrap and returns its output.
func bwrap(t testing.TB, root string, extra []string, script string) string {
	t.Helper()
	bin := requireTool(t, "bwrap", "bubblewrap")
	args := append([]string{"--bind", root, "/", "--proc", "/proc", "--dev", "/dev"}, extra...)
	args = append(args, "/bin/sh", "-c", script)
	out, err := exec.Command(bin, args...).CombinedOutput()
	if err != nil {
		t.Fatalf("bwrap %v: %v\n%s", args, err, out)
	}
	return string(out)
}

func execCmd(name string, args ...string) ([]byte, error) {
	return exec.Command(name, args...).CombinedOutput()
}
