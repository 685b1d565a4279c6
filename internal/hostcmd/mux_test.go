package hostcmd_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"den.dev/den/internal/hostcmd"
)

func serveMux(m *hostcmd.Mux, command string, args ...string) (string, string, int) {
	var o, e bytes.Buffer
	code := m.Serve(context.Background(), &hostcmd.Call{Command: command, Args: args, Stdin: strings.NewReader(""), Stdout: &o, Stderr: &e})
	return o.String(), e.String(), code
}

func TestMux(t *testing.T) {
	m := hostcmd.NewMux()
	var got string
	m.HandleFunc("den-open", "usage: den-open URL|PATH\nOpens it in the user's face.", func(ctx context.Context, c *hostcmd.Call) int {
		got = c.Command
		return hostcmd.Write(c.Stdout, hostcmd.OK(c.Command, "open", map[string]string{"target": c.Args[0]}), hostcmd.Format{Compact: true})
	})
	for _, name := range []string{"den-open", "xdg-open", "x-www-browser", "sensible-browser", "www-browser"} {
		got = ""
		out, _, code := serveMux(m, name, "https://example.com")
		if code != 0 || got != "den-open" || !strings.Contains(out, `"target":"https://example.com"`) {
			t.Errorf("%s: exit %d, handler saw %q, out %q", name, code, got, out)
		}
	}
	// --help, from the usage text, on stderr.
	out, errOut, code := serveMux(m, "xdg-open", "--help")
	if code != 0 || out != "" || !strings.HasPrefix(errOut, "usage: den-open URL|PATH\n") || !strings.Contains(errOut, "Exit codes") {
		t.Errorf("--help: exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	// ... but not after "--".
	got = ""
	if _, _, code := serveMux(m, "den-open", "--", "--help"); code != 0 || got != "den-open" {
		t.Errorf("-- --help: exit %d", code)
	}
	// Unknown names, including an alias of nothing registered.
	m.Alias("den-nothing", "den-gone")
	for _, name := range []string{"den-frobnicate", "den-nothing"} {
		out, _, code = serveMux(m, name, "--compact")
		var env struct {
			OK    bool
			Tool  string
			Error struct{ Code string }
		}
		if err := json.Unmarshal([]byte(out), &env); err != nil {
			t.Fatal(err)
		}
		if code != hostcmd.ExitNotAvailable || env.OK || env.Tool != name || env.Error.Code != hostcmd.CodeNotAvailable || strings.Count(out, "\n") != 1 {
			t.Errorf("%s: exit %d, %q", name, code, out)
		}
	}
	if diff := cmp.Diff([]string{"den-open", "sensible-browser", "www-browser", "x-www-browser", "xdg-open"}, m.Names()); diff != "" {
		t.Errorf("names (-want +got):\n%s", diff)
	}
}

func TestEnvelope(t *testing.T) {
	ts := time.Date(2025, 1, 2, 3, 4, 5, 0, time.Local)
	cases := []struct {
		env    hostcmd.Envelope
		format hostcmd.Format
		want   string
		code   int
	}{
		{hostcmd.Envelope{OK: true, Tool: "den-x", Action: "a", Data: map[string]any{"z": 1, "a": []int{1}}, Timestamp: ts}, hostcmd.Format{Compact: true},
			`{"action":"a","data":{"a":[1],"z":1},"ok":true,"timestamp":"` + ts.Format("2006-01-02T15:04:05.000Z07:00") + `","tool":"den-x"}` + "\n", 0},
		{hostcmd.OK("den-x", "a", "plain <text>"), hostcmd.Format{Quiet: true}, "plain <text>\n", 0},
		{hostcmd.OK("den-x", "a", map[string]int{"n": 1}), hostcmd.Format{Quiet: true}, "{\n  \"n\": 1\n}\n", 0},
		{hostcmd.Fail("den-x", "a", hostcmd.CodeDenied, "no"), hostcmd.Format{Quiet: true, Compact: true}, `{"code":"authorization_denied","message":"no"}` + "\n", 3},
		{hostcmd.Fail("den-x", "a", hostcmd.CodeInvalidArgs, "bad"), hostcmd.Format{Quiet: true, Compact: true}, `{"code":"invalid_args","message":"bad"}` + "\n", 2},
		{hostcmd.Fail("den-x", "a", hostcmd.CodeNotAvailable, "n/a"), hostcmd.Format{Quiet: true, Compact: true}, `{"code":"not_available","message":"n/a"}` + "\n", 4},
		{hostcmd.Fail("den-x", "a", hostcmd.CodeNoData, "none"), hostcmd.Format{Quiet: true, Compact: true}, `{"code":"no_data","message":"none"}` + "\n", 1},
		{hostcmd.Fail("den-x", "a", hostcmd.CodeInternalError, "oops"), hostcmd.Format{Quiet: true, Compact: true}, `{"code":"internal_error","message":"oops"}` + "\n", 1},
		{hostcmd.OK("den-x", "a", make(chan int)), hostcmd.Format{Quiet: true, Compact: true}, "", 1},
	}
	for i, c := range cases {
		var b bytes.Buffer
		code := hostcmd.Write(&b, c.env, c.format)
		if code != c.code {
			t.Errorf("%d: exit %d, want %d", i, code, c.code)
		}
		if c.want != "" && b.String() != c.want {
			t.Errorf("%d: got %q\nwant %q", i, b.String(), c.want)
		}
		if c.want == "" && !strings.Contains(b.String(), "internal_error") {
			t.Errorf("%d: unencodable data gave %q", i, b.String())
		}
	}
	// The default is indented; an error carries no data and vice versa.
	var b bytes.Buffer
	hostcmd.Write(&b, hostcmd.Fail("den-x", "a", hostcmd.CodeNoData, "none"), hostcmd.Format{})
	if !strings.Contains(b.String(), "\n  \"error\": {") || strings.Contains(b.String(), `"data"`) {
		t.Errorf("pretty error: %s", b.String())
	}
}

func TestParseCommon(t *testing.T) {
	f, rest := hostcmd.ParseCommon([]string{"list", "--compact", "-q", "x", "--", "--compact", "-q"})
	if !f.Compact || !f.Quiet {
		t.Errorf("format = %+v", f)
	}
	if diff := cmp.Diff([]string{"list", "x", "--", "--compact", "-q"}, rest); diff != "" {
		t.Errorf("rest (-want +got):\n%s", diff)
	}
	f, _ = hostcmd.ParseCommon([]string{"--quiet"})
	if !f.Quiet || f.Compact {
		t.Errorf("--quiet: %+v", f)
	}
}

func TestEnsureLinks(t *testing.T) {
	root := t.TempDir()
	names := hostcmd.LinkNames()
	bin := filepath.Join(root, "usr/local/bin")
	for range 2 { // idempotent
		if err := hostcmd.EnsureLinks(root, names); err != nil {
			t.Fatal(err)
		}
	}
	for _, n := range names {
		if target, err := os.Readlink(filepath.Join(bin, n)); err != nil || target != "den-hostcmd" {
			t.Errorf("%s → %q, %v", n, target, err)
		}
	}
	if fi, err := os.Lstat(filepath.Join(bin, "den-hostcmd")); err != nil || !fi.Mode().IsRegular() {
		t.Errorf("placeholder: %v %v", fi, err)
	}
	// What the computer changed is put back.
	os.Remove(filepath.Join(bin, "den-open"))
	os.WriteFile(filepath.Join(bin, "xdg-open"), []byte("#!/bin/sh\n"), 0o755)
	os.Symlink("/bin/sh", filepath.Join(bin, "den-ask"))
	if err := hostcmd.EnsureLinks(root, names); err != nil {
		t.Fatal(err)
	}
	for _, n := range []string{"den-open", "xdg-open", "den-ask"} {
		if target, _ := os.Readlink(filepath.Join(bin, n)); target != "den-hostcmd" {
			t.Errorf("%s not restored: %q", n, target)
		}
	}
	if entries, _ := os.ReadDir(bin); len(entries) != len(names)+1 {
		t.Errorf("%d entries in bin, want %d", len(entries), len(names)+1)
	}
	if err := hostcmd.EnsureLinks(root, []string{"../escape"}); err == nil {
		t.Error("a name with a slash was accepted")
	}

	// A rootfs whose /usr/local/bin leads outside it gets nothing
	// written outside.
	for _, target := range []string{"", "../../.."} {
		root := t.TempDir()
		outside := t.TempDir()
		if target == "" {
			target = outside
		}
		os.MkdirAll(filepath.Join(root, "usr/local"), 0o755)
		os.Symlink(target, filepath.Join(root, "usr/local/bin"))
		err := hostcmd.EnsureLinks(root, names)
		if !errors.Is(err, hostcmd.ErrLink) {
			t.Errorf("link to %s: err = %v", target, err)
		}
		if entries, _ := os.ReadDir(outside); len(entries) != 0 {
			t.Errorf("wrote outside the rootfs: %v", entries)
		}
		if _, err := os.Lstat(filepath.Join(filepath.Dir(root), "den-hostcmd")); err == nil {
			t.Errorf("wrote beside the rootfs")
		}
	}
}

func TestShimPath(t *testing.T) {
	data := t.TempDir()
	p1, err := hostcmd.ShimPath(data)
	if err != nil {
		t.Fatal(err)
	}
	p2, err := hostcmd.ShimPath(data)
	if err != nil || p1 != p2 {
		t.Fatalf("second call: %s %v", p2, err)
	}
	fi, err := os.Stat(p1)
	if err != nil || fi.Mode().Perm() != 0o755 || filepath.Dir(p1) != filepath.Join(data, "bin") || !strings.HasPrefix(filepath.Base(p1), "den-hostcmd-") {
		t.Fatalf("%s: %v %v", p1, fi, err)
	}
	if entries, _ := os.ReadDir(filepath.Join(data, "bin")); len(entries) != 1 {
		t.Errorf("bin holds %v", entries)
	}
	want, _ := hostcmd.Shim(runtime.GOARCH)
	if got, _ := os.ReadFile(p1); !bytes.Equal(got, want) {
		t.Error("written shim differs from the embedded one")
	}
	if _, err := hostcmd.Shim("riscv64"); !errors.Is(err, hostcmd.ErrNoShim) {
		t.Errorf("riscv64: %v", err)
	}
}

// TestShimFresh rebuilds den-hostcmd exactly as `go generate` does and
// fails when the committed binaries differ (builds with -trimpath are
// bit-for-bit reproducible on one toolchain: a new Go release also
// makes them stale).
func TestShimFresh(t *testing.T) {
	if testing.Short() {
		t.Skip("cross-compiles den-hostcmd")
	}
	goTool := filepath.Join(runtime.GOROOT(), "bin", "go")
	for _, arch := range []string{"amd64", "arm64"} {
		out := filepath.Join(t.TempDir(), "den-hostcmd")
		c := exec.Command(goTool, "build", "-trimpath", "-buildvcs=false", "-ldflags=-s -w -buildid=", "-o", out, "den.dev/den/cmd/den-hostcmd")
		c.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS=linux", "GOARCH="+arch, "GOAMD64=v1", "GOARM64=v8.0", "GOFLAGS=")
		if msg, err := c.CombinedOutput(); err != nil {
			t.Fatalf("build %s: %v\n%s", arch, err, msg)
		}
		built, _ := os.ReadFile(out)
		embedded, _ := hostcmd.Shim(arch)
		if !bytes.Equal(built, embedded) {
			t.Errorf("shim/den-hostcmd-linux-%s is stale (or was built by another Go than %s): run `go generate ./internal/hostcmd`", arch, runtime.Version())
		}
	}
}

// den-hostcmd uses the standard library and the wire package only.
func TestShimDeps(t *testing.T) {
	goTool := filepath.Join(runtime.GOROOT(), "bin", "go")
	out, err := exec.Command(goTool, "list", "-deps", "-f", "{{if not .Standard}}{{.ImportPath}}{{end}}", "den.dev/den/cmd/den-hostcmd").Output()
	if err != nil {
		t.Fatal(err)
	}
	got := strings.Fields(string(out))
	if diff := cmp.Diff([]string{"den.dev/den/internal/hostcmd/wire", "den.dev/den/cmd/den-hostcmd"}, got); diff != "" {
		t.Errorf("non-standard dependencies (-want +got):\n%s", diff)
	}
}
