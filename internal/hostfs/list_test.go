package hostfs

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"

	"github.com/google/go-cmp/cmp"
	"golang.org/x/sys/unix"
)

// hostileTree makes, beneath root: a/b/f.txt, a real folder a/b; a
// symbolic link to out (a folder outside), one to out's secret.txt,
// and a named pipe, each at the top.
func hostileTree(t *testing.T, root, out string) {
	t.Helper()
	writeFile(t, filepath.Join(root, "a/b/f.txt"), "inside", 0o644)
	symlink(t, out, filepath.Join(root, "lout"))
	symlink(t, filepath.Join(out, "secret.txt"), filepath.Join(root, "lsecret"))
	if err := unix.Mkfifo(filepath.Join(root, "p"), 0o666); err != nil {
		t.Fatal(err)
	}
}

// TestSub checks that Sub opens real folders only, through both
// resolvers, and that what it opens is the folder beneath.
func TestSub(t *testing.T) {
	tests := []struct {
		rel  string
		want error  // nil: opened
		read string // when opened, a file in it that holds "inside"
	}{
		{"a", nil, "b/f.txt"},
		{"a/b", nil, "f.txt"},
		{"./a//b/", nil, "f.txt"},
		{"lout", ErrSymlink, ""},
		{"lout/x", ErrSymlink, ""},
		{"a/b/f.txt", ErrNotDir, ""},
		{"p", ErrNotDir, ""},
		{"nope", fs.ErrNotExist, ""},
		{"..", ErrEscapes, ""},
		{"a/../..", ErrEscapes, ""},
		{"/etc", ErrEscapes, ""},
		{"", ErrInvalidPath, ""},
	}
	for _, r := range resolvers() {
		t.Run(r.name, func(t *testing.T) {
			d, root := openTree(t)
			hostileTree(t, root, outside(t))
			for _, tt := range tests {
				var sub *Dir
				var err error
				promptly(t, "Sub "+tt.rel, func() { sub, err = d.sub(tt.rel, r.resolve) })
				if tt.want != nil {
					if !errors.Is(err, tt.want) {
						t.Errorf("Sub(%q): %v, want %v", tt.rel, err, tt.want)
					}
					if sub != nil {
						t.Errorf("Sub(%q) returned a folder with its error", tt.rel)
					}
					continue
				}
				if err != nil {
					t.Errorf("Sub(%q): %v", tt.rel, err)
					continue
				}
				if got, err := sub.ReadFile(tt.read, 100); err != nil || string(got) != "inside" {
					t.Errorf("Sub(%q).ReadFile(%s) = %q, %v", tt.rel, tt.read, got, err)
				}
				if want := filepath.Join(root, tt.rel); sub.Name() != want {
					t.Errorf("Sub(%q).Name() = %q, want %q", tt.rel, sub.Name(), want)
				}
				sub.Close()
			}
		})
	}
}

// TestLstat checks that Lstat describes the last component without
// following or opening it, and refuses a link on the way to it.
func TestLstat(t *testing.T) {
	for _, r := range resolvers() {
		t.Run(r.name, func(t *testing.T) {
			d, root := openTree(t)
			out := outside(t)
			hostileTree(t, root, out)
			lstat := func(rel string) (Entry, error) {
				var e Entry
				var err error
				promptly(t, "Lstat "+rel, func() { e, err = d.lstat(rel, r.resolve) })
				return e, err
			}
			if e, err := lstat("a/b/f.txt"); err != nil || e.Name != "f.txt" || e.Mode != 0o644 || e.Size != 6 || e.Target != "" {
				t.Errorf("Lstat(a/b/f.txt) = %+v, %v", e, err)
			}
			if e, err := lstat("a"); err != nil || !e.Mode.IsDir() {
				t.Errorf("Lstat(a) = %+v, %v", e, err)
			}
			secret := filepath.Join(out, "secret.txt")
			if e, err := lstat("lsecret"); err != nil || e.Mode.Type() != fs.ModeSymlink || e.Target != secret || e.Size != int64(len(secret)) {
				t.Errorf("Lstat(lsecret) = %+v, %v; want the link itself, to %s", e, err, secret)
			}
			if e, err := lstat("p"); err != nil || e.Mode.Type() != fs.ModeNamedPipe {
				t.Errorf("Lstat(p) = %+v, %v; want a named pipe", e, err)
			}
			if _, err := lstat("lout/secret.txt"); !errors.Is(err, ErrSymlink) {
				t.Errorf("Lstat through a link: %v, want ErrSymlink", err)
			}
			if _, err := lstat("a/nope"); !errors.Is(err, fs.ErrNotExist) {
				t.Errorf("Lstat of a missing entry: %v, want fs.ErrNotExist", err)
			}
			if _, err := lstat("a/b/f.txt/x"); !errors.Is(err, syscall.ENOTDIR) {
				t.Errorf("Lstat beneath a file: %v, want ENOTDIR", err)
			}
			if _, err := lstat("a/../../x"); !errors.Is(err, ErrEscapes) {
				t.Errorf("Lstat with ..: %v, want ErrEscapes", err)
			}
		})
	}
}

// TestList checks that List describes every entry as it is, a link as
// a link with its text, and stops at max.
func TestList(t *testing.T) {
	d, root := openTree(t)
	out := outside(t)
	hostileTree(t, root, out)
	writeFile(t, filepath.Join(root, "z.txt"), "12345", 0o600)
	var (
		entries []Entry
		more    bool
		err     error
	)
	promptly(t, "List", func() { entries, more, err = d.List(100) })
	if err != nil || more {
		t.Fatalf("List = %v, more %v", err, more)
	}
	type row struct {
		Name   string
		Type   fs.FileMode
		Size   int64
		Target string
	}
	var got []row
	for _, e := range entries {
		if e.ModTime.IsZero() {
			t.Errorf("%s has no modification time", e.Name)
		}
		size := e.Size
		if e.Mode.IsDir() {
			size = 0 // the filesystem's business
		}
		got = append(got, row{e.Name, e.Mode.Type(), size, e.Target})
	}
	slices.SortFunc(got, func(a, b row) int { return strings.Compare(a.Name, b.Name) })
	secret := filepath.Join(out, "secret.txt")
	want := []row{
		{"a", fs.ModeDir, 0, ""},
		{"lout", fs.ModeSymlink, int64(len(out)), out},
		{"lsecret", fs.ModeSymlink, int64(len(secret)), secret},
		{"p", fs.ModeNamedPipe, 0, ""},
		{"z.txt", 0, 5, ""},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("List (-want +got):\n%s", diff)
	}

	entries, more, err = d.List(2)
	if err != nil || !more || len(entries) != 2 {
		t.Errorf("List(2) = %d entries, more %v, %v; want 2, more", len(entries), more, err)
	}

	sub, err := d.Sub("a/b")
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Close()
	entries, more, err = sub.List(100)
	if err != nil || more || len(entries) != 1 || entries[0].Name != "f.txt" {
		t.Errorf("List of a/b = %+v, more %v, %v", entries, more, err)
	}
}

// TestListSwapped checks that a Dir from Sub lists the folder it
// opened even once the computer has put a link to elsewhere under its
// name.
func TestListSwapped(t *testing.T) {
	d, root := openTree(t)
	out := outside(t)
	writeFile(t, filepath.Join(root, "a/f"), "x", 0o644)
	sub, err := d.Sub("a")
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Close()
	if err := os.Rename(filepath.Join(root, "a"), filepath.Join(root, "moved")); err != nil {
		t.Fatal(err)
	}
	symlink(t, out, filepath.Join(root, "a"))
	entries, _, err := sub.List(10)
	if err != nil || len(entries) != 1 || entries[0].Name != "f" {
		t.Errorf("List after the swap = %+v, %v; want the folder opened (f), not %s", entries, err, out)
	}
}

// TestChangeTime checks that a change to a file's content shows in
// Lstat's ChangeTime even when its size and modification time are put
// back, and that a file replaced under the same name has another Inode.
func TestChangeTime(t *testing.T) {
	root := t.TempDir()
	p := filepath.Join(root, "f.txt")
	writeFile(t, p, "aaaa", 0o644)
	d, err := OpenDir(root)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	before, err := d.Lstat("f.txt")
	if err != nil {
		t.Fatal(err)
	}
	if before.Inode == 0 || before.ChangeTime.IsZero() {
		t.Fatalf("Lstat = %+v: no inode or change time", before)
	}
	// Wait for the change clock to move on, then write the same size
	// and set the modification time back.
	for i := 0; ; i++ {
		writeFile(t, p, "bbbb", 0o644)
		if err := os.Chtimes(p, before.ModTime, before.ModTime); err != nil {
			t.Fatal(err)
		}
		after, err := d.Lstat("f.txt")
		if err != nil {
			t.Fatal(err)
		}
		if !after.ModTime.Equal(before.ModTime) || after.Size != before.Size {
			t.Fatalf("mtime or size not put back: %+v, was %+v", after, before)
		}
		if !after.ChangeTime.Equal(before.ChangeTime) {
			break
		}
		if i == 20000 {
			t.Fatalf("ChangeTime stayed %v through 20000 writes", before.ChangeTime)
		}
	}
	if err := os.Rename(p, p+".old"); err != nil {
		t.Fatal(err)
	}
	writeFile(t, p, "aaaa", 0o644)
	again, err := d.Lstat("f.txt")
	if err != nil {
		t.Fatal(err)
	}
	if again.Inode == before.Inode {
		t.Errorf("a new file under the same name has the old inode %d", before.Inode)
	}
}
