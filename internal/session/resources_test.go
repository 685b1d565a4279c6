package session

import (
	"context"
	"errors"
	"path/filepath"
	"testing"

	"den.dev/den/internal/resource"
	"den.dev/den/internal/store"
)

// TestResourceFolders: each kind of den:// URL has its host folder in
// a session's Folders, and an agent's own folders are found without a
// session; an agent with no computer, or a name no agent can have, has
// none.
func TestResourceFolders(t *testing.T) {
	rt := newTestRuntime(t, nil)
	ctx := context.Background()
	sess, err := rt.Create(ctx, "default", "")
	if err != nil {
		t.Fatal(err)
	}
	f, err := rt.Folders(ctx, sess.ID)
	if err != nil {
		t.Fatal(err)
	}
	agentDir := filepath.Join(rt.dir, "agents", "default")
	sessionDir := filepath.Join(agentDir, "sessions", sess.ID)
	want := map[resource.Kind]string{
		resource.Workspace:   filepath.Join(sessionDir, "workspace"),
		resource.Attachments: filepath.Join(sessionDir, "attachments"),
		resource.Offloads:    filepath.Join(sessionDir, "offloads"),
		resource.Browser:     filepath.Join(sessionDir, "browser"),
		resource.Memory:      filepath.Join(agentDir, "memory"),
		resource.Skills:      filepath.Join(agentDir, "skills"),
		resource.Shared:      filepath.Join(agentDir, "shared"),
	}
	for _, k := range resource.Kinds() {
		if got := f.Dir(k); got != want[k] {
			t.Errorf("Folders.Dir(%s) = %q, want %q", k, got, want[k])
		}
	}
	if got := f.Dir("root"); got != "" {
		t.Errorf("Folders.Dir(root) = %q", got)
	}

	af, err := rt.AgentFolders(ctx, "default")
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range resource.Kinds() {
		w := want[k]
		if k.Scope() == resource.PerSession {
			w = ""
		}
		if got := af.Dir(k); got != w {
			t.Errorf("AgentFolders.Dir(%s) = %q, want %q", k, got, w)
		}
	}
	if _, err := rt.AgentFolders(ctx, "ghost"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("an agent without a computer: %v, want ErrNotFound", err)
	}
	for _, bad := range []string{"..", "../default", "a/b", "", "-x"} {
		if _, err := rt.AgentFolders(ctx, bad); !errors.Is(err, ErrBadOptions) {
			t.Errorf("agent %q: %v, want ErrBadOptions", bad, err)
		}
	}
}
