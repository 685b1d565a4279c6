package hostfs

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"
)

// withUmask runs the rest of the test with umask mask, so that a mode
// that comes out exact did not go through it.
func withUmask(t *testing.T, mask int) {
	old := unix.Umask(mask)
	t.Cleanup(func() { unix.Umask(old) })
}

// lstat returns path's mode and owner, not following a link.
func lstat(t *testing.T, path string) (os.FileMode, int, int) {
	t.Helper()
	fi, err := os.Lstat(path)
	if err != nil {
		t.Fatal(err)
	}
	st := fi.Sys().(*syscall.Stat_t)
	return fi.Mode(), int(st.Uid), int(st.Gid)
}

// TestCreateRefuses checks that Create never reuses a name, whatever is
// there, and never follows a link there.
func TestCreateRefuses(t *testing.T) {
	tests := []struct {
		name  string
		setup func(t *testing.T, root, out string)
		check func(t *testing.T, root, out string)
	}{
		{"a regular file",
			func(t *testing.T, root, _ string) { writeFile(t, filepath.Join(root, "x"), "old", 0o644) },
			func(t *testing.T, root, _ string) { unchanged(t, filepath.Join(root, "x"), "old") }},
		{"a dangling symlink",
			func(t *testing.T, root, out string) { symlink(t, filepath.Join(out, "new"), filepath.Join(root, "x")) },
			func(t *testing.T, _, out string) {
				if _, err := os.Lstat(filepath.Join(out, "new")); !errors.Is(err, fs.ErrNotExist) {
					t.Errorf("the dangling link's target was made: %v", err)
				}
			}},
		{"a symlink to a file outside",
			func(t *testing.T, root, out string) {
				symlink(t, filepath.Join(out, "secret.txt"), filepath.Join(root, "x"))
			},
			func(t *testing.T, _, out string) {
				unchanged(t, filepath.Join(out, "secret.txt"), secret)
				if mode, _, _ := lstat(t, filepath.Join(out, "secret.txt")); mode != 0o644 {
					t.Errorf("the link's target's mode is %v, want 0644", mode)
				}
			}},
		{"a folder",
			func(t *testing.T, root, _ string) { os.Mkdir(filepath.Join(root, "x"), 0o755) }, nil},
		{"a named pipe",
			func(t *testing.T, root, _ string) { unix.Mkfifo(filepath.Join(root, "x"), 0o644) }, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d, root := openTree(t)
			out := outside(t)
			tt.setup(t, root, out)
			var err error
			promptly(t, "Create", func() {
				var f *os.File
				if f, err = d.Create("x", 0o600, nil); err == nil {
					f.Close()
				}
			})
			if !errors.Is(err, ErrExists) {
				t.Fatalf("Create over %s: %v, want ErrExists", tt.name, err)
			}
			if tt.check != nil {
				tt.check(t, root, out)
			}
		})
	}
}

func TestCreateNames(t *testing.T) {
	d, _ := openTree(t)
	for name, want := range map[string]error{
		"":      ErrInvalidPath,
		".":     ErrInvalidPath,
		"..":    ErrEscapes,
		"a/b":   ErrInvalidPath,
		"/x":    ErrInvalidPath,
		"x/":    ErrInvalidPath,
		"x\x00": ErrInvalidPath,
	} {
		if _, err := d.Create(name, 0o644, nil); !errors.Is(err, want) {
			t.Errorf("Create(%q): %v, want %v", name, err, want)
		}
		if err := d.WriteFile(name, nil, 0o644, nil, false); !errors.Is(err, want) {
			t.Errorf("WriteFile(%q): %v, want %v", name, err, want)
		}
		if _, _, err := d.Mkdir(name, 0o755, nil); !errors.Is(err, want) {
			t.Errorf("Mkdir(%q): %v, want %v", name, err, want)
		}
	}
}

// TestCreateMode checks that the mode is exactly perm, past a umask of
// 077, setuid bit included.
func TestCreateMode(t *testing.T) {
	withUmask(t, 0o077)
	d, root := openTree(t)
	for name, perm := range map[string]os.FileMode{
		"plain":  0o644,
		"open":   0o666,
		"setuid": 0o755 | os.ModeSetuid,
	} {
		f, err := d.Create(name, perm, nil)
		if err != nil {
			t.Fatal(err)
		}
		f.Close()
		if mode, _, _ := lstat(t, filepath.Join(root, name)); mode != perm {
			t.Errorf("Create %s: mode %v, want %v", name, mode, perm)
		}
		// WriteFile's mode survives the write (which, without
		// CAP_FSETID, clears setuid).
		if err := d.WriteFile(name+".w", []byte("x"), perm, nil, false); err != nil {
			t.Fatal(err)
		}
		if mode, _, _ := lstat(t, filepath.Join(root, name+".w")); mode != perm {
			t.Errorf("WriteFile %s: mode %v, want %v", name, mode, perm)
		}
		unchanged(t, filepath.Join(root, name+".w"), "x")
	}
}

// TestCreateOwner checks, as root, that a new file goes to its owner,
// with its mode exact after the chown (which clears setuid).
func TestCreateOwner(t *testing.T) {
	needRoot(t)
	withUmask(t, 0o077)
	d, root := openTree(t)
	perm := 0o750 | os.ModeSetuid
	f, err := d.Create("o", perm, &Owner{UID: otherID, GID: otherID})
	if err != nil {
		t.Fatal(err)
	}
	f.Close()
	mode, uid, gid := lstat(t, filepath.Join(root, "o"))
	if mode != perm || uid != otherID || gid != otherID {
		t.Errorf("mode %v, owner %d:%d; want %v, %d:%d", mode, uid, gid, perm, otherID, otherID)
	}
}

// TestCreateOwnerFails checks, as an ordinary user (who cannot give a
// file away), that a Create that fails leaves no file behind; and that
// an owner who is den needs no chown.
func TestCreateOwnerFails(t *testing.T) {
	if isRoot() {
		t.Skip("needs an ordinary user: root can give files away")
	}
	d, root := openTree(t)
	if _, err := d.Create("x", 0o644, &Owner{UID: otherID, GID: otherID}); !errors.Is(err, fs.ErrPermission) {
		t.Fatalf("Create for another owner as an ordinary user: %v, want a permission error", err)
	}
	if _, err := os.Lstat(filepath.Join(root, "x")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("the failed Create left its file: %v", err)
	}
	if err := d.WriteFile("y", []byte("y"), 0o644, &Owner{UID: otherID, GID: otherID}, false); !errors.Is(err, fs.ErrPermission) {
		t.Fatalf("WriteFile for another owner as an ordinary user: %v, want a permission error", err)
	}
	noTemps(t, root)
	f, err := d.Create("z", 0o644, &Owner{UID: os.Geteuid(), GID: os.Getegid()})
	if err != nil {
		t.Fatalf("Create for den itself: %v", err)
	}
	f.Close()
}

// TestWriteFile checks that WriteFile replaces a planted link rather
// than follow it, refuses to replace with noReplace, and leaves no
// temporary file when it fails. (Long for its table.)
func TestWriteFile(t *testing.T) {
	withUmask(t, 0o077)
	tests := []struct {
		name      string
		setup     func(t *testing.T, root, out string)
		noReplace bool
		want      error // nil: written; ErrExists; or any error (errAny)
		check     func(t *testing.T, root, out string)
	}{
		{name: "new file"},
		{name: "over a file",
			setup: func(t *testing.T, root, _ string) { writeFile(t, filepath.Join(root, "x"), "old", 0o600) }},
		{name: "over a symlink to a file outside",
			setup: func(t *testing.T, root, out string) {
				symlink(t, filepath.Join(out, "secret.txt"), filepath.Join(root, "x"))
			},
			check: func(t *testing.T, _, out string) { unchanged(t, filepath.Join(out, "secret.txt"), secret) }},
		{name: "over a dangling symlink",
			setup: func(t *testing.T, root, out string) { symlink(t, filepath.Join(out, "new"), filepath.Join(root, "x")) },
			check: func(t *testing.T, _, out string) {
				if _, err := os.Lstat(filepath.Join(out, "new")); !errors.Is(err, fs.ErrNotExist) {
					t.Errorf("the dangling link's target was made: %v", err)
				}
			}},
		{name: "noReplace, new file", noReplace: true},
		{name: "noReplace over a file", noReplace: true, want: ErrExists,
			setup: func(t *testing.T, root, _ string) { writeFile(t, filepath.Join(root, "x"), "old", 0o600) },
			check: func(t *testing.T, root, _ string) { unchanged(t, filepath.Join(root, "x"), "old") }},
		{name: "noReplace over a symlink to a file outside", noReplace: true, want: ErrExists,
			setup: func(t *testing.T, root, out string) {
				symlink(t, filepath.Join(out, "secret.txt"), filepath.Join(root, "x"))
			},
			check: func(t *testing.T, root, out string) {
				unchanged(t, filepath.Join(out, "secret.txt"), secret)
				if mode, _, _ := lstat(t, filepath.Join(root, "x")); mode&os.ModeSymlink == 0 {
					t.Errorf("the link was replaced: mode %v", mode)
				}
			}},
		{name: "over a folder (the rename fails)", want: errAny,
			setup: func(t *testing.T, root, _ string) { writeFile(t, filepath.Join(root, "x/keep"), "kept", 0o644) },
			check: func(t *testing.T, root, _ string) { unchanged(t, filepath.Join(root, "x/keep"), "kept") }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d, root := openTree(t)
			out := outside(t)
			if tt.setup != nil {
				tt.setup(t, root, out)
			}
			err := d.WriteFile("x", []byte("new"), 0o640, nil, tt.noReplace)
			switch {
			case tt.want == nil && err != nil:
				t.Fatalf("WriteFile: %v", err)
			case tt.want == errAny && err == nil:
				t.Fatal("WriteFile succeeded; want an error")
			case tt.want != nil && tt.want != errAny && !errors.Is(err, tt.want):
				t.Fatalf("WriteFile: %v, want %v", err, tt.want)
			}
			if tt.want == nil {
				unchanged(t, filepath.Join(root, "x"), "new")
				if mode, _, _ := lstat(t, filepath.Join(root, "x")); mode != 0o640 {
					t.Errorf("mode %v, want 0640", mode)
				}
			}
			if tt.check != nil {
				tt.check(t, root, out)
			}
			noTemps(t, root)
		})
	}
}

// errAny in a table stands for "some error".
var errAny = errors.New("any error")

// TestWriteFileReadOnly checks, as an ordinary user (root writes
// anywhere), that a failed WriteFile in a read-only folder leaves
// nothing behind.
func TestWriteFileReadOnly(t *testing.T) {
	if isRoot() {
		t.Skip("needs an ordinary user: root writes in a read-only folder")
	}
	d, root := openTree(t)
	if err := os.Chmod(root, 0o555); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.Chmod(root, 0o755) })
	if err := d.WriteFile("x", []byte("new"), 0o644, nil, false); !errors.Is(err, fs.ErrPermission) {
		t.Fatalf("WriteFile in a read-only folder: %v, want a permission error", err)
	}
	noTemps(t, root)
}

// TestWriteFileOwner checks, as root, that the written file goes to
// its owner.
func TestWriteFileOwner(t *testing.T) {
	needRoot(t)
	d, root := openTree(t)
	if err := d.WriteFile("x", []byte("new"), 0o600, &Owner{UID: otherID, GID: otherGrp}, false); err != nil {
		t.Fatal(err)
	}
	if mode, uid, gid := lstat(t, filepath.Join(root, "x")); mode != 0o600 || uid != otherID || gid != otherGrp {
		t.Errorf("mode %v, owner %d:%d; want 0600, %d:%d", mode, uid, gid, otherID, otherGrp)
	}
}

// TestMkdir checks that Mkdir makes a folder with an exact mode, opens
// an existing real folder, and refuses a link or a file in its place.
func TestMkdir(t *testing.T) {
	withUmask(t, 0o077)
	d, root := openTree(t)
	out := outside(t)

	sub, created, err := d.Mkdir("new", 0o751, nil)
	if err != nil || !created {
		t.Fatalf("Mkdir new = %v, %v", created, err)
	}
	defer sub.Close()
	if mode, _, _ := lstat(t, filepath.Join(root, "new")); mode != os.ModeDir|0o751 {
		t.Errorf("mode %v, want drwxr-x--x", mode)
	}
	if sub.Path() != filepath.Join(root, "new") || sub.Name() != filepath.Join(root, "new") {
		t.Errorf("Path, Name = %q, %q", sub.Path(), sub.Name())
	}
	if err := sub.WriteFile("f", []byte("in new"), 0o644, nil, true); err != nil {
		t.Fatal(err)
	}
	unchanged(t, filepath.Join(root, "new/f"), "in new")

	again, created, err := d.Mkdir("new", 0o700, nil)
	if err != nil || created {
		t.Fatalf("Mkdir of an existing folder = %v, %v; want it opened, not made", created, err)
	}
	defer again.Close()
	if got, err := again.ReadFile("f", 100); err != nil || string(got) != "in new" {
		t.Errorf("ReadFile in the existing folder = %q, %v", got, err)
	}
	if mode, _, _ := lstat(t, filepath.Join(root, "new")); mode != os.ModeDir|0o751 {
		t.Errorf("an existing folder's mode changed to %v", mode)
	}

	symlink(t, out, filepath.Join(root, "lo"))
	symlink(t, filepath.Join(out, "none"), filepath.Join(root, "dangling"))
	writeFile(t, filepath.Join(root, "file"), "x", 0o644)
	for name, want := range map[string]error{"lo": ErrSymlink, "dangling": ErrSymlink, "file": ErrNotDir} {
		if sub, _, err := d.Mkdir(name, 0o755, nil); !errors.Is(err, want) {
			if sub != nil {
				sub.Close()
			}
			t.Errorf("Mkdir(%q): %v, want %v", name, err, want)
		}
	}
	entries, err := os.ReadDir(out)
	if err != nil || len(entries) != 1 {
		t.Errorf("the folder outside changed: %v, %v", entries, err)
	}
}

// TestMkdirOwner checks, as root, that a new folder goes to its owner.
func TestMkdirOwner(t *testing.T) {
	needRoot(t)
	withUmask(t, 0o077)
	d, root := openTree(t)
	sub, _, err := d.Mkdir("o", 0o770|os.ModeSetgid, &Owner{UID: otherID, GID: otherID})
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Close()
	mode, uid, gid := lstat(t, filepath.Join(root, "o"))
	if mode != os.ModeDir|os.ModeSetgid|0o770 || uid != otherID || gid != otherID {
		t.Errorf("mode %v, owner %d:%d; want dgrwxrwx---, %d:%d", mode, uid, gid, otherID, otherID)
	}
}
