package hostfs

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// The ids tests give files and identities: nobody, and a uid and a
// group no account on the machine is likely to have.
const (
	nobody   = 65534
	otherID  = 12345
	otherGrp = 4242
)

const secret = "TOP SECRET: the host's own file"

func isRoot() bool { return os.Geteuid() == 0 }

func needRoot(t testing.TB) {
	t.Helper()
	if !isRoot() {
		t.Skip("needs root (den as root, changing owners and credentials)")
	}
}

// openTree opens a fresh folder as a Dir, closed when the test ends.
func openTree(t testing.TB) (*Dir, string) {
	t.Helper()
	root := t.TempDir()
	d, err := OpenDir(root)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Close() })
	return d, root
}

// outside makes a folder outside any Dir with secret.txt in it, and
// returns the folder.
func outside(t testing.TB) string {
	t.Helper()
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "secret.txt"), secret, 0o644)
	return dir
}

// writeFile writes content to path (making its folders), with mode.
func writeFile(t testing.TB, path, content string, mode os.FileMode) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), mode); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(path, mode); err != nil {
		t.Fatal(err)
	}
}

func chown(t testing.TB, path string, uid, gid int) {
	t.Helper()
	if err := os.Lchown(path, uid, gid); err != nil {
		t.Fatal(err)
	}
}

func symlink(t testing.TB, target, path string) {
	t.Helper()
	if err := os.Symlink(target, path); err != nil {
		t.Fatal(err)
	}
}

// promptly runs fn, and fails the test if it has not returned within a
// generous deadline: fn must not block (opening a named pipe would).
// It is a hang detector, not a timing: a loaded machine meets it.
func promptly(t *testing.T, what string, fn func()) {
	t.Helper()
	done := make(chan struct{})
	go func() {
		defer close(done)
		fn()
	}()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatalf("%s did not return within 10 s: it blocks", what)
	}
}

// unchanged fails unless the file at path still holds want.
func unchanged(t *testing.T, path, want string) {
	t.Helper()
	got, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("read %s: %v", path, err)
	}
	if string(got) != want {
		t.Errorf("%s changed: it holds %q, want %q", path, got, want)
	}
}

// noTemps fails if WriteFile left a temporary file in dir.
func noTemps(t *testing.T, dir string) {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), ".den-tmp-") {
			t.Errorf("temporary file %s left in %s", e.Name(), dir)
		}
	}
}

// resolvers are both ways a path is resolved: openat2, and the walk
// for kernels without it.
func resolvers() []struct {
	name    string
	resolve resolver
} {
	return []struct {
		name    string
		resolve resolver
	}{
		{"openat2", beneath},
		{"walk", walk},
	}
}
