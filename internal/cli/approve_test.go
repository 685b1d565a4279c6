package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/spf13/cobra"

	"den.dev/den/internal/permission"
	"den.dev/den/internal/store"
)

// runSub runs one command built by mk with args and returns its output.
func runSub(t *testing.T, g *globals, mk func(*globals) *cobra.Command, args ...string) (string, error) {
	t.Helper()
	var out bytes.Buffer
	g.stdout, g.stderr = &out, &out
	c := mk(g)
	c.SetArgs(args)
	c.SetOut(&out)
	c.SetErr(&out)
	c.SilenceUsage, c.SilenceErrors = true, true
	err := c.ExecuteContext(context.Background())
	return out.String(), err
}

func TestApproveDenyApprovalsAudit(t *testing.T) {
	ctx := context.Background()
	g := &globals{dataDir: t.TempDir()}
	st, err := store.Open(filepath.Join(g.dataDir, "den.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()

	// A gate waits on an ask while the commands answer it.
	ids := make(chan string, 2)
	gate := permission.New(st, "default", permission.Policy{}, permission.Options{
		Emit: func(ev permission.Event) {
			if r, ok := ev.(*permission.ApprovalRequest); ok {
				ids <- r.ID
			}
		},
		Timeout:      time.Minute,
		PollInterval: 10 * time.Millisecond,
	})
	type result struct {
		c   *permission.Call
		err error
	}
	ask := func(args ...string) chan result {
		done := make(chan result, 1)
		go func() {
			c, _, err := gate.Do(ctx, permission.Request{Session: "s1", Command: "den-config", Action: "set", Args: args}, func(context.Context) int { return 0 })
			done <- result{c, err}
		}()
		return done
	}

	done := ask("set", "providers.x.api_key", "sk-secretsecretsecret1234")
	id := <-ids
	out, err := runSub(t, g, approvalsCmd)
	if err != nil || !strings.Contains(out, id) || !strings.Contains(out, "den-config set providers.x.api_key [redacted]") || strings.Contains(out, "secretsecret") {
		t.Errorf("den approvals: %v\n%s", err, out)
	}
	out, err = runSub(t, g, approvalsCmd, "--json")
	var rows []map[string]any
	if err != nil || json.Unmarshal([]byte(out), &rows) != nil || len(rows) != 1 || rows[0]["id"] != id {
		t.Errorf("den approvals --json: %v\n%s", err, out)
	}
	if _, err := runSub(t, g, approveCmd, id, "--scope", "forever"); err == nil || !isUsage(err) {
		t.Errorf("bad scope: %v", err)
	}
	out, err = runSub(t, g, approveCmd, id, "--scope", "session")
	if err != nil || !strings.HasPrefix(out, "approved "+id) {
		t.Errorf("den approve: %v\n%s", err, out)
	}
	if r := <-done; r.err != nil || r.c.Decision != permission.Allow || r.c.By != permission.ByUser {
		t.Errorf("gate after den approve: %+v %v", r.c, r.err)
	}
	if _, err := runSub(t, g, denyCmd, id); err == nil || !strings.Contains(err.Error(), "already answered: approved") {
		t.Errorf("deny after approve: %v", err)
	}
	if _, err := runSub(t, g, denyCmd, "nosuch"); err == nil || !isUsage(err) {
		t.Errorf("deny unknown id: %v", err)
	}

	// den deny, in another session (the session answer does not apply).
	done = make(chan result, 1)
	go func() {
		c, _, err := gate.Do(ctx, permission.Request{Session: "s2", Command: "den-sessions", Action: "send", Args: []string{"send", "x", "hi"}}, func(context.Context) int { return 0 })
		done <- result{c, err}
	}()
	id = <-ids
	if out, err := runSub(t, g, denyCmd, id); err != nil || !strings.HasPrefix(out, "denied "+id) {
		t.Errorf("den deny: %v\n%s", err, out)
	}
	if r := <-done; r.err != nil || r.c.Decision != permission.Deny {
		t.Errorf("gate after den deny: %+v %v", r.c, r.err)
	}
	if out, _ := runSub(t, g, approvalsCmd); !strings.Contains(out, "nothing is waiting") {
		t.Errorf("den approvals when empty:\n%s", out)
	}

	out, err = runSub(t, g, auditCmd)
	if err != nil || strings.Count(out, "\n") != 3 || !strings.Contains(out, "deny") || !strings.Contains(out, "allow") || strings.Contains(out, "secretsecret") {
		t.Errorf("den audit: %v\n%s", err, out)
	}
	out, err = runSub(t, g, auditCmd, "--session", "s2", "--json")
	rows = nil
	if err != nil || json.Unmarshal([]byte(out), &rows) != nil || len(rows) != 1 || rows[0]["decision"] != "deny" || rows[0]["exit_code"] != float64(3) {
		t.Errorf("den audit --session s2 --json: %v\n%s", err, out)
	}
	if _, err := runSub(t, g, auditCmd, "--limit", "0"); err == nil || !isUsage(err) {
		t.Errorf("--limit 0: %v", err)
	}
}
