package egress_test

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"den.dev/den/internal/egress"
	"den.dev/den/internal/sandbox/bwrap"
	"den.dev/den/internal/sandbox/sandboxtest"
)

// TestHostProgram: a program of the host's that den confines (an MCP
// server that runs on the host with a policy of its own) reaches what
// its policy allows, through den, and nothing else: not a denied name,
// not the host's loopback, not a raw socket; it keeps the host's files
// and its user; as root it has no capability left. Each connection is
// recorded as the server's, and a refusal says how to allow the host
// for that server.
func TestHostProgram(t *testing.T) {
	sandboxtest.Need(t, "bwrap", "bubblewrap")
	if os.Geteuid() != 0 {
		sandboxtest.Need(t, "nsenter", "util-linux")
	}
	probe := probePath(t)
	ok, no := httpServer(t, "allowed-http"), httpServer(t, "denied-http")
	recs := &records{}
	p := egress.New(egress.Options{Hosts: map[string]string{allowed + ":80": ok.addr, denied + ":80": no.addr}})
	pol, err := egress.ParsePolicy("allowlist", []string{allowed})
	if err != nil {
		t.Fatal(err)
	}
	pol.Of = "mcp:files"
	b, err := bwrap.New("")
	if err != nil {
		t.Fatal(err)
	}
	run := func(t *testing.T, name string, args ...string) string {
		t.Helper()
		n := p.Net(egress.Scope{Agent: "tester", Session: "s1", Policy: pol, Record: recs.add})
		cmd := exec.Command(name, args...)
		var out bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &out
		c, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		stop, err := b.StartOnHost(c, cmd, n)
		if err != nil {
			t.Fatalf("StartOnHost %s: %v", name, err)
		}
		err = cmd.Wait()
		stop()
		if err != nil {
			t.Fatalf("%s %v: %v\n%s", name, args, err, out.String())
		}
		return strings.TrimSpace(out.String())
	}

	t.Run("allowed", func(t *testing.T) {
		if out := run(t, probe, "http", "http://"+allowed+"/"); !strings.Contains(out, "ok: 200 "+ok.token) {
			t.Fatalf("GET http://%s/: %s", allowed, out)
		}
		if rec := recs.wait(t, allowed, 80); !rec.Allowed || rec.Via != "mcp:files" || rec.In == 0 {
			t.Errorf("record: %+v", rec)
		}
	})
	t.Run("denied", func(t *testing.T) {
		out := run(t, probe, "http", "http://"+denied+"/")
		if !strings.Contains(out, "ok: 403") || !strings.Contains(out, "MCP server files's egress policy") ||
			!strings.Contains(out, "den network allow --mcp files "+denied) {
			t.Errorf("GET http://%s/: want a 403 saying how to allow it for the server, got %s", denied, out)
		}
		if rec := recs.wait(t, denied, 80); rec.Allowed || rec.Via != "mcp:files" {
			t.Errorf("record: %+v", rec)
		}
		if no.hits.Load() != 0 {
			t.Errorf("the denied server was reached")
		}
	})
	t.Run("host loopback", func(t *testing.T) {
		for _, addr := range []string{no.addr, "localhost:" + strings.Split(no.addr, ":")[1]} {
			if out := run(t, probe, "http", "http://"+addr+"/"); strings.Contains(out, no.token) || !strings.HasPrefix(out, "error:") {
				t.Errorf("GET http://%s/ (the host's loopback): %s", addr, out)
			}
		}
		if no.hits.Load() != 0 {
			t.Errorf("the host's loopback was reached")
		}
	})
	t.Run("raw socket", func(t *testing.T) {
		if out := run(t, probe, "raw"); !strings.HasPrefix(out, "error:") {
			t.Errorf("raw socket: %s", out)
		}
	})
	t.Run("host files and user", func(t *testing.T) {
		f := filepath.Join(t.TempDir(), "note")
		if err := os.WriteFile(f, []byte("the host's file"), 0o644); err != nil {
			t.Fatal(err)
		}
		out := run(t, "/bin/sh", "-c", "cat "+f+"; echo; id -u; grep CapEff /proc/self/status")
		lines := strings.Split(out, "\n")
		if len(lines) != 3 || lines[0] != "the host's file" || lines[1] != strconv.Itoa(os.Getuid()) || lines[2] != "CapEff:\t0000000000000000" {
			t.Errorf("the program's view: %q, want the host's file, uid %d and no capability", out, os.Getuid())
		}
	})
}

// TestHostProgramUnprivileged runs TestHostProgram as an ordinary user:
// the program then runs in a user namespace of its own, and den joins
// its network namespace through nsenter and its helper.
func TestHostProgramUnprivileged(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("already an ordinary user: TestHostProgram runs as one")
	}
	sandboxtest.Need(t, "bwrap", "bubblewrap")
	sandboxtest.Need(t, "nsenter", "util-linux")
	probe := probePath(t)
	u := sandboxtest.NewUser(t)
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	bin := u.Install(t, self, "egress.test")
	c, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd := u.Command(c, bin, "-test.run=^TestHostProgram$", "-test.v", "-test.count=1")
	cmd.Env = append(cmd.Env, "DEN_TEST_PROBE="+probe)
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "--- PASS: TestHostProgram ") || strings.Contains(string(out), "SKIP") {
		t.Errorf("TestHostProgram as %s: %v\n%s", u.Name, err, out)
	}
}
