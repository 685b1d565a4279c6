package hostfs

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// benchTree makes a 4 KiB file two folders deep, a/b/f, readable by
// anyone.
func benchTree(b *testing.B) (*Dir, string) {
	d, root := openTree(b)
	if err := os.Chmod(root, 0o755); err != nil {
		b.Fatal(err)
	}
	writeFile(b, filepath.Join(root, "a/b/f"), strings.Repeat("x", 4096), 0o644)
	b.SetBytes(4096)
	return d, root
}

func BenchmarkReadFile(b *testing.B) {
	d, _ := benchTree(b)
	for b.Loop() {
		if _, err := d.ReadFile("a/b/f", 1<<20); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkReadFileWalk is ReadFile as on a kernel without openat2.
func BenchmarkReadFileWalk(b *testing.B) {
	d, _ := benchTree(b)
	for b.Loop() {
		if _, err := d.readFile("a/b/f", 1<<20, walk); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkReadFileAs(b *testing.B) {
	needRoot(b)
	d, _ := benchTree(b)
	id := &Identity{UID: otherID, GID: otherID, Groups: []int{otherGrp}}
	for b.Loop() {
		if _, err := d.ReadFileAs("a/b/f", 1<<20, id); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkOSReadFile is os.ReadFile of the same file, for scale.
func BenchmarkOSReadFile(b *testing.B) {
	_, root := benchTree(b)
	p := filepath.Join(root, "a/b/f")
	for b.Loop() {
		if _, err := os.ReadFile(p); err != nil {
			b.Fatal(err)
		}
	}
}
