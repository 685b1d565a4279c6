package hostfs

import (
	"errors"
	"io"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"
)

// TestReadFileHostile reads hostile paths beneath a Dir, through both
// resolvers: none may follow a link, leave the folder, open anything
// but a regular file, or block.
// (Long for its table: a case takes a line or a few.)
func TestReadFileHostile(t *testing.T) {
	tests := []struct {
		name  string
		setup func(t *testing.T, root, out string)
		rel   string
		max   int64 // 0: 1 MiB
		root  bool  // needs root
		want  error // a sentinel, an errno or fs error; nil: success
		data  string
	}{
		{name: "regular file", rel: "a/b/f.txt", data: "inside"},
		{name: "empty and dot components", rel: "./a//b/./f.txt/", data: "inside"},
		{name: "empty file", rel: "empty", data: "",
			setup: func(t *testing.T, root, _ string) { writeFile(t, filepath.Join(root, "empty"), "", 0o644) }},
		{name: "symlink last, to a file outside", rel: "l",
			setup: func(t *testing.T, root, out string) {
				symlink(t, filepath.Join(out, "secret.txt"), filepath.Join(root, "l"))
			},
			want: ErrSymlink},
		{name: "symlink last, relative, to a file outside", rel: "a/l",
			setup: func(t *testing.T, root, out string) {
				symlink(t, filepath.Join("../..", filepath.Base(out), "secret.txt"), filepath.Join(root, "a/l"))
			},
			want: ErrSymlink},
		{name: "symlink last, to a file inside", rel: "l",
			setup: func(t *testing.T, root, _ string) { symlink(t, "in.txt", filepath.Join(root, "l")) },
			want:  ErrSymlink},
		{name: "dangling symlink", rel: "l",
			setup: func(t *testing.T, root, _ string) { symlink(t, "/nonexistent/x", filepath.Join(root, "l")) },
			want:  ErrSymlink},
		{name: "symlink to /proc/self/root", rel: "l/etc/passwd",
			setup: func(t *testing.T, root, _ string) { symlink(t, "/proc/self/root", filepath.Join(root, "l")) },
			want:  ErrSymlink},
		{name: "symlink in the middle, to a folder inside", rel: "la/b/f.txt",
			setup: func(t *testing.T, root, _ string) { symlink(t, "a", filepath.Join(root, "la")) },
			want:  ErrSymlink},
		{name: "symlink in the middle, to a folder outside", rel: "a/lo/secret.txt",
			setup: func(t *testing.T, root, out string) { symlink(t, out, filepath.Join(root, "a/lo")) },
			want:  ErrSymlink},
		{name: "dot dot", rel: "..", want: ErrEscapes},
		{name: "dot dot to outside", rel: "../x/secret.txt", want: ErrEscapes},
		{name: "dot dot inside", rel: "a/../in.txt", want: ErrEscapes},
		{name: "dot dot at the end", rel: "a/b/..", want: ErrEscapes},
		{name: "absolute", rel: "/etc/passwd", want: ErrEscapes},
		{name: "absolute root", rel: "/", want: ErrEscapes},
		{name: "empty", rel: "", want: ErrInvalidPath},
		{name: "dot", rel: ".", want: ErrInvalidPath},
		{name: "dot slash", rel: "./", want: ErrInvalidPath},
		{name: "NUL byte", rel: "in.txt\x00x", want: ErrInvalidPath},
		{name: "named pipe", rel: "p",
			setup: func(t *testing.T, root, _ string) {
				if err := unix.Mkfifo(filepath.Join(root, "p"), 0o666); err != nil {
					t.Fatal(err)
				}
			},
			want: ErrNotRegular},
		{name: "character device", rel: "null", root: true,
			setup: func(t *testing.T, root, _ string) {
				if err := unix.Mknod(filepath.Join(root, "null"), unix.S_IFCHR|0o666, int(unix.Mkdev(1, 3))); err != nil {
					t.Fatalf("mknod a copy of /dev/null (needs CAP_MKNOD): %v", err)
				}
			},
			want: ErrNotRegular},
		{name: "socket", rel: "sock",
			setup: func(t *testing.T, root, _ string) {
				l, err := net.Listen("unix", filepath.Join(root, "sock"))
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { l.Close() })
			},
			want: ErrNotRegular},
		{name: "folder", rel: "a/b", want: ErrNotRegular},
		{name: "file as a folder", rel: "in.txt/x", want: syscall.ENOTDIR},
		{name: "missing", rel: "a/nope", want: fs.ErrNotExist},
		{name: "larger than max", rel: "big", max: 4096,
			setup: func(t *testing.T, root, _ string) {
				writeFile(t, filepath.Join(root, "big"), strings.Repeat("x", 4097), 0o644)
			},
			want: ErrTooLarge},
		{name: "exactly max", rel: "big", max: 4096, data: strings.Repeat("x", 4096),
			setup: func(t *testing.T, root, _ string) {
				writeFile(t, filepath.Join(root, "big"), strings.Repeat("x", 4096), 0o644)
			}},
		{name: "hard link to a file outside (a documented limit: it is read)", rel: "hl", data: secret,
			setup: func(t *testing.T, root, out string) {
				if err := os.Link(filepath.Join(out, "secret.txt"), filepath.Join(root, "hl")); err != nil {
					t.Fatalf("link: %v", err)
				}
			}},
	}
	for _, tt := range tests {
		for _, r := range resolvers() {
			t.Run(tt.name+"/"+r.name, func(t *testing.T) {
				if tt.root {
					needRoot(t)
				}
				d, root := openTree(t)
				out := outside(t)
				writeFile(t, filepath.Join(root, "a/b/f.txt"), "inside", 0o644)
				writeFile(t, filepath.Join(root, "in.txt"), "inside too", 0o644)
				if tt.setup != nil {
					tt.setup(t, root, out)
				}
				max := cmpOr(tt.max, 1<<20)
				var data []byte
				var err error
				promptly(t, "ReadFile "+tt.rel, func() { data, err = d.readFile(tt.rel, max, r.resolve) })
				if tt.want != nil {
					if !errors.Is(err, tt.want) {
						t.Fatalf("ReadFile(%q) = %q, %v; want %v", tt.rel, data, err, tt.want)
					}
					if data != nil {
						t.Errorf("ReadFile(%q) returned data with its error: %q", tt.rel, data)
					}
					return
				}
				if err != nil {
					t.Fatalf("ReadFile(%q): %v", tt.rel, err)
				}
				if string(data) != tt.data {
					t.Errorf("ReadFile(%q) = %q, want %q", tt.rel, data, tt.data)
				}
			})
		}
	}
}

func cmpOr(a, b int64) int64 {
	if a != 0 {
		return a
	}
	return b
}

// TestMessages checks that errors read well to a person, naming paths
// as the computer sees them.
func TestMessages(t *testing.T) {
	root := t.TempDir()
	d, err := OpenDirNamed(root, "/workspace")
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	writeFile(t, filepath.Join(root, "a/b/f.txt"), "inside", 0o644)
	writeFile(t, filepath.Join(root, "big"), strings.Repeat("x", 5000), 0o644)
	symlink(t, "a/b/f.txt", filepath.Join(root, "a.txt"))
	symlink(t, "a", filepath.Join(root, "la"))
	if err := unix.Mkfifo(filepath.Join(root, "p"), 0o666); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		rel  string
		want string
	}{
		{"a.txt", "/workspace/a.txt is a symbolic link: den reads only real files"},
		{"la/b/f.txt", "/workspace/la is a symbolic link: den reads only real files, and follows no link on the way to /workspace/la/b/f.txt"},
		{"p", "/workspace/p is not a regular file (a named pipe): den reads only real files"},
		{"a", "/workspace/a is not a regular file (a folder): den reads only real files"},
		{"big", "/workspace/big is too large: 5000 bytes, more than the 4096 den reads"},
		{"../etc/passwd", `"../etc/passwd" leads outside its folder: den takes no ".." beneath /workspace`},
		{"/etc/passwd", `"/etc/passwd" leads outside its folder: den takes only paths relative to /workspace`},
		{"", `"" is not a valid path: name a file beneath /workspace`},
		{"nope", "open /workspace/nope: no such file or directory"},
	}
	for _, tt := range tests {
		for _, r := range resolvers() {
			_, err := d.readFile(tt.rel, 4096, r.resolve)
			if err == nil || err.Error() != tt.want {
				t.Errorf("%s: ReadFile(%q) error = %v\nwant %s", r.name, tt.rel, err, tt.want)
			}
		}
	}
}

// TestOpen checks the file Open returns: the one asked for, read-only,
// named for messages.
func TestOpen(t *testing.T) {
	d, root := openTree(t)
	writeFile(t, filepath.Join(root, "a/f.txt"), "inside", 0o644)
	f, err := d.Open("a/f.txt")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if want := filepath.Join(root, "a/f.txt"); f.Name() != want {
		t.Errorf("Name() = %q, want %q", f.Name(), want)
	}
	if _, err := f.Write([]byte("x")); err == nil {
		t.Error("the file Open returned can be written")
	}
	got, err := io.ReadAll(f)
	if err != nil || string(got) != "inside" {
		t.Errorf("read = %q, %v; want %q", got, err, "inside")
	}
	if flags, err := unix.FcntlInt(f.Fd(), unix.F_GETFL, 0); err != nil || flags&unix.O_NONBLOCK != 0 {
		t.Errorf("F_GETFL = %#x, %v: want a blocking descriptor", flags, err)
	}
	unchanged(t, filepath.Join(root, "a/f.txt"), "inside")
}

// TestLease checks that a write lease on a file (which the computer can
// take on a file it owns) makes the read fail at once rather than wait
// for the lease to break.
func TestLease(t *testing.T) {
	d, root := openTree(t)
	p := filepath.Join(root, "leased")
	writeFile(t, p, "x", 0o644)
	holder, err := os.OpenFile(p, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer holder.Close()
	if _, err := unix.FcntlInt(holder.Fd(), unix.F_SETLEASE, unix.F_WRLCK); err != nil {
		t.Skipf("cannot take a write lease here: %v", err)
	}
	var rerr error
	promptly(t, "ReadFile of a leased file", func() { _, rerr = d.ReadFile("leased", 1<<20) })
	if !errors.Is(rerr, syscall.EWOULDBLOCK) {
		t.Errorf("ReadFile of a leased file: %v, want EWOULDBLOCK", rerr)
	}
}

// TestDirClosed checks that a closed Dir refuses calls, rather than
// use a descriptor number that may belong to another file by now.
func TestDirClosed(t *testing.T) {
	root := t.TempDir()
	writeFile(t, filepath.Join(root, "f"), "x", 0o644)
	d, err := OpenDir(root)
	if err != nil {
		t.Fatal(err)
	}
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := d.ReadFile("f", 10); !errors.Is(err, os.ErrClosed) {
		t.Errorf("ReadFile after Close: %v, want os.ErrClosed", err)
	}
	if err := d.WriteFile("g", nil, 0o644, nil, false); !errors.Is(err, os.ErrClosed) {
		t.Errorf("WriteFile after Close: %v, want os.ErrClosed", err)
	}
	if err := d.Close(); err == nil {
		t.Error("a second Close succeeded")
	}
}

// TestOpenDir checks that the Dir's own path may go through a symbolic
// link (it is trusted), and that a missing folder or a file is refused.
func TestOpenDir(t *testing.T) {
	real := t.TempDir()
	writeFile(t, filepath.Join(real, "f"), "x", 0o644)
	link := filepath.Join(t.TempDir(), "link")
	symlink(t, real, link)
	d, err := OpenDir(link)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	if d.Path() != link || d.Name() != link {
		t.Errorf("Path, Name = %q, %q; want %q", d.Path(), d.Name(), link)
	}
	if got, err := d.ReadFile("f", 10); err != nil || string(got) != "x" {
		t.Errorf("ReadFile = %q, %v", got, err)
	}
	if _, err := OpenDir(filepath.Join(real, "f")); !errors.Is(err, syscall.ENOTDIR) {
		t.Errorf("OpenDir of a file: %v, want ENOTDIR", err)
	}
	if _, err := OpenDir(filepath.Join(real, "nope")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("OpenDir of a missing folder: %v, want fs.ErrNotExist", err)
	}
}
