package hostfs

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

type fileID struct{ dev, ino uint64 }

func idOf(t testing.TB, path string) fileID {
	t.Helper()
	var st unix.Stat_t
	if err := unix.Lstat(path, &st); err != nil {
		t.Fatal(err)
	}
	return fileID{st.Dev, st.Ino}
}

// FuzzOpen opens fuzzed paths beneath a small tree with links to the
// outside in it. Open must never return a file outside the Dir (nor
// anything but one of its regular files) and never panic, and the walk
// must agree with openat2 on what is refused.
func FuzzOpen(f *testing.F) {
	base := f.TempDir()
	root, out := filepath.Join(base, "root"), filepath.Join(base, "out")
	writeFile(f, filepath.Join(out, "secret.txt"), secret, 0o644)
	writeFile(f, filepath.Join(out, "dir/deep.txt"), secret, 0o644)
	writeFile(f, filepath.Join(root, "f.txt"), "inside", 0o644)
	writeFile(f, filepath.Join(root, "dir/g.txt"), "inside", 0o644)
	writeFile(f, filepath.Join(root, "dir/sub/h.txt"), "inside", 0o644)
	symlink(f, filepath.Join(out, "secret.txt"), filepath.Join(root, "link"))
	symlink(f, "../out/secret.txt", filepath.Join(root, "rlink"))
	symlink(f, "../../out", filepath.Join(root, "dir/up"))
	symlink(f, out, filepath.Join(root, "dirlink"))
	symlink(f, "f.txt", filepath.Join(root, "inlink"))
	symlink(f, "/proc/self/root", filepath.Join(root, "proc"))
	if err := unix.Mkfifo(filepath.Join(root, "fifo"), 0o644); err != nil {
		f.Fatal(err)
	}
	inside := map[fileID]bool{
		idOf(f, filepath.Join(root, "f.txt")):         true,
		idOf(f, filepath.Join(root, "dir/g.txt")):     true,
		idOf(f, filepath.Join(root, "dir/sub/h.txt")): true,
	}
	secrets := []fileID{idOf(f, filepath.Join(out, "secret.txt")), idOf(f, filepath.Join(out, "dir/deep.txt"))}
	d, err := OpenDir(root)
	if err != nil {
		f.Fatal(err)
	}
	f.Cleanup(func() { d.Close() })

	for _, seed := range []string{
		"f.txt", "dir/g.txt", "dir//sub/./h.txt", "link", "rlink", "dir/up/secret.txt",
		"dirlink/secret.txt", "dirlink/dir/deep.txt", "inlink", "proc/etc/passwd", "fifo",
		"../out/secret.txt", "dir/../f.txt", "/etc/passwd", "", ".", "..", "f.txt/", "dir",
		"f.txt\x00", "./f.txt", "dir/sub/../../link",
		"dirlink/" + strings.Repeat("x", 4100), // longer than PATH_MAX, with a link on the way
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, rel string) {
		file, err := d.Open(rel)
		if err == nil {
			var st unix.Stat_t
			serr := unix.Fstat(int(file.Fd()), &st)
			file.Close()
			if serr != nil {
				t.Fatal(serr)
			}
			id := fileID{st.Dev, st.Ino}
			for _, s := range secrets {
				if id == s {
					t.Fatalf("Open(%q) opened a file outside the folder", rel)
				}
			}
			if !inside[id] || st.Mode&unix.S_IFMT != unix.S_IFREG {
				t.Fatalf("Open(%q) opened %#o %v, not one of the folder's regular files", rel, st.Mode, id)
			}
		}
		wf, _, werr := d.open(rel, walk)
		if werr == nil {
			wf.Close()
		}
		if (err == nil) != (werr == nil) || class(err) != class(werr) {
			t.Fatalf("Open(%q): openat2 says %v, the walk %v", rel, err, werr)
		}
	})
}

// class is the sentinel err wraps, or err itself for any other error.
func class(err error) error {
	for _, s := range []error{ErrSymlink, ErrNotRegular, ErrEscapes, ErrInvalidPath} {
		if errors.Is(err, s) {
			return s
		}
	}
	if err != nil {
		return os.ErrInvalid // some other error
	}
	return nil
}
