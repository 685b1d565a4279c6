package computer

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"den.dev/den/internal/egress"
	"den.dev/den/internal/hostfs"
	"den.dev/den/internal/sandbox"
	"den.dev/den/internal/secret"
)

// Where the computer finds den's CA: its own file, and the system
// bundle den adds it to (Debian, Ubuntu and Alpine keep theirs there;
// update-ca-certificates rebuilds it from /usr/local/share too).
const (
	caDir     = "usr/local/share/ca-certificates"
	caFile    = "den-egress.crt"
	caGuest   = "/" + caDir + "/" + caFile
	bundle    = "etc/ssl/certs/ca-certificates.crt"
	maxBundle = 16 << 20
)

// Secrets are the secrets of den's data dir, made at first use when
// unset.
func (m *Manager) secretStore() *secret.Store {
	m.egressMu.Lock()
	defer m.egressMu.Unlock()
	if m.Secrets == nil {
		m.Secrets = secret.Open(m.dataDir)
	}
	return m.Secrets
}

// ca is the agent's CA, kept in DATA/egress/AGENT (outside every
// folder a computer sees), made at its first use.
func (m *Manager) ca(agent string) (*egress.CA, error) {
	m.egressMu.Lock()
	defer m.egressMu.Unlock()
	if ca, ok := m.cas[agent]; ok {
		return ca, nil
	}
	ca, err := EgressCA(m.dataDir, agent)
	if err != nil {
		return nil, err
	}
	if m.cas == nil {
		m.cas = map[string]*egress.CA{}
	}
	m.cas[agent] = ca
	return ca, nil
}

// EgressCA loads (or makes) the CA of agent's computer, kept in
// DATA/egress/AGENT.
func EgressCA(dataDir, agent string) (*egress.CA, error) {
	return egress.LoadCA(filepath.Join(dataDir, "egress", agent), "den egress CA for agent "+agent)
}

// egress completes a session's egress scope with the agent's CA and
// secrets, installs the CA in the computer's trust store, and returns
// the environment the computer's processes get for them: a placeholder
// per secret, and where tools with bundles of their own find the CA.
func (c *Computer) egress(o *SessionOptions) ([]string, error) {
	ca, err := c.m.ca(c.agent)
	if err != nil {
		return nil, err
	}
	store := c.m.secretStore()
	agent := c.agent
	o.Egress.CA = ca
	o.Egress.Secrets = func() []secret.Secret {
		list, err := store.For(agent)
		if err != nil {
			return nil // a broken file: no secret goes out
		}
		return list
	}
	hasBundle, err := c.trust(ca.PEM())
	if err != nil {
		return nil, fmt.Errorf("computer: install den's CA in the computer: %w", err)
	}
	env := []string{"NODE_EXTRA_CA_CERTS=" + caGuest}
	if hasBundle {
		b := "/" + bundle
		env = append(env, "SSL_CERT_FILE="+b, "REQUESTS_CA_BUNDLE="+b, "PIP_CERT="+b)
	}
	list, err := store.For(agent)
	if err != nil {
		return nil, err
	}
	for _, s := range list {
		env = append(env, s.Name+"="+s.Placeholder())
	}
	return env, nil
}

// trust puts pem in the computer's trust store: its own file in
// /usr/local/share/ca-certificates, and at the end of the system bundle
// when there is one (made when the folder is there but not the file).
// It writes as root inside, never following a link the computer made.
// hasBundle says whether the bundle holds it.
func (c *Computer) trust(pem []byte) (hasBundle bool, err error) {
	var owner *hostfs.Owner
	if uid, gid, ok := c.m.ids.Root(); ok && os.Geteuid() == 0 {
		owner = &hostfs.Owner{UID: uid, GID: gid}
	}
	root, err := hostfs.OpenDir(c.Rootfs())
	if err != nil {
		return false, err
	}
	defer root.Close()
	dir := root
	for _, name := range strings.Split(caDir, "/") {
		sub, _, err := dir.Mkdir(name, 0o755, owner)
		if dir != root {
			dir.Close()
		}
		if err != nil {
			return false, err
		}
		dir = sub
	}
	defer dir.Close()
	if old, err := dir.ReadFile(caFile, maxBundle); err != nil || !bytes.Equal(old, pem) {
		if err := dir.WriteFile(caFile, pem, 0o644, owner, false); err != nil {
			return false, err
		}
	}
	certs, err := root.Sub(filepath.Dir(bundle))
	if err != nil {
		return false, nil // no /etc/ssl/certs: a computer without TLS tools
	}
	defer certs.Close()
	name := filepath.Base(bundle)
	old, err := certs.ReadFile(name, maxBundle)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		old = nil
	case err != nil:
		return false, nil // a link or something odd: leave it to the computer
	case bytes.Contains(old, pem):
		return true, nil
	}
	if len(old) > 0 && !bytes.HasSuffix(old, []byte("\n")) {
		old = append(old, '\n')
	}
	if err := certs.WriteFile(name, append(old, pem...), 0o644, owner, false); err != nil {
		return false, err
	}
	return true, nil
}

// hostStarter is a backend that can confine a host program's network
// (bwrap's).
type hostStarter interface {
	StartOnHost(ctx context.Context, cmd *exec.Cmd, eg sandbox.Egress) (stop func(), err error)
}

// StartOnHost starts cmd, a program of the host's that acts for the
// agent (an MCP server den runs on the host), in a network namespace of
// its own served by den's egress under sc (its Agent is the
// computer's); stop stops serving it once cmd has been waited for. A
// backend that shares the host's network (proot) cannot.
func (c *Computer) StartOnHost(ctx context.Context, sc egress.Scope, cmd *exec.Cmd) (stop func(), err error) {
	hs, ok := c.m.backend.(hostStarter)
	if !ok {
		return nil, fmt.Errorf("%w: the %s backend cannot confine a host program's network", sandbox.ErrUnavailable, c.m.backend.Name())
	}
	sc.Agent = c.agent
	return hs.StartOnHost(ctx, cmd, c.m.proxy().Net(sc))
}
