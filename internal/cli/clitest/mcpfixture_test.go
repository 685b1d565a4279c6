package clitest

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"den.dev/den/internal/computer"
	"den.dev/den/internal/sandbox"
	"den.dev/den/internal/sandbox/sandboxtest"
)

// The MCP servers the tests run, pinned.
const (
	everythingPkg = "@modelcontextprotocol/server-everything@2026.8.31"
	filesystemPkg = "@modelcontextprotocol/server-filesystem@2026.8.31"
	// nodeLayerName is the cached Debian computer with Node.js (Debian's
	// nodejs and npm) and the servers installed as npm install -g would.
	nodeLayerName = "debian-bookworm-node-mcp-2026.8.31.tar"
)

// testCache is where slow fixtures are kept between runs (the
// debootstrapped base is there too): DEN_TEST_CACHE, else
// /var/cache/den-test as root, else ~/.cache/den-test.
func testCache(t testing.TB) string {
	t.Helper()
	dir := os.Getenv("DEN_TEST_CACHE")
	if dir == "" {
		if os.Geteuid() == 0 {
			dir = "/var/cache/den-test"
		} else {
			home, _ := os.UserHomeDir()
			dir = filepath.Join(home, ".cache", "den-test")
		}
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	return dir
}

// cacheLock holds an exclusive lock on name in the cache while a
// fixture is made, so that test binaries running at once make it once.
func cacheLock(t testing.TB, name string) func() {
	t.Helper()
	f, err := os.OpenFile(filepath.Join(testCache(t), name+".lock"), os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX); err != nil {
		t.Fatal(err)
	}
	return func() {
		syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
		f.Close()
	}
}

// nodeLayer is a Debian computer with Node.js and the servers' npm
// packages, as a tar for den's rootfs = "tar:…": made once per machine
// from the cached Debian base (debootstrap), Node.js installed with
// apt-get inside the computer, and the packages npmPackages installed
// on the host copied in where npm install -g puts them (with their
// commands in /usr/local/bin), and kept in the test cache. The packages
// are installed on the host because the computer's network may not
// trust what the host's does (a TLS-inspecting proxy's CA).
func nodeLayer(t testing.TB) string {
	t.Helper()
	mods := npmPackages(t)
	sandboxtest.Need(t, "debootstrap", "debootstrap")
	sandboxtest.NeedRoot(t, "the Debian computer with Node.js needs debootstrap, which needs root")
	out := filepath.Join(testCache(t), nodeLayerName)
	defer cacheLock(t, nodeLayerName)()
	if _, err := os.Stat(out); err == nil {
		return out
	}
	c := debianComputer(t, "node")
	ctx := context.Background()
	s, err := c.Start(ctx, "build", computer.SessionOptions{Network: true})
	if err != nil {
		t.Fatal(err)
	}
	script := "set -e; export DEBIAN_FRONTEND=noninteractive; apt-get update -q; apt-get install -y -q --no-install-recommends nodejs npm ca-certificates; apt-get clean"
	r, err := s.Run(ctx, sandbox.Command{Script: script, Timeout: 20 * time.Minute})
	if err != nil || r.ExitCode != 0 {
		s.Close()
		t.Fatalf("installing Node.js in a Debian computer: %v\n%s", err, r.Output)
	}
	lib := filepath.Join(c.Rootfs(), "usr", "local", "lib", "node_modules")
	if out, err := exec.Command("cp", "-a", mods+"/.", lib).CombinedOutput(); err != nil {
		s.Close()
		t.Fatalf("copy the npm packages in: %v\n%s", err, out)
	}
	ids, err := c.Manager().IDs()
	if err != nil {
		t.Fatal(err)
	}
	if uid, gid, ok := ids.Root(); ok && os.Geteuid() == 0 {
		filepath.Walk(lib, func(p string, _ os.FileInfo, err error) error {
			if err == nil {
				err = os.Lchown(p, uid, gid)
			}
			return err
		})
	}
	script = "set -e; cd /usr/local/bin; for s in everything filesystem; do ln -sf ../lib/node_modules/@modelcontextprotocol/server-$s/dist/index.js mcp-server-$s; chmod +x mcp-server-$s; done; " +
		"node --version; mcp-server-everything </dev/null >/dev/null 2>&1 || true; command -v mcp-server-everything mcp-server-filesystem"
	r, err = s.Run(ctx, sandbox.Command{Script: script, Timeout: time.Minute})
	s.Close()
	if err != nil || r.ExitCode != 0 {
		t.Fatalf("installing the servers' commands: %v\n%s", err, r.Output)
	}
	f, err := os.CreateTemp(testCache(t), nodeLayerName+".tmp-")
	if err != nil {
		t.Fatal(err)
	}
	defer os.Remove(f.Name())
	if err := c.Export(ctx, f); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(f.Name(), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(f.Name(), out); err != nil {
		t.Fatal(err)
	}
	return out
}

// npmPackages installs the MCP servers' npm packages on the host, once
// per machine, in the test cache, and returns their node_modules.
func npmPackages(t testing.TB) string {
	t.Helper()
	sandboxtest.Need(t, "npm", "npm")
	sandboxtest.Need(t, "node", "nodejs")
	dir := filepath.Join(testCache(t), "npm-mcp-2026.8.31")
	mods := filepath.Join(dir, "node_modules")
	defer cacheLock(t, "npm-mcp-2026.8.31")()
	if _, err := os.Stat(filepath.Join(mods, ".den-complete")); err == nil {
		return mods
	}
	os.RemoveAll(dir)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("npm", "install", "--no-audit", "--no-fund", "--prefix", dir, everythingPkg, filesystemPkg)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("npm install %s %s: %v\n%s", everythingPkg, filesystemPkg, err, out)
	}
	if err := os.WriteFile(filepath.Join(mods, ".den-complete"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	return mods
}

// TestMCPFixtures makes the cached fixtures the MCP tests use, so that
// a run that only wants them can ask for them (go test -run
// TestMCPFixtures).
func TestMCPFixtures(t *testing.T) {
	if p := nodeLayer(t); p == "" {
		t.Fatal("no node layer")
	}
	mods := npmPackages(t)
	for _, bin := range []string{"@modelcontextprotocol/server-everything/dist/index.js", "@modelcontextprotocol/server-filesystem/dist/index.js"} {
		if _, err := os.Stat(filepath.Join(mods, bin)); err != nil {
			t.Error(fmt.Errorf("the npm fixture lacks %s: %w", bin, err))
		}
	}
}
