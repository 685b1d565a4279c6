package rootfs

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestBusybox(t *testing.T) {
	requireTool(t, "busybox", "busybox-static")
	dst := filepath.Join(t.TempDir(), "agents", "a1", "rootfs")
	var log progressLog
	info, err := Provision(context.Background(), dst, Source{Kind: Busybox}, Options{Progress: log.add})
	if err != nil {
		t.Fatal(err)
	}
	if info.Distro != DistroBusybox || info.PackageManager != None || info.Source != "busybox" || info.Arch == "" || info.Created.IsZero() {
		t.Errorf("info = %+v", info)
	}
	if !log.has(StageSetup, "setting up") {
		t.Errorf("no setup progress:\n%s", log.String())
	}
	fi, err := os.Lstat(filepath.Join(dst, "bin/busybox"))
	if err != nil || !fi.Mode().IsRegular() {
		t.Fatalf("bin/busybox: %v %v", fi, err)
	}
	if target, err := os.Readlink(filepath.Join(dst, "bin/sh")); err != nil || target != "busybox" {
		t.Errorf("bin/sh -> %q, %v", target, err)
	}
	modes := map[string]fs.FileMode{
		"root": fs.ModeDir | 0o700, "tmp": fs.ModeDir | fs.ModeSticky | 0o777, "workspace": fs.ModeDir | 0o755,
		"den/attachments": fs.ModeDir | 0o755, "den/offloads": fs.ModeDir | 0o755, "den/browser": fs.ModeDir | 0o755,
		"den/memory": fs.ModeDir | 0o755, "den/skills": fs.ModeDir | 0o755, "den/shared": fs.ModeDir | 0o755,
		"run/den": fs.ModeDir | 0o755, "usr/local/bin": fs.ModeDir | 0o755, ".": fs.ModeDir | 0o755,
	}
	for name, want := range modes {
		fi, err := os.Lstat(filepath.Join(dst, name))
		if err != nil || fi.Mode() != want {
			t.Errorf("%s: mode %v (err %v), want %v", name, fi.Mode(), err, want)
		}
	}
	for name, want := range map[string]string{
		"etc/hostname": "den\n",
		"etc/passwd":   "root:x:0:0:root:/root:/bin/sh\n",
		"etc/group":    "root:x:0:\n",
	} {
		if got := readFile(t, filepath.Join(dst, name)); got != want {
			t.Errorf("%s = %q, want %q", name, got, want)
		}
	}
	if hosts := readFile(t, filepath.Join(dst, "etc/hosts")); !strings.Contains(hosts, "localhost") || !strings.Contains(hosts, "::1") || !strings.Contains(hosts, " den") && !strings.Contains(hosts, "\tden") {
		t.Errorf("etc/hosts = %q", hosts)
	}
	if host, err := os.ReadFile("/etc/resolv.conf"); err == nil {
		if got := readFile(t, filepath.Join(dst, "etc/resolv.conf")); got != string(host) {
			t.Errorf("resolv.conf = %q, want the host's %q", got, host)
		}
	}
	if _, err := os.Stat(dst + ".tmp"); err == nil {
		t.Error("temporary left")
	}
	assertNoTemp(t, filepath.Dir(dst))

	out := bwrap(t, dst, nil, "echo ok")
	if out != "ok\n" {
		t.Errorf("bwrap echo ok = %q", out)
	}
	// A login shell reads /etc/profile, which reads /etc/profile.d/den.sh.
	out = bwrap(t, dst, []string{"--clearenv"}, "exec /bin/sh -l -c 'echo $HOME $LANG $TERM; echo $PATH'")
	want := "/root C.UTF-8 xterm-256color\n/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin\n"
	if out != want {
		t.Errorf("login environment = %q, want %q", out, want)
	}

	// A second provision into the same place is refused and changes nothing.
	before := listing(t, dst, nil)
	if _, err := Provision(context.Background(), dst, Source{Kind: Busybox}, Options{}); !errors.Is(err, ErrExists) {
		t.Errorf("second Provision = %v, want ErrExists", err)
	}
	if after := listing(t, dst, nil); after != before {
		t.Error("existing rootfs changed by a refused Provision")
	}
	assertNoTemp(t, filepath.Dir(dst))
}

func assertNoTemp(t testing.TB, dir string) {
	t.Helper()
	ents, _ := os.ReadDir(dir)
	for _, e := range ents {
		if strings.Contains(e.Name(), ".tmp-") {
			t.Errorf("temporary %s left in %s", e.Name(), dir)
		}
	}
}

func TestSetupReplacesSymlinks(t *testing.T) {
	root := busyboxRoot(t)
	outside := filepath.Join(t.TempDir(), "outside")
	if err := os.Mkdir(outside, 0o755); err != nil {
		t.Fatal(err)
	}
	// Hostile links: Setup must replace them, not write through them.
	for name, target := range map[string]string{
		"etc/resolv.conf":      filepath.Join(outside, "resolv"),
		"etc/hostname":         "../../../../../../" + outside + "/hostname",
		"etc/profile.d/den.sh": filepath.Join(outside, "den.sh"),
	} {
		p := filepath.Join(root, name)
		os.Remove(p)
		if err := os.Symlink(target, p); err != nil {
			t.Fatal(err)
		}
	}
	if err := Setup(root, Info{}, Options{}); err != nil {
		t.Fatal(err)
	}
	if ents, _ := os.ReadDir(outside); len(ents) != 0 {
		t.Errorf("Setup wrote outside the rootfs: %v", ents)
	}
	for _, name := range []string{"etc/resolv.conf", "etc/hostname", "etc/profile.d/den.sh"} {
		fi, err := os.Lstat(filepath.Join(root, name))
		if err != nil || !fi.Mode().IsRegular() {
			t.Errorf("%s: %v %v, want a regular file", name, fi, err)
		}
	}
	// Setup is idempotent.
	before := listing(t, root, nil)
	if err := Setup(root, Info{}, Options{}); err != nil {
		t.Fatal(err)
	}
	if after := listing(t, root, nil); after != before {
		t.Errorf("second Setup changed the tree:\n%s\n----\n%s", before, after)
	}
}

func TestInfoRoundTrip(t *testing.T) {
	root := busyboxRoot(t)
	info := Info{Source: "busybox", Distro: DistroBusybox, PackageManager: None, Arch: "amd64", Checksum: "sha256:00"}
	if err := detect(root, &info); err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(t.TempDir(), "rootfs.json")
	if err := WriteInfo(file, info); err != nil {
		t.Fatal(err)
	}
	got, err := ReadInfo(file)
	if err != nil {
		t.Fatal(err)
	}
	if got != info {
		t.Errorf("ReadInfo = %+v, want %+v", got, info)
	}
	if _, err := ReadInfo(filepath.Join(t.TempDir(), "missing.json")); err == nil {
		t.Error("ReadInfo of a missing file succeeded")
	}
}

func TestProgressThrottle(t *testing.T) {
	var n int
	r := &reporter{fn: func(Progress) { n++ }}
	for i := int64(1); i <= 10000; i++ {
		r.bytes(StageExtract, "x", i, 10000)
	}
	// The first report, then at most one per interval, and the final one.
	if n < 2 || n > 5 {
		t.Errorf("%d reports for 10000 quick updates", n)
	}
}
