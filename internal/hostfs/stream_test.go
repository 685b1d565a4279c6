package hostfs

import (
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// failingReader yields some bytes, then fails.
type failingReader struct {
	data string
	err  error
}

func (r *failingReader) Read(p []byte) (int, error) {
	if r.data == "" {
		return 0, r.err
	}
	n := copy(p, r.data)
	r.data = r.data[n:]
	return n, nil
}

// TestWriteFrom checks that WriteFrom streams into place, replaces a
// planted link without following it, and on a body over the limit or a
// failing one leaves nothing behind and the old file as it was.
func TestWriteFrom(t *testing.T) {
	withUmask(t, 0o077)
	errBody := errors.New("the client went away")
	tests := []struct {
		name    string
		setup   func(t *testing.T, root, out string)
		r       io.Reader
		want    error // nil: written, and then x holds content
		content string
		check   func(t *testing.T, root, out string)
	}{
		{name: "new file", r: strings.NewReader("new"), content: "new"},
		{name: "empty", r: strings.NewReader(""), content: ""},
		{name: "exactly max bytes", r: strings.NewReader("0123456789"), content: "0123456789"},
		{name: "over a file", r: strings.NewReader("new"), content: "new",
			setup: func(t *testing.T, root, _ string) { writeFile(t, filepath.Join(root, "x"), "old", 0o600) }},
		{name: "over a symlink to a file outside", r: strings.NewReader("new"), content: "new",
			setup: func(t *testing.T, root, out string) {
				symlink(t, filepath.Join(out, "secret.txt"), filepath.Join(root, "x"))
			},
			check: func(t *testing.T, _, out string) { unchanged(t, filepath.Join(out, "secret.txt"), secret) }},
		{name: "over the limit", r: strings.NewReader(strings.Repeat("n", 11)), want: ErrTooLarge,
			setup: func(t *testing.T, root, _ string) { writeFile(t, filepath.Join(root, "x"), "old", 0o600) },
			check: func(t *testing.T, root, _ string) { unchanged(t, filepath.Join(root, "x"), "old") }},
		{name: "the body fails", r: &failingReader{"part", errBody}, want: errBody,
			check: func(t *testing.T, root, _ string) {
				if _, err := os.Lstat(filepath.Join(root, "x")); !errors.Is(err, fs.ErrNotExist) {
					t.Errorf("x exists after a failed write: %v", err)
				}
			}},
		{name: "over a folder (the rename fails)", r: strings.NewReader("new"), want: errAny,
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
			n, err := d.WriteFrom("x", tt.r, 0o640, nil, 10)
			switch {
			case tt.want == nil && err != nil:
				t.Fatalf("WriteFrom: %v", err)
			case tt.want == errAny && err == nil:
				t.Fatal("WriteFrom succeeded; want an error")
			case tt.want != nil && tt.want != errAny && !errors.Is(err, tt.want):
				t.Fatalf("WriteFrom: %v, want %v", err, tt.want)
			}
			if tt.want == nil {
				unchanged(t, filepath.Join(root, "x"), tt.content)
				if n != int64(len(tt.content)) {
					t.Errorf("WriteFrom wrote %d bytes, want %d", n, len(tt.content))
				}
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

// TestWriteFromOwner checks, as root, that the streamed file goes to
// its owner.
func TestWriteFromOwner(t *testing.T) {
	needRoot(t)
	d, root := openTree(t)
	if _, err := d.WriteFrom("x", strings.NewReader("new"), 0o644, &Owner{UID: otherID, GID: otherGrp}, 100); err != nil {
		t.Fatal(err)
	}
	if mode, uid, gid := lstat(t, filepath.Join(root, "x")); mode != 0o644 || uid != otherID || gid != otherGrp {
		t.Errorf("mode %v, owner %d:%d; want 0644, %d:%d", mode, uid, gid, otherID, otherGrp)
	}
}

// TestWriteNew checks that WriteNew takes the first free name, counts
// every kind of entry (a dangling link included) as taken, and leaves
// nothing behind when no name is free.
func TestWriteNew(t *testing.T) {
	d, root := openTree(t)
	out := outside(t)
	writeFile(t, filepath.Join(root, "a"), "old a", 0o644)
	symlink(t, filepath.Join(out, "made-by-den"), filepath.Join(root, "b"))
	writeFile(t, filepath.Join(root, "c/keep"), "kept", 0o644)
	names := slices.Values([]string{"a", "b", "c", "d"})

	name, n, err := d.WriteNew(names, strings.NewReader("new"), 0o600, nil, 100)
	if err != nil || name != "d" || n != 3 {
		t.Fatalf("WriteNew = %q, %d, %v; want d, 3", name, n, err)
	}
	unchanged(t, filepath.Join(root, "d"), "new")
	unchanged(t, filepath.Join(root, "a"), "old a")
	unchanged(t, filepath.Join(root, "c/keep"), "kept")
	if _, err := os.Lstat(filepath.Join(out, "made-by-den")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("the dangling link's target was made: %v", err)
	}
	if mode, _, _ := lstat(t, filepath.Join(root, "d")); mode != 0o600 {
		t.Errorf("mode %v, want 0600", mode)
	}

	if _, _, err := d.WriteNew(names, strings.NewReader("newer"), 0o600, nil, 100); !errors.Is(err, ErrExists) {
		t.Errorf("WriteNew with every name taken: %v, want ErrExists", err)
	}
	unchanged(t, filepath.Join(root, "d"), "new")
	if _, _, err := d.WriteNew(slices.Values([]string{"a", ".."}), strings.NewReader("x"), 0o600, nil, 100); !errors.Is(err, ErrEscapes) {
		t.Errorf("WriteNew offered ..: %v, want ErrEscapes", err)
	}
	if _, _, err := d.WriteNew(slices.Values([]string{"e"}), strings.NewReader("too long"), 0o600, nil, 3); !errors.Is(err, ErrTooLarge) {
		t.Errorf("WriteNew over the limit: %v, want ErrTooLarge", err)
	}
	if _, err := os.Lstat(filepath.Join(root, "e")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("e exists after a write over the limit: %v", err)
	}
	noTemps(t, root)
}

// TestRemove checks that Remove takes away a file, a link (not what it
// leads to) and an empty folder, and leaves a full folder alone.
func TestRemove(t *testing.T) {
	d, root := openTree(t)
	out := outside(t)
	writeFile(t, filepath.Join(root, "f"), "x", 0o644)
	symlink(t, filepath.Join(out, "secret.txt"), filepath.Join(root, "l"))
	if err := os.Mkdir(filepath.Join(root, "empty"), 0o755); err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(root, "full/keep"), "kept", 0o644)
	for _, name := range []string{"f", "l", "empty"} {
		if err := d.Remove(name); err != nil {
			t.Errorf("Remove(%s): %v", name, err)
		}
		if _, err := os.Lstat(filepath.Join(root, name)); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("%s is still there: %v", name, err)
		}
	}
	unchanged(t, filepath.Join(out, "secret.txt"), secret)
	if err := d.Remove("full"); err == nil {
		t.Error("Remove of a full folder succeeded")
	}
	unchanged(t, filepath.Join(root, "full/keep"), "kept")
	if err := d.Remove("a/../x"); !errors.Is(err, ErrInvalidPath) {
		t.Errorf("Remove(a/../x): %v, want ErrInvalidPath", err)
	}
}
