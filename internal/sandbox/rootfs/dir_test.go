package rootfs

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"
)

// fixtureTree builds a small tree exercising every kind of entry a rootfs
// holds.
func fixtureTree(t *testing.T, dir string) {
	t.Helper()
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	for _, d := range []string{"bin", "etc", "srv/shared", "srv/ro", "deep/a/b/c"} {
		must(os.MkdirAll(filepath.Join(dir, d), 0o755))
	}
	must(os.WriteFile(filepath.Join(dir, "bin/busybox"), []byte("binary"), 0o755))
	must(os.Symlink("busybox", filepath.Join(dir, "bin/sh")))
	must(os.WriteFile(filepath.Join(dir, "bin/su"), []byte("setuid"), 0o755))
	must(os.Link(filepath.Join(dir, "bin/busybox"), filepath.Join(dir, "bin/ls")))
	must(os.Symlink("/nonexistent/target", filepath.Join(dir, "etc/dangling")))
	must(os.Symlink("../../etc", filepath.Join(dir, "deep/a/up")))
	must(os.WriteFile(filepath.Join(dir, "etc/secret"), []byte("shh"), 0))
	must(os.WriteFile(filepath.Join(dir, "srv/ro/file"), []byte("ro"), 0o444))
	must(syscall.Mkfifo(filepath.Join(dir, "srv/fifo"), 0o600))
	must(os.WriteFile(filepath.Join(dir, "deep/a/b/c/leaf"), make([]byte, 100<<10), 0o640))
	if os.Geteuid() == 0 {
		must(os.Lchown(filepath.Join(dir, "bin/su"), 1234, 5678))
		must(os.Lchown(filepath.Join(dir, "etc/dangling"), 42, 43))
	}
	must(os.Chmod(filepath.Join(dir, "bin/su"), 0o755|os.ModeSetuid))
	must(os.Chmod(filepath.Join(dir, "srv/shared"), 0o777|os.ModeSticky))
	must(os.Chmod(filepath.Join(dir, "srv"), 0o775|os.ModeSetgid))
	mtime := time.Date(2021, 5, 6, 7, 8, 9, 123456789, time.UTC)
	filepath.Walk(dir, func(p string, fi os.FileInfo, err error) error {
		if fi.Mode()&os.ModeSymlink == 0 {
			os.Chtimes(p, mtime, mtime)
		}
		return nil
	})
	must(os.Chmod(filepath.Join(dir, "srv/ro"), 0o555))
	t.Cleanup(func() { os.Chmod(filepath.Join(dir, "srv/ro"), 0o755) })
}

func TestDir(t *testing.T) {
	base := t.TempDir()
	src := filepath.Join(base, "src")
	fixtureTree(t, src)
	before := listing(t, src, nil)
	dst := filepath.Join(base, "agents", "rootfs")
	var log progressLog
	info, err := Provision(context.Background(), dst, Source{Kind: Dir, Path: src}, Options{Progress: log.add})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.Chmod(filepath.Join(dst, "srv/ro"), 0o755) })
	if info.Source != "dir:"+src || info.Distro != DistroOther || info.PackageManager != None {
		t.Errorf("info = %+v", info)
	}
	if after := listing(t, src, nil); after != before {
		t.Errorf("the source changed:\n%s\n----\n%s", before, after)
	}
	// Every source entry is reproduced exactly (Setup adds files, which the
	// comparison leaves out). Directories Setup writes into (etc) differ in
	// mtime, so compare those by mode only.
	only := names(t, src)
	delete(only, "etc")
	if got := listing(t, dst, only); got != listing(t, src, only) {
		t.Errorf("copy differs:\n%s\n----\n%s", listing(t, src, only), got)
	}
	if !log.has(StageExtract, "copying "+src) {
		t.Errorf("no copy progress:\n%s", log.String())
	}

	for _, tc := range []struct{ name, src, dst string }{
		{"dst-inside-src", src, filepath.Join(src, "deep", "rootfs")},
		{"src-inside-dst", filepath.Join(base, "outer", "rootfs", "inner"), filepath.Join(base, "outer", "rootfs")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			os.MkdirAll(tc.src, 0o755)
			os.WriteFile(filepath.Join(tc.src, "sh"), nil, 0o755)
			before := listing(t, tc.src, nil)
			_, err := Provision(context.Background(), tc.dst, Source{Kind: Dir, Path: tc.src}, Options{})
			if !errors.Is(err, ErrOverlap) && !errors.Is(err, ErrExists) {
				t.Fatalf("Provision = %v, want ErrOverlap", err)
			}
			if after := listing(t, tc.src, nil); after != before {
				t.Error("the source changed")
			}
		})
	}
}
