// Package checkpointtest describes folder trees for tests of undo: two
// trees with the same description are the same to any program.
package checkpointtest

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// Describe is every entry beneath root as one line each: kind, mode,
// owner, modification time, size, content hash, target, device,
// extended attributes and which names share an inode.
func Describe(t *testing.T, root string) []string {
	t.Helper()
	inodes := map[uint64][]string{}
	lines := map[string]string{}
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		var st unix.Stat_t
		if err := unix.Lstat(p, &st); err != nil {
			return err
		}
		l := fmt.Sprintf("%s type=%o mode=%o owner=%d:%d", rel, st.Mode&unix.S_IFMT, st.Mode&0o7777, st.Uid, st.Gid)
		if st.Mode&unix.S_IFMT != unix.S_IFDIR {
			l += fmt.Sprintf(" mtime=%d", st.Mtim.Nano())
		}
		switch st.Mode & unix.S_IFMT {
		case unix.S_IFREG:
			f, err := os.Open(p)
			if err != nil {
				return err
			}
			// By data region, so that a 4 GiB sparse file is quick to
			// describe: pages of zeros, holes or not, are left out.
			h := sha256.New()
			page := make([]byte, 4096)
			for off := int64(0); off < st.Size; {
				data, err := unix.Seek(int(f.Fd()), off, unix.SEEK_DATA)
				if err != nil {
					break
				}
				hole, err := unix.Seek(int(f.Fd()), data, unix.SEEK_HOLE)
				if err != nil {
					hole = st.Size
				}
				for p := data; p < hole; p += 4096 {
					n, _ := f.ReadAt(page, p)
					if !bytes.Equal(page[:n], make([]byte, n)) {
						fmt.Fprintf(h, "@%d:", p)
						h.Write(page[:n])
					}
				}
				off = hole
			}
			f.Close()
			l += fmt.Sprintf(" size=%d sha=%s", st.Size, hex.EncodeToString(h.Sum(nil))[:12])
			if st.Nlink > 1 {
				inodes[st.Ino] = append(inodes[st.Ino], rel)
			}
		case unix.S_IFLNK:
			target, _ := os.Readlink(p)
			l += " -> " + target
		case unix.S_IFCHR, unix.S_IFBLK:
			l += fmt.Sprintf(" rdev=%d", st.Rdev)
		}
		if sz, _ := unix.Llistxattr(p, nil); sz > 0 {
			b := make([]byte, sz)
			n, _ := unix.Llistxattr(p, b)
			names := strings.Split(strings.TrimRight(string(b[:n]), "\x00"), "\x00")
			sort.Strings(names)
			for _, name := range names {
				v := make([]byte, 4096)
				n, _ := unix.Lgetxattr(p, name, v)
				l += fmt.Sprintf(" %s=%q", name, v[:max(n, 0)])
			}
		}
		lines[rel] = l
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, names := range inodes {
		sort.Strings(names)
		for _, n := range names {
			lines[n] += " links=" + strings.Join(names, ",")
		}
	}
	var out []string
	for _, l := range lines {
		out = append(out, l)
	}
	sort.Strings(out)
	return out
}

// Deb builds a small Debian package in dir: name, at version, holding
// /usr/bin/NAME, a script that prints "hello from NAME". It needs
// dpkg-deb (package dpkg) on the host.
func Deb(t testing.TB, dir, name, version string) string {
	t.Helper()
	tool, err := exec.LookPath("dpkg-deb")
	if err != nil {
		t.Fatal("dpkg-deb not found: install the package dpkg")
	}
	root := filepath.Join(dir, name+"-pkg")
	for p, content := range map[string]string{
		"DEBIAN/control":                    "Package: " + name + "\nVersion: " + version + "\nArchitecture: all\nMaintainer: den tests <den@example.invalid>\nDescription: a package den's tests install\n",
		"usr/bin/" + name:                   "#!/bin/sh\necho hello from " + name + "\n",
		"usr/share/doc/" + name + "/README": "made by den's tests\n",
	} {
		if err := os.MkdirAll(filepath.Dir(filepath.Join(root, p)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(root, p), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Chmod(filepath.Join(root, "usr/bin", name), 0o755); err != nil {
		t.Fatal(err)
	}
	deb := filepath.Join(dir, name+"_"+version+"_all.deb")
	if out, err := exec.Command(tool, "--build", "--root-owner-group", root, deb).CombinedOutput(); err != nil {
		t.Fatalf("dpkg-deb: %v\n%s", err, out)
	}
	return deb
}
