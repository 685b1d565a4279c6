package privfile

import (
	"bytes"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// TestCreate: the first Create makes the folder (0700) and the file
// (0600) with the content; the next keeps the file as it is, even one
// Create did not make.
func TestCreate(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "data")
	path := filepath.Join(dir, "secret")
	created, err := Create(path, []byte("first\n"))
	if err != nil || !created {
		t.Fatalf("Create = %v, %v; want created", created, err)
	}
	for p, want := range map[string]os.FileMode{dir: fs.ModeDir | 0o700, path: 0o600} {
		fi, err := os.Lstat(p)
		if err != nil {
			t.Fatal(err)
		}
		if fi.Mode() != want {
			t.Errorf("%s: mode %v, want %v", p, fi.Mode(), want)
		}
	}
	created, err = Create(path, []byte("second\n"))
	if err != nil || created {
		t.Fatalf("second Create = %v, %v; want not created", created, err)
	}
	if b, _ := os.ReadFile(path); string(b) != "first\n" {
		t.Errorf("the file holds %q after a second Create, want the first content", b)
	}
	// Someone else's file, even a public one, is not Create's to change.
	other := filepath.Join(dir, "other")
	if err := os.WriteFile(other, []byte("theirs"), 0o644); err != nil {
		t.Fatal(err)
	}
	if created, err := Create(other, []byte("mine")); err != nil || created {
		t.Fatalf("Create over an existing file = %v, %v; want not created", created, err)
	}
	if b, _ := os.ReadFile(other); string(b) != "theirs" {
		t.Errorf("Create changed an existing file to %q", b)
	}
	onlyFiles(t, dir, "other", "secret")
}

// TestCreateGoroutines: of goroutines creating one file at once,
// exactly one creates it, and the file holds what that one wrote.
func TestCreateGoroutines(t *testing.T) {
	for range 50 {
		path := filepath.Join(t.TempDir(), "secret")
		const n = 8
		var created [n]bool
		var wg sync.WaitGroup
		for i := range n {
			wg.Go(func() {
				var err error
				if created[i], err = Create(path, []byte{byte('a' + i)}); err != nil {
					t.Error(err)
				}
			})
		}
		wg.Wait()
		b, _, err := Read(path, 16)
		if err != nil {
			t.Fatal(err)
		}
		var winners []int
		for i, c := range created {
			if c {
				winners = append(winners, i)
			}
		}
		if len(winners) != 1 {
			t.Fatalf("goroutines %v reported created, want exactly one", winners)
		}
		if want := string(rune('a' + winners[0])); string(b) != want {
			t.Fatalf("the file holds %q, want the creator's %q", b, want)
		}
		onlyFiles(t, filepath.Dir(path), "secret")
	}
}

// TestReplace: Replace puts new content in place of the old, mode 0600
// whatever the old file's mode was, and leaves no temporary file.
func TestReplace(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "data")
	path := filepath.Join(dir, "secret")
	if err := Replace(path, []byte("one")); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(path, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := Replace(path, []byte("two")); err != nil {
		t.Fatal(err)
	}
	b, fi, err := Read(path, 16)
	if err != nil || string(b) != "two" {
		t.Fatalf("Read after Replace = %q, %v; want \"two\"", b, err)
	}
	if fi.Mode() != 0o600 {
		t.Errorf("replaced file has mode %v, want 0600", fi.Mode())
	}
	if fi, err := os.Stat(dir); err != nil || fi.Mode() != fs.ModeDir|0o700 {
		t.Errorf("folder made by Replace: %v, %v; want mode 0700", fi.Mode(), err)
	}
	onlyFiles(t, dir, "secret")
}

// TestReplaceAtomic: readers that read while the file is replaced again
// and again always find a file, holding one whole version.
func TestReplaceAtomic(t *testing.T) {
	path := filepath.Join(t.TempDir(), "secret")
	const size, versions = 64 << 10, 200
	version := func(i int) []byte { return bytes.Repeat([]byte{byte('a' + i%26)}, size) }
	if err := Replace(path, version(0)); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	var wg sync.WaitGroup
	for range 2 {
		wg.Go(func() {
			for {
				select {
				case <-done:
					return
				default:
				}
				b, _, err := Read(path, size)
				if err != nil {
					t.Errorf("read during Replace: %v", err)
					return
				}
				if len(b) != size || bytes.Count(b, b[:1]) != size {
					t.Errorf("read %d bytes during Replace, not one whole version", len(b))
					return
				}
			}
		})
	}
	for i := 1; i < versions; i++ {
		if err := Replace(path, version(i)); err != nil {
			t.Error(err)
			break
		}
	}
	close(done)
	wg.Wait()
	onlyFiles(t, filepath.Dir(path), "secret")
}

// TestReadRefuses: each rule Read holds a file to, broken, gives a
// *RefusedError naming it, with the info of the opened file when there
// was one, and leaves the file as it was.
func TestReadRefuses(t *testing.T) {
	const max = 32
	for _, tc := range []struct {
		name   string
		make   func(t *testing.T, path string)
		reason Reason
		text   string
		info   bool // the opened file's info comes with the error
	}{{
		name: "symlink to a private file",
		make: func(t *testing.T, path string) {
			target := filepath.Join(t.TempDir(), "target")
			write(t, target, "secret", 0o600)
			if err := os.Symlink(target, path); err != nil {
				t.Fatal(err)
			}
		},
		reason: Symlink,
		text:   "it is a symbolic link",
	}, {
		name:   "mode 0644",
		make:   func(t *testing.T, path string) { write(t, path, "secret", 0o644) },
		reason: Shared,
		text:   "its mode 0644 lets group or others at it",
		info:   true,
	}, {
		name:   "mode 0640",
		make:   func(t *testing.T, path string) { write(t, path, "secret", 0o640) },
		reason: Shared,
		text:   "its mode 0640 lets group or others at it",
		info:   true,
	}, {
		name:   "mode 0601",
		make:   func(t *testing.T, path string) { write(t, path, "secret", 0o601) },
		reason: Shared,
		text:   "its mode 0601 lets group or others at it",
		info:   true,
	}, {
		name: "directory",
		make: func(t *testing.T, path string) {
			if err := os.Mkdir(path, 0o700); err != nil {
				t.Fatal(err)
			}
		},
		reason: NotRegular,
		text:   "it is not a regular file",
		info:   true,
	}, {
		name:   "over max",
		make:   func(t *testing.T, path string) { write(t, path, strings.Repeat("x", max+1), 0o600) },
		reason: TooLarge,
		text:   "the file is over 32 bytes",
		info:   true,
	}} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "secret")
			tc.make(t, path)
			before, _ := os.Lstat(path)
			b, fi, err := Read(path, max)
			var re *RefusedError
			if !errors.As(err, &re) || !errors.Is(err, ErrRefused) {
				t.Fatalf("Read = %q, %v; want a *RefusedError", b, err)
			}
			if re.Reason != tc.reason || err.Error() != tc.text {
				t.Errorf("refused for reason %d, %q; want %d, %q", re.Reason, err, tc.reason, tc.text)
			}
			if b != nil {
				t.Errorf("a refused Read returned %q", b)
			}
			if (fi != nil) != tc.info {
				t.Errorf("info with the error: %v, want it: %v", fi, tc.info)
			}
			if fi != nil && !os.SameFile(fi, before) {
				t.Error("the info is not the file's")
			}
			after, _ := os.Lstat(path)
			if after.Mode() != before.Mode() || !after.ModTime().Equal(before.ModTime()) || after.Size() != before.Size() {
				t.Error("Read changed the file it refused")
			}
		})
	}
}

// TestReadFIFO: a named pipe with no writer is refused at once, not
// waited on.
func TestReadFIFO(t *testing.T) {
	path := filepath.Join(t.TempDir(), "secret")
	if err := syscall.Mkfifo(path, 0o600); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		_, _, err := Read(path, 32)
		done <- err
	}()
	var err error
	select {
	case err = <-done:
	case <-time.After(30 * time.Second): // an open takes microseconds; this is a hang
		t.Error("Read blocked on a named pipe with no writer")
		if w, werr := os.OpenFile(path, os.O_WRONLY, 0); werr == nil { // lets the open return
			w.Close()
		}
		err = <-done
	}
	var re *RefusedError
	if !errors.As(err, &re) || re.Reason != NotRegular {
		t.Errorf("Read of a named pipe: %v, want NotRegular", err)
	}
}

// TestRead: a private file of up to max bytes is read whole, with its
// info; a missing one is fs.ErrNotExist, with no info.
func TestRead(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "secret")
	want := strings.Repeat("k", 32)
	write(t, path, want, 0o600)
	b, fi, err := Read(path, 32)
	if err != nil || string(b) != want {
		t.Fatalf("Read = %q, %v; want %q", b, err, want)
	}
	if lfi, _ := os.Lstat(path); fi == nil || !os.SameFile(fi, lfi) {
		t.Errorf("Read returned info %v, not the file's", fi)
	}
	for _, mode := range []os.FileMode{0o400, 0o700} {
		if err := os.Chmod(path, mode); err != nil {
			t.Fatal(err)
		}
		if _, _, err := Read(path, 32); err != nil {
			t.Errorf("mode %04o: %v, want it read (only the owner has bits)", mode, err)
		}
	}
	b, fi, err = Read(filepath.Join(dir, "missing"), 32)
	if !errors.Is(err, fs.ErrNotExist) || b != nil || fi != nil {
		t.Errorf("Read of a missing file = %q, %v, %v; want fs.ErrNotExist alone", b, fi, err)
	}
}

// write writes a file the way a person or another program might: in
// place, with the given mode.
func write(t *testing.T, path, content string, mode os.FileMode) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), mode); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(path, mode); err != nil { // past the umask
		t.Fatal(err)
	}
}

// onlyFiles fails unless dir holds exactly the names given, sorted: no
// temporary file was left.
func onlyFiles(t *testing.T, dir string, names ...string) {
	t.Helper()
	d, err := os.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	got, err := d.Readdirnames(-1)
	if err != nil {
		t.Fatal(err)
	}
	if slices.Sort(got); !slices.Equal(got, names) {
		t.Errorf("%s holds %v, want %v", dir, got, names)
	}
}
