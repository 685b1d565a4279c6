package store

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"sync"
	"testing"
)

// TestSnapshotWhileWriting copies a database that another connection
// keeps writing: the copy opens, holds a prefix of the writes (every
// session whole), has the schema's version and is the user's alone.
func TestSnapshotWhileWriting(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	s := openAt(t, filepath.Join(dir, "den.db"))
	first := newSession(t, s, "a")
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		for {
			select {
			case <-stop:
				return
			default:
			}
			if _, err := s.CreateSession(ctx, "a", "anthropic/claude-test"); err != nil {
				t.Error(err)
				return
			}
		}
	})
	dst := filepath.Join(dir, "copy.db")
	v, err := Snapshot(ctx, filepath.Join(dir, "den.db"), dst)
	close(stop)
	wg.Wait()
	if err != nil {
		t.Fatal(err)
	}
	if v != SchemaVersion() {
		t.Errorf("schema %d, want %d", v, SchemaVersion())
	}
	fi, err := os.Stat(dst)
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("copy: %v, mode %v; want 0600", err, fi.Mode())
	}
	if _, err := CheckFile(ctx, dst); err != nil {
		t.Fatal(err)
	}
	n, err := CountSessions(ctx, dst)
	if err != nil {
		t.Fatal(err)
	}
	c, err := Open(dst)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	list, err := c.ListSessions(ctx, "a", 0)
	if err != nil || len(list) == 0 || list[len(list)-1].ID != first.ID {
		t.Fatalf("the copy's sessions: %v, %d of them; want the first one and those written before the copy", err, len(list))
	}
	if n != len(list) {
		t.Errorf("CountSessions: %d, the copy lists %d", n, len(list))
	}

	// The destination must be new.
	if _, err := Snapshot(ctx, filepath.Join(dir, "den.db"), dst); err == nil {
		t.Error("a snapshot over an existing file: want an error")
	}
}

// TestCheckFileRefusesNewerSchema: a database from a newer den is
// refused, and so is a file that is no database.
func TestCheckFileRefusesNewerSchema(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	p := filepath.Join(dir, "den.db")
	s := openAt(t, p)
	if _, err := s.db.ExecContext(ctx, "PRAGMA user_version = 9999"); err != nil {
		t.Fatal(err)
	}
	if _, err := CheckFile(ctx, p); !errors.Is(err, ErrSchemaTooNew) {
		t.Errorf("CheckFile of a newer schema: %v, want ErrSchemaTooNew", err)
	}
	junk := filepath.Join(dir, "junk.db")
	os.WriteFile(junk, []byte("not a database at all, just text that goes on for a while"), 0o600)
	if _, err := CheckFile(ctx, junk); err == nil {
		t.Error("CheckFile of a text file: want an error")
	}
}

func openAt(t testing.TB, path string) *Store {
	t.Helper()
	s, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}
