// Package sessiontest makes a real runtime for the tests of den's faces:
// a fresh data dir and store, and agents whose computers are busybox
// ones under the real sandbox (bubblewrap).
package sessiontest

import (
	"context"
	"path/filepath"
	"testing"

	"den.dev/den/internal/computer"
	"den.dev/den/internal/config"
	"den.dev/den/internal/sandbox/bwrap"
	"den.dev/den/internal/sandbox/rootfs"
	"den.dev/den/internal/sandbox/sandboxtest"
	"den.dev/den/internal/session"
	"den.dev/den/internal/store"
)

// Env is a runtime with its store and data dir.
type Env struct {
	RT    *session.Runtime
	Store *store.Store
	Dir   string
}

// New starts a runtime with cfg (nil: an empty config), closed when the
// test ends. The model is whatever the environment points the agent's
// provider at (a fake, set with t.Setenv before).
func New(t testing.TB, cfg *config.Config) *Env {
	t.Helper()
	sandboxtest.Need(t, "bwrap", "bubblewrap")
	sandboxtest.Need(t, "busybox", "busybox-static")
	dir := t.TempDir()
	st, err := store.Open(filepath.Join(dir, "den.db"))
	if err != nil {
		t.Fatal(err)
	}
	b, err := bwrap.New("")
	if err != nil {
		t.Fatal(err)
	}
	m, err := computer.New(dir, b)
	if err != nil {
		t.Fatal(err)
	}
	if cfg == nil {
		cfg = &config.Config{}
	}
	rt, err := session.New(session.Options{Store: st, DataDir: dir, Config: cfg, Holder: "test",
		// No MCP servers but a test's own: never the user's file.
		MCP: filepath.Join(dir, "mcp.json"),
		Computer: func(ctx context.Context, agent string) (*computer.Computer, computer.SessionOptions, error) {
			c, err := m.Computer(agent)
			if err != nil {
				return nil, computer.SessionOptions{}, err
			}
			if _, err := c.Ensure(ctx, rootfs.Source{Kind: rootfs.Busybox}, true); err != nil {
				return nil, computer.SessionOptions{}, err
			}
			return c, computer.SessionOptions{}, nil
		}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		rt.Close()
		st.Close()
	})
	return &Env{RT: rt, Store: st, Dir: dir}
}
