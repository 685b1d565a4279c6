package rootfs

import (
	"archive/tar"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

func fileHash(t testing.TB, p string) [32]byte {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return sha256.Sum256(b)
}

func TestTarHostile(t *testing.T) {
	sh := tarEntry{name: "bin/sh", body: "#!", typ: tar.TypeReg, mode: 0o755}
	cases := []struct {
		name    string
		entries func(outside string) []tarEntry
		// mustNotExist are paths (relative to outside's parent) that must
		// not be created.
		wantErr error
	}{
		{"dotdot", func(string) []tarEntry {
			return []tarEntry{sh, {name: "../escape.txt", body: "x", typ: tar.TypeReg}}
		}, ErrUnsafeArchive},
		{"dotdot-deep", func(string) []tarEntry {
			return []tarEntry{sh, {name: "etc/../../../escape.txt", body: "x", typ: tar.TypeReg}}
		}, ErrUnsafeArchive},
		{"symlink-absolute-write-through", func(outside string) []tarEntry {
			return []tarEntry{sh, {name: "evil", link: outside, typ: tar.TypeSymlink}, {name: "evil/file", body: "x", typ: tar.TypeReg}}
		}, ErrUnsafeArchive},
		{"symlink-relative-write-through", func(string) []tarEntry {
			return []tarEntry{sh, {name: "evil", link: "../../../../../../../../..", typ: tar.TypeSymlink}, {name: "evil/tmp/file", body: "x", typ: tar.TypeReg}}
		}, ErrUnsafeArchive},
		{"symlink-then-dir", func(outside string) []tarEntry {
			return []tarEntry{sh, {name: "evil", link: outside, typ: tar.TypeSymlink}, {name: "evil/sub/", typ: tar.TypeDir, mode: 0o755}}
		}, ErrUnsafeArchive},
		{"symlink-then-symlink", func(outside string) []tarEntry {
			return []tarEntry{sh, {name: "evil", link: outside, typ: tar.TypeSymlink}, {name: "evil/link", link: "/etc/passwd", typ: tar.TypeSymlink}}
		}, ErrUnsafeArchive},
		{"hardlink-dotdot", func(string) []tarEntry {
			return []tarEntry{sh, {name: "hl", link: "../outside/secret", typ: tar.TypeLink}}
		}, ErrUnsafeArchive},
		{"hardlink-through-symlink", func(outside string) []tarEntry {
			return []tarEntry{sh, {name: "evil", link: outside, typ: tar.TypeSymlink}, {name: "hl", link: "evil/secret", typ: tar.TypeLink}}
		}, ErrUnsafeArchive},
		{"hardlink-absolute", func(outside string) []tarEntry {
			// Confined: names the (missing) file inside the destination.
			return []tarEntry{sh, {name: "hl", link: filepath.Join(outside, "secret"), typ: tar.TypeLink}}
		}, fs.ErrNotExist},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			base := t.TempDir()
			outside := filepath.Join(base, "outside")
			if err := os.Mkdir(outside, 0o755); err != nil {
				t.Fatal(err)
			}
			secret := filepath.Join(outside, "secret")
			if err := os.WriteFile(secret, []byte("secret"), 0o600); err != nil {
				t.Fatal(err)
			}
			archive := filepath.Join(base, "hostile.tar")
			writeTarFile(t, archive, tc.entries(outside))
			before := fileHash(t, archive)
			dst := filepath.Join(base, "agents", "rootfs")
			_, err := Provision(context.Background(), dst, Source{Kind: Tar, Path: archive}, Options{})
			if !errors.Is(err, tc.wantErr) {
				t.Fatalf("Provision = %v, want %v", err, tc.wantErr)
			}
			assertClean(t, dst)
			for _, p := range []string{
				filepath.Join(base, "escape.txt"), filepath.Join(base, "agents", "escape.txt"),
				filepath.Join(outside, "file"), filepath.Join(outside, "sub"), filepath.Join(outside, "link"),
				filepath.Join(os.TempDir(), "file"),
			} {
				if _, err := os.Lstat(p); err == nil {
					t.Errorf("%s was written outside the destination", p)
				}
			}
			var st syscall.Stat_t
			if err := syscall.Stat(secret, &st); err != nil || st.Nlink != 1 {
				t.Errorf("secret gained a hard link (nlink %d, %v)", st.Nlink, err)
			}
			if fileHash(t, archive) != before {
				t.Error("the source archive was modified")
			}
		})
	}
}

func TestTarConfinesAbsolutePaths(t *testing.T) {
	base := t.TempDir()
	outside := filepath.Join(base, "outside")
	archive := filepath.Join(base, "abs.tar")
	writeTarFile(t, archive, []tarEntry{
		{name: "/bin/sh", body: "#!", typ: tar.TypeReg, mode: 0o755},
		{name: outside + "/abs.txt", body: "confined", typ: tar.TypeReg},
	})
	dst := filepath.Join(base, "rootfs")
	if _, err := Provision(context.Background(), dst, Source{Kind: Tar, Path: archive}, Options{}); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Lstat(filepath.Join(outside, "abs.txt")); err == nil {
		t.Error("absolute entry written outside the destination")
	}
	if got := readFile(t, filepath.Join(dst, outside, "abs.txt")); got != "confined" {
		t.Errorf("confined entry = %q", got)
	}
}

func TestTarFidelity(t *testing.T) {
	base := t.TempDir()
	mtime := time.Date(2020, 2, 3, 4, 5, 6, 0, time.UTC)
	hdrs := []*tar.Header{
		{Name: "./", Typeflag: tar.TypeDir, Mode: 0o755},
		{Name: "bin/", Typeflag: tar.TypeDir, Mode: 0o755},
		{Name: "bin/busybox", Typeflag: tar.TypeReg, Mode: 0o755, Size: 4},
		{Name: "bin/sh", Typeflag: tar.TypeSymlink, Linkname: "busybox"},
		{Name: "bin/su", Typeflag: tar.TypeReg, Mode: 0o4755, Size: 4, Uid: 1234, Gid: 5678},
		{Name: "bin/hard", Typeflag: tar.TypeLink, Linkname: "bin/busybox"},
		{Name: "srv/", Typeflag: tar.TypeDir, Mode: 0o2775, Uid: 1234, Gid: 5678},
		{Name: "srv/shared/", Typeflag: tar.TypeDir, Mode: 0o1777},
		{Name: "srv/ro/", Typeflag: tar.TypeDir, Mode: 0o555},
		{Name: "srv/ro/file", Typeflag: tar.TypeReg, Mode: 0o400, Size: 4},
		{Name: "srv/abs", Typeflag: tar.TypeSymlink, Linkname: "/etc/passwd"},
		{Name: "srv/fifo", Typeflag: tar.TypeFifo, Mode: 0o620},
		{Name: "dev/null", Typeflag: tar.TypeChar, Mode: 0o666, Devmajor: 1, Devminor: 3},
		{Name: "deep/missing/parents/file", Typeflag: tar.TypeReg, Mode: 0o644, Size: 4},
		{Name: "over", Typeflag: tar.TypeReg, Mode: 0o644, Size: 4},
		{Name: "over", Typeflag: tar.TypeSymlink, Linkname: "bin"}, // a later entry replaces an earlier one
	}
	archive := filepath.Join(base, "fid.tar.gz")
	f, err := os.Create(filepath.Join(base, "fid.tar"))
	if err != nil {
		t.Fatal(err)
	}
	tw := tar.NewWriter(f)
	for _, h := range hdrs {
		h.ModTime = mtime
		h.Format = tar.FormatPAX
		if err := tw.WriteHeader(h); err != nil {
			t.Fatal(err)
		}
		if h.Size > 0 {
			tw.Write([]byte("data"))
		}
	}
	tw.Close()
	f.Close()
	requireTool(t, "gzip", "gzip")
	if out, err := execCmd("gzip", "-k", filepath.Join(base, "fid.tar")); err != nil {
		t.Fatalf("gzip: %v\n%s", err, out)
	}
	os.Rename(filepath.Join(base, "fid.tar.gz"), archive)

	dst := filepath.Join(base, "rootfs")
	var log progressLog
	if _, err := Provision(context.Background(), dst, Source{Kind: Tar, Path: archive}, Options{Progress: log.add}); err != nil {
		t.Fatal(err)
	}
	check := func(name string, want fs.FileMode) fs.FileInfo {
		t.Helper()
		fi, err := os.Lstat(filepath.Join(dst, name))
		if err != nil {
			t.Fatal(err)
		}
		if fi.Mode() != want {
			t.Errorf("%s: mode %v, want %v", name, fi.Mode(), want)
		}
		if fi.Mode()&fs.ModeSymlink == 0 && !fi.ModTime().Equal(mtime) {
			t.Errorf("%s: mtime %v, want %v", name, fi.ModTime(), mtime)
		}
		return fi
	}
	check("bin/busybox", 0o755)
	su := check("bin/su", fs.ModeSetuid|0o755)
	check("srv", fs.ModeDir|fs.ModeSetgid|0o775)
	check("srv/shared", fs.ModeDir|fs.ModeSticky|0o777)
	check("srv/ro", fs.ModeDir|0o555)
	check("srv/ro/file", 0o400)
	check("srv/fifo", fs.ModeNamedPipe|0o620)
	check("deep/missing/parents/file", 0o644)
	check("bin/sh", fs.ModeSymlink|0o777)
	check("over", fs.ModeSymlink|0o777)
	if target, _ := os.Readlink(filepath.Join(dst, "srv/abs")); target != "/etc/passwd" {
		t.Errorf("srv/abs -> %q", target)
	}
	if _, err := os.Lstat(filepath.Join(dst, "dev/null")); err == nil {
		t.Error("device node created")
	}
	var a, b syscall.Stat_t
	syscall.Stat(filepath.Join(dst, "bin/busybox"), &a)
	syscall.Stat(filepath.Join(dst, "bin/hard"), &b)
	if a.Ino != b.Ino || a.Nlink != 2 {
		t.Errorf("hard link not preserved: inodes %d %d nlink %d", a.Ino, b.Ino, a.Nlink)
	}
	if os.Geteuid() == 0 {
		st := su.Sys().(*syscall.Stat_t)
		if st.Uid != 1234 || st.Gid != 5678 {
			t.Errorf("bin/su owner %d:%d, want 1234:5678", st.Uid, st.Gid)
		}
	}
	if !log.has(StageExtract, "fid.tar.gz") {
		t.Errorf("no extract progress:\n%s", log.String())
	}
}

func TestTarCompressions(t *testing.T) {
	root := busyboxRoot(t)
	for _, tc := range []struct{ ext, flag, tool, pkg string }{
		{".tar", "", "tar", "tar"},
		{".tar.gz", "-z", "gzip", "gzip"},
		{".tar.xz", "-J", "xz", "xz-utils"},
		{".tar.zst", "--zstd", "zstd", "zstd"},
		{".tar.bz2", "-j", "bzip2", "bzip2"},
		{".unknown-extension", "-z", "gzip", "gzip"}, // sniffed by content
	} {
		t.Run(tc.ext, func(t *testing.T) {
			requireTool(t, tc.tool, tc.pkg)
			base := t.TempDir()
			archive := filepath.Join(base, "root"+tc.ext)
			tarDir(t, root, archive, tc.flag)
			dst := filepath.Join(base, "rootfs")
			info, err := Provision(context.Background(), dst, Source{Kind: Tar, Path: archive}, Options{})
			if err != nil {
				t.Fatal(err)
			}
			if info.Distro != DistroBusybox || info.Source != "tar:"+archive {
				t.Errorf("info = %+v", info)
			}
			if got, want := listing(t, dst, names(t, root)), listing(t, root, nil); got != want {
				t.Errorf("extracted tree differs from the original")
			}
		})
	}
}

func TestTarCorrupt(t *testing.T) {
	root := busyboxRoot(t)
	base := t.TempDir()
	good := filepath.Join(base, "good.tar.gz")
	tarDir(t, root, good, "-z")
	data, err := os.ReadFile(good)
	if err != nil {
		t.Fatal(err)
	}
	flipped := append([]byte(nil), data...)
	for i := len(flipped) / 2; i < len(flipped)/2+64; i++ {
		flipped[i] ^= 0x55
	}
	cases := map[string][]byte{
		"garbage-gzip":   append([]byte{0x1f, 0x8b, 8, 0}, []byte("this is not deflate data at all, no no no")...),
		"truncated-gzip": data[:len(data)/2],
		"flipped-gzip":   flipped,
		"not-an-archive": []byte("hello, I am a text file and not a tarball\n"),
		"empty":          nil,
	}
	if _, err := lookSbin("xz"); err == nil {
		xz := filepath.Join(base, "good.tar.xz")
		tarDir(t, root, xz, "-J")
		d, _ := os.ReadFile(xz)
		cases["truncated-xz"] = d[:len(d)/2]
	}
	for name, body := range cases {
		t.Run(name, func(t *testing.T) {
			archive := filepath.Join(base, name+".tar.gz")
			if err := os.WriteFile(archive, body, 0o644); err != nil {
				t.Fatal(err)
			}
			dst := filepath.Join(base, name, "rootfs")
			_, err := Provision(context.Background(), dst, Source{Kind: Tar, Path: archive}, Options{})
			if !errors.Is(err, ErrCorrupt) {
				t.Fatalf("Provision = %v, want ErrCorrupt", err)
			}
			assertClean(t, dst)
			if got, _ := os.ReadFile(archive); string(got) != string(body) {
				t.Error("the source archive was modified")
			}
		})
	}
	t.Run("no-shell", func(t *testing.T) {
		archive := filepath.Join(base, "nested.tar")
		writeTarFile(t, archive, []tarEntry{{name: "rootfs/bin/sh", body: "#!", typ: tar.TypeReg}})
		dst := filepath.Join(base, "nested", "rootfs")
		if _, err := Provision(context.Background(), dst, Source{Kind: Tar, Path: archive}, Options{}); !errors.Is(err, ErrNotRootfs) {
			t.Fatalf("Provision = %v, want ErrNotRootfs", err)
		}
		assertClean(t, dst)
	})
	t.Run("missing", func(t *testing.T) {
		dst := filepath.Join(base, "missing", "rootfs")
		if _, err := Provision(context.Background(), dst, Source{Kind: Tar, Path: filepath.Join(base, "nope.tar")}, Options{}); !errors.Is(err, fs.ErrNotExist) {
			t.Fatalf("Provision = %v, want ErrNotExist", err)
		}
		assertClean(t, dst)
	})
}

func TestCancel(t *testing.T) {
	root := busyboxRoot(t)
	base := t.TempDir()
	archive := filepath.Join(base, "root.tar")
	tarDir(t, root, archive, "")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	dst := filepath.Join(base, "rootfs")
	_, err := Provision(ctx, dst, Source{Kind: Tar, Path: archive}, Options{Progress: func(p Progress) {
		if p.Stage == StageExtract && p.Done > 0 {
			cancel()
		}
	}})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("Provision = %v, want context.Canceled", err)
	}
	assertClean(t, dst)
}

func TestDiskFull(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("mounting a tmpfs needs root")
	}
	root := busyboxRoot(t)
	base := t.TempDir()
	pad := make([]byte, 3<<20)
	rand.Read(pad)
	if err := os.WriteFile(filepath.Join(root, "pad"), pad, 0o644); err != nil {
		t.Fatal(err)
	}
	archive := filepath.Join(base, "big.tar")
	tarDir(t, root, archive, "")
	small := filepath.Join(base, "small")
	if err := os.Mkdir(small, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := unix.Mount("tmpfs", small, "tmpfs", 0, "size=2m"); err != nil {
		t.Fatalf("mount tmpfs: %v", err)
	}
	t.Cleanup(func() { unix.Unmount(small, unix.MNT_DETACH) })
	dst := filepath.Join(small, "rootfs")
	_, err := Provision(context.Background(), dst, Source{Kind: Tar, Path: archive}, Options{})
	if !errors.Is(err, ErrDiskFull) {
		t.Fatalf("Provision = %v, want ErrDiskFull", err)
	}
	if !strings.Contains(err.Error(), "disk") || !strings.Contains(err.Error(), small) {
		t.Errorf("error %q does not name the disk", err)
	}
	ents, _ := os.ReadDir(small)
	if len(ents) != 0 {
		t.Errorf("left in the full filesystem: %v", ents)
	}
	var st unix.Statfs_t
	unix.Statfs(small, &st)
	t.Logf("error: %v (tmpfs free blocks after cleanup: %d of %d)", err, st.Bfree, st.Blocks)
}

// BenchmarkExtract extracts a ~20 MB tarball of 400 files.
func BenchmarkExtract(b *testing.B) {
	base := b.TempDir()
	src := filepath.Join(base, "src")
	body := make([]byte, 50<<10)
	rand.Read(body)
	for i := range 400 {
		dir := filepath.Join(src, fmt.Sprintf("d%02d", i%20))
		os.MkdirAll(dir, 0o755)
		if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("f%03d", i)), body, 0o644); err != nil {
			b.Fatal(err)
		}
	}
	archive := filepath.Join(base, "bench.tar")
	tarDir(b, src, archive, "")
	fi, _ := os.Stat(archive)
	b.SetBytes(fi.Size())
	rep := &reporter{}
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		dst := filepath.Join(base, fmt.Sprintf("out%d", i))
		if err := os.Mkdir(dst, 0o755); err != nil {
			b.Fatal(err)
		}
		if err := extractFile(context.Background(), archive, dst, rep); err != nil {
			b.Fatal(err)
		}
		b.StopTimer()
		os.RemoveAll(dst)
		b.StartTimer()
	}
}
