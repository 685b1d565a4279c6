package rootfs

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
)

// alpineServer is a fake Alpine mirror speaking the real layout:
// {mirror}/{latest-stable,v3.21}/releases/{arch}/latest-releases.yaml and
// the minirootfs tarball with its .sha256 next to it.
type alpineServer struct {
	*httptest.Server
	mu    sync.Mutex
	files map[string][]byte
	hits  map[string]int
	fail  int // HTTP status to answer everything with, if set
}

const testAlpineVersion = "3.21.3"

func newAlpineServer(t *testing.T, tarball []byte, published string) *alpineServer {
	t.Helper()
	arch, err := alpineArch(runtime.GOARCH)
	if err != nil {
		t.Skip(err)
	}
	file := fmt.Sprintf("alpine-minirootfs-%s-%s.tar.gz", testAlpineVersion, arch)
	if published == "" {
		sum := sha256.Sum256(tarball)
		published = hex.EncodeToString(sum[:])
	}
	yaml := fmt.Sprintf(`---
-
  title: "Standard"
  flavor: alpine-standard
  file: alpine-standard-%[1]s-%[2]s.iso
  version: %[1]s
  sha256: %[3]s
-
  title: "Mini root filesystem"
  desc: "Minimal root filesystem.\nFor use in containers\nand minimal chroots."
  branch: v3.21
  arch: %[2]s
  version: %[1]s
  flavor: alpine-minirootfs
  file: %[4]s
  iso: %[4]s
  date: 2025-02-14
  time: 00:40:39
  size: %[5]d
  sha256: %[3]s
  sha512: 00
`, testAlpineVersion, arch, published, file, len(tarball))
	s := &alpineServer{files: map[string][]byte{}, hits: map[string]int{}}
	for _, branch := range []string{"latest-stable", "v3.21"} {
		dir := "/alpine/" + branch + "/releases/" + arch + "/"
		s.files[dir+"latest-releases.yaml"] = []byte(yaml)
		s.files[dir+file] = tarball
		s.files[dir+file+".sha256"] = []byte(published + "  " + file + "\n")
	}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		s.hits[r.URL.Path]++
		body, ok := s.files[r.URL.Path]
		fail := s.fail
		s.mu.Unlock()
		switch {
		case fail != 0:
			http.Error(w, "failing", fail)
		case !ok:
			http.NotFound(w, r)
		default:
			w.Header().Set("Content-Length", fmt.Sprint(len(body)))
			w.Write(body)
		}
	}))
	t.Cleanup(s.Close)
	return s
}

func (s *alpineServer) mirror() string { return s.URL + "/alpine" }

// tarballHits counts the requests for minirootfs tarballs.
func (s *alpineServer) tarballHits() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for p, c := range s.hits {
		if strings.HasSuffix(p, ".tar.gz") {
			n += c
		}
	}
	return n
}

func (s *alpineServer) totalHits() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for _, c := range s.hits {
		n += c
	}
	return n
}

// minirootfs builds a tarball shaped like Alpine's minirootfs from the
// busybox rootfs.
func minirootfs(t *testing.T) []byte {
	t.Helper()
	root := busyboxRoot(t)
	for name, body := range map[string]string{
		"etc/alpine-release":   testAlpineVersion + "\n",
		"etc/os-release":       "NAME=\"Alpine Linux\"\nID=alpine\nVERSION_ID=" + testAlpineVersion + "\nPRETTY_NAME=\"Alpine Linux v3.21\"\n",
		"sbin/apk":             "#!/bin/sh\necho apk stub\n",
		"etc/apk/repositories": "https://mirror.invalid/alpine/v3.21/main\n",
	} {
		p := filepath.Join(root, name)
		os.MkdirAll(filepath.Dir(p), 0o755)
		if err := os.WriteFile(p, []byte(body), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	out := filepath.Join(t.TempDir(), "mini.tar.gz")
	tarDir(t, root, out, "-z")
	data, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// closedURL returns the URL of a server that no longer listens.
func closedURL(t *testing.T) string {
	t.Helper()
	s := httptest.NewServer(http.NotFoundHandler())
	u := s.URL
	s.Close()
	return u + "/alpine"
}

func TestAlpine(t *testing.T) {
	tarball := minirootfs(t)
	sum := sha256.Sum256(tarball)
	wantSum := hex.EncodeToString(sum[:])
	srv := newAlpineServer(t, tarball, "")
	cache := t.TempDir()
	provision := func(t *testing.T, src Source, opts Options) (string, Info, *progressLog, error) {
		t.Helper()
		var log progressLog
		opts.Progress = log.add
		dst := filepath.Join(t.TempDir(), "agents", "x", "rootfs")
		info, err := Provision(context.Background(), dst, src, opts)
		return dst, info, &log, err
	}

	t.Run("latest", func(t *testing.T) {
		dst, info, log, err := provision(t, Source{Kind: Alpine}, Options{AlpineMirror: srv.mirror(), CacheDir: cache})
		if err != nil {
			t.Fatal(err)
		}
		if info.Distro != DistroAlpine || info.Version != testAlpineVersion || info.PackageManager != Apk ||
			info.Checksum != "sha256:"+wantSum || info.Mirror != srv.mirror() || info.Source != "alpine" {
			t.Errorf("info = %+v", info)
		}
		want := srv.mirror() + "/v3.21/main\n" + srv.mirror() + "/v3.21/community\n"
		if got := readFile(t, filepath.Join(dst, "etc/apk/repositories")); got != want {
			t.Errorf("repositories = %q, want %q", got, want)
		}
		if srv.tarballHits() != 1 {
			t.Errorf("%d tarball downloads, want 1", srv.tarballHits())
		}
		for _, stage := range []Stage{StageDownload, StageVerify, StageExtract, StageSetup} {
			if !log.has(stage, "") {
				t.Errorf("no %s progress:\n%s", stage, log)
			}
		}
		if out := bwrap(t, dst, nil, "cat /etc/alpine-release"); out != testAlpineVersion+"\n" {
			t.Errorf("alpine-release in the sandbox = %q", out)
		}
	})

	t.Run("cached", func(t *testing.T) {
		before := srv.tarballHits()
		_, info, log, err := provision(t, Source{Kind: Alpine}, Options{AlpineMirror: srv.mirror(), CacheDir: cache})
		if err != nil {
			t.Fatal(err)
		}
		if srv.tarballHits() != before {
			t.Errorf("the cached tarball was downloaded again")
		}
		if !log.has(StageVerify, "using cached") || info.Checksum != "sha256:"+wantSum {
			t.Errorf("info %+v, progress:\n%s", info, log)
		}
	})

	t.Run("branch", func(t *testing.T) {
		_, info, _, err := provision(t, Source{Kind: Alpine, Version: "3.21"}, Options{AlpineMirror: srv.mirror()})
		if err != nil {
			t.Fatal(err)
		}
		if info.Version != testAlpineVersion || info.Source != "alpine:3.21" {
			t.Errorf("info = %+v", info)
		}
	})

	t.Run("exact", func(t *testing.T) {
		cache := t.TempDir()
		src := Source{Kind: Alpine, Version: testAlpineVersion}
		if _, _, _, err := provision(t, src, Options{AlpineMirror: srv.mirror(), CacheDir: cache}); err != nil {
			t.Fatal(err)
		}
		// An exact version is then reusable with no network at all.
		hits := srv.totalHits()
		if _, info, _, err := provision(t, src, Options{AlpineMirror: closedURL(t), CacheDir: cache}); err != nil || info.Checksum != "sha256:"+wantSum {
			t.Fatalf("offline exact version: %+v, %v", info, err)
		}
		if srv.totalHits() != hits {
			t.Error("the mirror was contacted for a cached exact version")
		}
	})

	t.Run("corrupt-cache", func(t *testing.T) {
		cache := t.TempDir()
		arch, _ := alpineArch(runtime.GOARCH)
		name := filepath.Join(cache, fmt.Sprintf("alpine-minirootfs-%s-%s.tar.gz", testAlpineVersion, arch))
		os.WriteFile(name, []byte("bit rot"), 0o644)
		_, _, log, err := provision(t, Source{Kind: Alpine}, Options{AlpineMirror: srv.mirror(), CacheDir: cache})
		if err != nil {
			t.Fatal(err)
		}
		if !log.has(StageVerify, "does not match") || fileHash(t, name) != sum {
			t.Errorf("corrupt cache entry not replaced; progress:\n%s", log)
		}
	})

	t.Run("not-found", func(t *testing.T) {
		dst, _, _, err := provision(t, Source{Kind: Alpine, Version: "3.99.1"}, Options{AlpineMirror: srv.mirror(), FallbackToDebian: true})
		if !errors.Is(err, ErrNotFound) || errors.Is(err, ErrUnreachable) {
			t.Fatalf("Provision = %v, want ErrNotFound", err)
		}
		assertClean(t, dst)
	})

	t.Run("checksum-mismatch", func(t *testing.T) {
		bad := strings.Repeat("ab", 32)
		srv := newAlpineServer(t, tarball, bad)
		cache := t.TempDir()
		dst, _, log, err := provision(t, Source{Kind: Alpine}, Options{AlpineMirror: srv.mirror(), CacheDir: cache, FallbackToDebian: true})
		if !errors.Is(err, ErrChecksum) {
			t.Fatalf("Provision = %v, want ErrChecksum", err)
		}
		if !strings.Contains(err.Error(), bad) || !strings.Contains(err.Error(), wantSum) {
			t.Errorf("error %q does not name the expected and actual sums", err)
		}
		if log.has(StageFallback, "") {
			t.Error("a checksum mismatch triggered the fallback")
		}
		assertClean(t, dst)
		if ents, _ := os.ReadDir(cache); len(ents) != 0 {
			t.Errorf("bad download kept in the cache: %v", ents)
		}
	})

	t.Run("truncated", func(t *testing.T) {
		short := tarball[:len(tarball)*2/3]
		srv := newAlpineServer(t, short, "") // the checksum matches the short file
		cache := t.TempDir()
		dst, _, _, err := provision(t, Source{Kind: Alpine}, Options{AlpineMirror: srv.mirror(), CacheDir: cache})
		if !errors.Is(err, ErrCorrupt) {
			t.Fatalf("Provision = %v, want ErrCorrupt", err)
		}
		assertClean(t, dst)
	})

	t.Run("server-error", func(t *testing.T) {
		srv := newAlpineServer(t, tarball, "")
		srv.fail = http.StatusServiceUnavailable
		dst, _, _, err := provision(t, Source{Kind: Alpine}, Options{AlpineMirror: srv.mirror()})
		if !errors.Is(err, ErrUnreachable) {
			t.Fatalf("Provision = %v, want ErrUnreachable", err)
		}
		assertClean(t, dst)
	})

	t.Run("unreachable-explicit", func(t *testing.T) {
		dst, _, log, err := provision(t, Source{Kind: Alpine, Version: "3.21"}, Options{AlpineMirror: closedURL(t), FallbackToDebian: true, CacheDir: t.TempDir()})
		if !errors.Is(err, ErrUnreachable) {
			t.Fatalf("Provision = %v, want ErrUnreachable", err)
		}
		if log.has(StageFallback, "") {
			t.Errorf("an explicit version fell back:\n%s", log)
		}
		assertClean(t, dst)
	})

	t.Run("unreachable-default-no-fallback", func(t *testing.T) {
		dst, _, _, err := provision(t, Source{Kind: Alpine}, Options{AlpineMirror: closedURL(t)})
		if !errors.Is(err, ErrUnreachable) {
			t.Fatalf("Provision = %v, want ErrUnreachable", err)
		}
		assertClean(t, dst)
	})
}

func TestAlpineFallback(t *testing.T) {
	requireBootstrapper(t)
	debianRoot(t, nil) // make sure the cached base exists
	var log progressLog
	dst := filepath.Join(t.TempDir(), "rootfs")
	info, err := Provision(context.Background(), dst, DefaultSource(), Options{
		AlpineMirror:     closedURL(t),
		FallbackToDebian: true,
		CacheDir:         testCache(t),
		Progress:         log.add,
	})
	if err != nil {
		t.Fatal(err)
	}
	if info.Distro != DistroDebian || info.Requested != "alpine" || info.Source != "debian" {
		t.Errorf("info = %+v", info)
	}
	if !log.has(StageFallback, "alpine mirror unreachable") || !log.has(StageFallback, "falling back to debian bookworm from http") {
		t.Errorf("fallback not reported:\n%s", log.String())
	}
	if !log.has(StageExtract, "using cached base") {
		t.Errorf("fallback did not use the cached base:\n%s", log.String())
	}
}

func TestParseReleases(t *testing.T) {
	items := parseReleases([]byte("---\n- title: \"a\"\n  flavor: alpine-minirootfs\n  file: f.tar.gz\n  sha256: 'AB'\n-\n  flavor: x\n"))
	if len(items) != 2 || items[0]["file"] != "f.tar.gz" || items[0]["sha256"] != "AB" || items[1]["flavor"] != "x" {
		t.Errorf("parseReleases = %v", items)
	}
	for in, want := range map[string]string{"3.21.3": "v3.21", "3.22.0_alpha20250108": "edge", "edge": "edge"} {
		if got := alpineBranch(in); got != want {
			t.Errorf("alpineBranch(%q) = %q, want %q", in, got, want)
		}
	}
}
