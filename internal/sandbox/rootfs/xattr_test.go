package rootfs_test

import (
	"archive/tar"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"den.dev/den/internal/sandbox/rootfs"
	"den.dev/den/internal/sandbox/sandboxtest"
)

// TestTreeKeepsXattrs: after KeepXattrs a Tree gives folders, files
// and (as root, trusted.*) symbolic links the extended attributes of
// their headers, even where the entry's mode then forbids writing; one
// the system refuses (user.* on a symbolic link or a FIFO) is reported
// and the entry made without it. Without KeepXattrs, none is set.
func TestTreeKeepsXattrs(t *testing.T) {
	dir := t.TempDir()
	sandboxtest.NeedUserXattrs(t, dir)
	pax := func(kv ...string) map[string]string {
		m := map[string]string{"SCHILY.acl.access": "ignored"}
		for i := 0; i < len(kv); i += 2 {
			m["SCHILY.xattr."+kv[i]] = kv[i+1]
		}
		return m
	}
	now := time.Now()
	entries := []*tar.Header{
		{Name: "d", Typeflag: tar.TypeDir, Mode: 0o555, ModTime: now, PAXRecords: pax("user.den_test", "dir")},
		{Name: "d/f", Typeflag: tar.TypeReg, Mode: 0o444, ModTime: now, PAXRecords: pax("user.den_test", "xyz", "user.bin", "\x00\xff\x01")},
		{Name: "l", Typeflag: tar.TypeSymlink, Linkname: "d/f", ModTime: now, PAXRecords: pax("user.den_test", "on a link")},
		{Name: "p", Typeflag: tar.TypeFifo, Mode: 0o600, ModTime: now, PAXRecords: pax("user.den_test", "on a FIFO")},
	}
	if os.Geteuid() == 0 {
		entries = append(entries, &tar.Header{Name: "l2", Typeflag: tar.TypeSymlink, Linkname: "d/f", ModTime: now, PAXRecords: pax("trusted.den_test", "root's")})
	}
	var refused []string
	tr, err := rootfs.OpenTree(dir)
	if err != nil {
		t.Fatal(err)
	}
	tr.KeepXattrs(func(name string, err error) { refused = append(refused, name+": "+err.Error()) })
	for _, h := range entries {
		if err := tr.Add(h, strings.NewReader("")); err != nil {
			t.Fatalf("%s: %v", h.Name, err)
		}
	}
	if err := tr.Finish(); err != nil {
		t.Fatal(err)
	}
	tr.Close()
	get := func(p, name string) string {
		b := make([]byte, 256)
		n, err := unix.Lgetxattr(filepath.Join(dir, p), name, b)
		if err != nil {
			return "(" + err.Error() + ")"
		}
		return string(b[:n])
	}
	want := []struct{ path, name, want string }{
		{"d", "user.den_test", "dir"},
		{"d/f", "user.den_test", "xyz"},
		{"d/f", "user.bin", "\x00\xff\x01"},
	}
	if os.Geteuid() == 0 {
		want = append(want, struct{ path, name, want string }{"l2", "trusted.den_test", "root's"})
	}
	for _, c := range want {
		if got := get(c.path, c.name); got != c.want {
			t.Errorf("%s %s = %q, want %q", c.path, c.name, got, c.want)
		}
	}
	eperm := "user.den_test: " + unix.EPERM.Error()
	if !slices.Equal(refused, []string{eperm, eperm}) {
		t.Errorf("refused %q, want user.den_test on the link and on the FIFO, %s", refused, unix.EPERM)
	}
	if fi, err := os.Stat(filepath.Join(dir, "d/f")); err != nil || fi.Mode().Perm() != 0o444 {
		t.Errorf("d/f: %v %v", fi, err)
	}

	// Without KeepXattrs the records are ignored.
	plain := t.TempDir()
	tr, err = rootfs.OpenTree(plain)
	if err != nil {
		t.Fatal(err)
	}
	for _, h := range entries[:2] {
		h.Mode = 0o755
		if err := tr.Add(h, strings.NewReader("")); err != nil {
			t.Fatal(err)
		}
	}
	tr.Finish()
	tr.Close()
	if names := listXattrs(t, filepath.Join(plain, "d/f")); slices.Contains(names, "user.den_test") {
		t.Errorf("without KeepXattrs: %q", names)
	}
}

func listXattrs(t *testing.T, p string) []string {
	t.Helper()
	b := make([]byte, 4096)
	n, err := unix.Llistxattr(p, b)
	if err != nil {
		t.Fatal(err)
	}
	return strings.Split(strings.TrimRight(string(b[:n]), "\x00"), "\x00")
}
