package session

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"den.dev/den/internal/sandbox"
)

// TestExec: a command runs in the session's own /workspace, its output
// and exit code come back, a capped output is saved whole in the
// session's offloads, and another session does not see the first's
// files.
func TestExec(t *testing.T) {
	tr := newTestRuntime(t, nil)
	ctx := context.Background()
	a, b := tr.session(t), tr.session(t)
	res, err := tr.Exec(ctx, a.ID, sandbox.Command{Script: "pwd; echo made > note; echo oops >&2; exit 3"})
	if err != nil {
		t.Fatal(err)
	}
	if res.ExitCode != 3 || !strings.HasPrefix(res.Output, "/workspace\n") || !strings.Contains(res.Output, "oops\n") {
		t.Errorf("exit %d, output %q: want 3 with /workspace and oops", res.ExitCode, res.Output)
	}
	folders, err := tr.Folders(ctx, a.ID)
	if err != nil {
		t.Fatal(err)
	}
	if got, err := os.ReadFile(filepath.Join(folders.Workspace, "note")); err != nil || string(got) != "made\n" {
		t.Errorf("the session's workspace holds %q, %v; want the file the command made", got, err)
	}
	res, err = tr.Exec(ctx, b.ID, sandbox.Command{Script: "ls -A /workspace"})
	if err != nil || res.Output != "" {
		t.Errorf("another session's workspace: %q, %v; want it empty", res.Output, err)
	}
	res, err = tr.Exec(ctx, a.ID, sandbox.Command{Script: "i=0; while [ $i -lt 40000 ]; do echo line-$i; i=$((i+1)); done"})
	if err != nil {
		t.Fatal(err)
	}
	if !res.Truncated || res.OffloadPath == "" || res.TotalBytes < 400000 {
		t.Fatalf("a large output: truncated %v, offload %q, %d bytes; want it capped and saved", res.Truncated, res.OffloadPath, res.TotalBytes)
	}
	rel, ok := strings.CutPrefix(res.OffloadPath, sandbox.GuestOffloads+"/")
	if !ok {
		t.Fatalf("offload %q is not in %s", res.OffloadPath, sandbox.GuestOffloads)
	}
	if full, err := os.ReadFile(filepath.Join(folders.Offloads, rel)); err != nil || !strings.HasSuffix(string(full), "line-39999\n") {
		t.Errorf("the saved output: %d bytes, %v; want all of it", len(full), err)
	}
	if _, err := tr.Exec(ctx, "nosuch", sandbox.Command{Script: "true"}); err == nil {
		t.Error("exec in a session that does not exist: no error")
	}
}

// TestExecEndsWithRuntime: closing the runtime stops a command that
// runs, and Close waits for it.
func TestExecEndsWithRuntime(t *testing.T) {
	tr := newTestRuntime(t, nil)
	s := tr.session(t)
	started := make(chan struct{})
	done := make(chan error, 1)
	go func() {
		var once sync.Once
		res, err := tr.Exec(context.Background(), s.ID, sandbox.Command{Script: "echo started; sleep 600", Timeout: time.Hour,
			OnOutput: func(string, string) { once.Do(func() { close(started) }) }})
		if err == nil && !res.Canceled {
			err = errors.New("not canceled")
		}
		done <- err
	}()
	select {
	case <-started:
	case err := <-done:
		t.Fatalf("exec ended before it printed: %v", err)
	}
	closed := make(chan struct{})
	go func() {
		defer close(closed)
		tr.Close()
	}()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("exec after Close: %v", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("exec still runs 30s after the runtime began to close")
	}
	<-closed
	if _, err := tr.Exec(context.Background(), s.ID, sandbox.Command{Script: "true"}); !errors.Is(err, ErrClosed) {
		t.Errorf("exec on a closed runtime: %v, want ErrClosed", err)
	}
}
