package store

import (
	"context"
	"database/sql"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strconv"

	"modernc.org/sqlite"
)

// SchemaVersion is the schema this den migrates databases to: the
// user_version of a database it has opened.
func SchemaVersion() int { return len(migrations) }

// Snapshot writes a consistent copy of the database at src to dst with
// SQLite's VACUUM INTO, while other connections and processes (a
// running den serve) read and write it: the copy is the database as
// one read transaction saw it, with every transaction committed before
// it began and none after. dst must not exist; it is made with mode
// 0600, and removed when the copy fails. src is neither migrated nor
// changed. It returns the copy's schema version (its user_version),
// which may be newer than SchemaVersion when a newer den wrote src.
func Snapshot(ctx context.Context, src, dst string) (schema int, err error) {
	abs, err := filepath.Abs(src)
	if err != nil {
		return 0, fmt.Errorf("store: snapshot %s: %w", src, err)
	}
	if _, err := os.Lstat(abs); err != nil {
		return 0, fmt.Errorf("store: snapshot: %w", err)
	}
	// VACUUM INTO accepts an empty file: made here, so that it is the
	// user's alone from the start.
	f, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return 0, fmt.Errorf("store: snapshot: %w", err)
	}
	f.Close()
	defer func() {
		if err != nil {
			os.Remove(dst)
		}
	}()
	// A connection of its own, with the busy timeout of den's others and
	// without migrating: reading src must not change it.
	q := url.Values{}
	q.Set("_busy_timeout", strconv.FormatInt(busyTimeout.Milliseconds(), 10))
	u := url.URL{Scheme: "file", Path: filepath.ToSlash(abs), RawQuery: q.Encode()}
	connector, err := sqlite.NewConnector(u.String())
	if err != nil {
		return 0, fmt.Errorf("store: snapshot %s: %w", src, err)
	}
	db := sql.OpenDB(connector)
	defer db.Close()
	db.SetMaxOpenConns(1)
	if _, err := db.ExecContext(ctx, "VACUUM INTO ?", dst); err != nil {
		return 0, fmt.Errorf("store: snapshot %s: %w", src, err)
	}
	return checkCopy(ctx, dst)
}

// readOnly opens the database at path for reading only.
func readOnly(path string) (*sql.DB, error) {
	u := url.URL{Scheme: "file", Path: filepath.ToSlash(path), RawQuery: "mode=ro"}
	connector, err := sqlite.NewConnector(u.String())
	if err != nil {
		return nil, err
	}
	return sql.OpenDB(connector), nil
}

// CountSessions counts the sessions of the database at path (a
// snapshot, say), without changing it.
func CountSessions(ctx context.Context, path string) (int, error) {
	db, err := readOnly(path)
	if err != nil {
		return 0, fmt.Errorf("store: count sessions: %w", err)
	}
	defer db.Close()
	var n int
	if err := db.QueryRowContext(ctx, "SELECT count(*) FROM sessions").Scan(&n); err != nil {
		return 0, fmt.Errorf("store: count sessions: %w", err)
	}
	return n, nil
}

// checkCopy reads a copy's schema version and checks its structure.
func checkCopy(ctx context.Context, path string) (int, error) {
	db, err := readOnly(path)
	if err != nil {
		return 0, fmt.Errorf("store: snapshot: %w", err)
	}
	defer db.Close()
	var v int
	if err := db.QueryRowContext(ctx, "PRAGMA user_version").Scan(&v); err != nil {
		return 0, fmt.Errorf("store: snapshot: read user_version: %w", err)
	}
	var ok string
	if err := db.QueryRowContext(ctx, "PRAGMA quick_check").Scan(&ok); err != nil {
		return 0, fmt.Errorf("store: snapshot: check: %w", err)
	}
	if ok != "ok" {
		return 0, fmt.Errorf("store: snapshot: the copy fails its check: %s", ok)
	}
	return v, nil
}

// CheckFile checks that the file at path is a database this den can
// open, without changing it: its structure is sound and its schema is
// not newer than SchemaVersion (ErrSchemaTooNew). It returns the schema
// version.
func CheckFile(ctx context.Context, path string) (int, error) {
	v, err := checkCopy(ctx, path)
	if err != nil {
		return 0, err
	}
	if v > SchemaVersion() {
		return v, fmt.Errorf("%w (user_version %d, this den knows up to %d): upgrade den", ErrSchemaTooNew, v, SchemaVersion())
	}
	return v, nil
}
