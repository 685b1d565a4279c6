package rootfs

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// requireBootstrapper fails in CI (skips elsewhere) when no Debian base can
// be built here.
func requireBootstrapper(t testing.TB) {
	t.Helper()
	if os.Geteuid() == 0 {
		requireTool(t, "debootstrap", "debootstrap")
	} else {
		requireTool(t, "mmdebstrap", "mmdebstrap")
	}
}

var debianMu sync.Mutex

// debianRoot provisions debian:bookworm with the persistent test cache.
func debianRoot(t testing.TB, log *progressLog) (string, Info) {
	t.Helper()
	requireBootstrapper(t)
	debianMu.Lock()
	defer debianMu.Unlock()
	dst := filepath.Join(t.TempDir(), "rootfs")
	opts := Options{CacheDir: testCache(t)}
	if log != nil {
		opts.Progress = log.add
	}
	start := time.Now()
	info, err := Provision(context.Background(), dst, Source{Kind: Debian}, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("debian provisioned in %v", time.Since(start))
	return dst, info
}

func TestDebian(t *testing.T) {
	var log progressLog
	root, info := debianRoot(t, &log)
	if log.has(StageExtract, "using cached base") {
		t.Log("used the cached base")
	} else if !log.has(StageBootstrap, "I: Base system installed successfully") {
		t.Errorf("no debootstrap output in progress:\n%s", log.String())
	}
	if info.Distro != DistroDebian || info.Codename != "bookworm" || info.PackageManager != Apt || info.Source != "debian" || info.Mirror == "" {
		t.Errorf("info = %+v", info)
	}
	mirror, err := hostDebianMirror("bookworm")
	if err != nil {
		t.Fatal(err)
	}
	if got, want := readFile(t, filepath.Join(root, "etc/apt/sources.list")), "deb "+mirror+" bookworm main\n"; got != want {
		t.Errorf("sources.list = %q, want %q", got, want)
	}
	if fi, err := os.Stat(filepath.Join(root, "usr/sbin/policy-rc.d")); err != nil || fi.Mode().Perm() != 0o755 {
		t.Errorf("policy-rc.d: %v %v", fi, err)
	}
	out := bwrap(t, root, []string{"--perms", "1777", "--tmpfs", "/tmp", "--unshare-pid", "--unshare-ipc", "--unshare-uts", "--die-with-parent"},
		"cat /etc/os-release; apt-config dump | grep Sandbox; /usr/sbin/policy-rc.d; echo rc=$?")
	for _, want := range []string{"ID=debian", `VERSION_CODENAME=bookworm`, `APT::Sandbox::User "root";`, "rc=101"} {
		if !strings.Contains(out, want) {
			t.Errorf("sandbox output lacks %q:\n%s", want, out)
		}
	}
	arch, _ := dpkgArch(runtime.GOARCH)
	cache := filepath.Join(testCache(t), "debian-bookworm-"+arch+".tar")
	if _, err := os.Stat(cache); err != nil {
		t.Errorf("no cached base: %v", err)
	}
}

// TestDebootstrapCancel interrupts a real debootstrap: the process group
// must stop and nothing may be left. (Detaching mounts a bootstrapper left
// behind is covered by TestRemoveTreeUnmounts.)
func TestDebootstrapCancel(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("debootstrap runs only as root")
	}
	requireTool(t, "debootstrap", "debootstrap")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var log progressLog
	start := time.Now()
	var canceledAt time.Duration
	dst := filepath.Join(t.TempDir(), "rootfs")
	_, err := Provision(ctx, dst, Source{Kind: Debian}, Options{
		CacheDir: t.TempDir(), // empty: forces a bootstrap
		Progress: func(p Progress) {
			log.add(p)
			if p.Stage == StageBootstrap && strings.HasPrefix(p.Message, "I: Resolving dependencies") && ctx.Err() == nil {
				canceledAt = time.Since(start)
				cancel()
			}
		},
	})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("Provision = %v, want context.Canceled\n%s", err, log.String())
	}
	t.Logf("canceled after %v, returned after %v", canceledAt, time.Since(start))
	assertClean(t, dst)
	if mps := mountsUnder(filepath.Dir(dst)); len(mps) > 0 {
		t.Errorf("mounts left behind: %v", mps)
	}
}

// TestRemoveTreeUnmounts checks that removing a half-built tree detaches
// mounts inside it first, so a bind mount (say, of the host's /dev) is never
// emptied.
func TestRemoveTreeUnmounts(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("mounting needs root")
	}
	base := t.TempDir()
	host := filepath.Join(base, "host")
	tree := filepath.Join(base, "tree")
	for _, d := range []string{host, filepath.Join(tree, "dev"), filepath.Join(tree, "proc")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	precious := filepath.Join(host, "precious")
	if err := os.WriteFile(precious, []byte("keep"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := unix.Mount(host, filepath.Join(tree, "dev"), "", unix.MS_BIND, ""); err != nil {
		t.Fatal(err)
	}
	if err := unix.Mount("proc", filepath.Join(tree, "proc"), "proc", 0, ""); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		for _, mp := range mountsUnder(tree) {
			unix.Unmount(mp, unix.MNT_DETACH)
		}
	})
	removeTree(tree)
	if got := readFile(t, precious); got != "keep" {
		t.Errorf("bind-mounted file = %q", got)
	}
	if mps := mountsUnder(tree); len(mps) > 0 {
		t.Errorf("mounts left: %v", mps)
	}
	if _, err := os.Lstat(tree); err == nil {
		t.Error("tree not removed")
	}
}
