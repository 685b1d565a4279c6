package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"time"

	sqlite3 "modernc.org/sqlite/lib"

	"modernc.org/sqlite"
)

// Store is den's state in one SQLite file. It is safe for concurrent use
// by several goroutines, and several processes may open the same file.
type Store struct {
	db   *sql.DB
	path string
	// lazy is a second pool on the same file whose commits are synced
	// at checkpoints only (synchronous=NORMAL): for marks that must
	// survive a killed den but may be lost to a power cut (a tool call
	// started, the tail of its output), written while tools run.
	lazy *sql.DB
	// writeSlot lets one write transaction of this Store run at a time.
	// SQLite allows one writer anyway; queueing here, in order, rather
	// than in SQLite's busy handler (which polls with growing sleeps
	// and lets a fast writer starve a slow one) keeps waits short and
	// fair inside one process. Other processes still meet the busy
	// timeout.
	writeSlot chan struct{}
}

// busyTimeout is how long a write waits for another connection's write
// lock before it fails with "database is locked". Write transactions
// are short (no network or model calls inside them), so a wait this long
// only happens on a stuck disk.
const busyTimeout = 10 * time.Second

// Open opens the database at path, creating the file (mode 0600) and its
// folder (0700) when missing, and migrates it to this den's schema. A
// database from a newer den fails with ErrSchemaTooNew.
func Open(path string) (*Store, error) {
	if path == "" {
		return nil, errors.New("store: open: empty path")
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, fmt.Errorf("store: open %s: %w", path, err)
	}
	if err := os.MkdirAll(filepath.Dir(abs), 0o700); err != nil {
		return nil, fmt.Errorf("store: open %s: %w", path, err)
	}
	// Create the file ourselves so that it, and the -wal and -shm files
	// SQLite creates with the same mode, are private to the user.
	f, err := os.OpenFile(abs, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("store: open %s: %w", path, err)
	}
	f.Close()

	connector, err := sqlite.NewConnector(dsn(abs, "FULL"))
	if err != nil {
		return nil, fmt.Errorf("store: open %s: %w", path, err)
	}
	lazy, err := sqlite.NewConnector(dsn(abs, "NORMAL"))
	if err != nil {
		return nil, fmt.Errorf("store: open %s: %w", path, err)
	}
	s := &Store{db: sql.OpenDB(connector), lazy: sql.OpenDB(lazy), path: abs, writeSlot: make(chan struct{}, 1)}
	// Turning a new file to WAL takes a lock SQLite does not wait for
	// (it would risk a deadlock): a den opening the file while another
	// does gets SQLITE_BUSY at once, and tries again.
	err = s.init(context.Background())
	for wait := 10 * time.Millisecond; isBusy(err) && wait < busyTimeout; wait *= 2 {
		time.Sleep(wait)
		err = s.init(context.Background())
	}
	if err != nil {
		s.db.Close()
		s.lazy.Close()
		return nil, fmt.Errorf("store: open %s: %w", path, err)
	}
	return s, nil
}

// dsn is the connection string for the database file at abs. Every
// connection of the pool gets the same settings:
//   - busy_timeout: a lock held by another connection or process is
//     waited for, not reported as "database is locked";
//   - journal_mode=WAL: readers never block the writer nor the reverse;
//   - synchronous=FULL: in WAL mode NORMAL only syncs the WAL at
//     checkpoints, so a power loss can roll back transactions that were
//     reported committed; FULL syncs the WAL on every commit, which is
//     what "no write is acknowledged before it is durable" requires;
//   - foreign_keys=1: the schema's references and cascades hold;
//   - _txlock=immediate: a write transaction takes the write lock at
//     BEGIN, where the busy timeout applies. A deferred transaction that
//     reads and then writes can fail with SQLITE_BUSY at once when
//     another writer got in between, which no timeout absorbs.
//     Read-only transactions (sql.TxOptions{ReadOnly: true}) still
//     begin deferred and take no lock.
//
// The path travels as a file: URI so that characters such as '?' and
// '#' in it are escaped rather than taken for a query.
func dsn(abs, synchronous string) string {
	q := url.Values{}
	q.Set("_busy_timeout", strconv.FormatInt(busyTimeout.Milliseconds(), 10))
	q.Set("_journal_mode", "WAL")
	q.Set("_synchronous", synchronous)
	q.Set("_foreign_keys", "1")
	q.Set("_txlock", "immediate")
	u := url.URL{Scheme: "file", Path: filepath.ToSlash(abs), RawQuery: q.Encode()}
	return u.String()
}

// init checks the connection settings took effect and migrates.
func (s *Store) init(ctx context.Context) error {
	var mode string
	if err := s.db.QueryRowContext(ctx, "PRAGMA journal_mode").Scan(&mode); err != nil {
		return err
	}
	if mode != "wal" {
		return fmt.Errorf("journal mode is %q, not wal (is the file on a network file system?)", mode)
	}
	return migrate(ctx, s.db)
}

// isBusy reports whether err is SQLite's "database is locked".
func isBusy(err error) bool {
	var se *sqlite.Error
	return errors.As(err, &se) && se.Code()&0xff == sqlite3.SQLITE_BUSY
}

// Close closes the database. Calls in progress finish first.
func (s *Store) Close() error {
	if err := errors.Join(s.lazy.Close(), s.db.Close()); err != nil {
		return fmt.Errorf("store: close %s: %w", s.path, err)
	}
	return nil
}

// write runs fn in a write transaction (BEGIN IMMEDIATE) and commits it.
// When write returns nil the transaction is in the WAL and synced.
func (s *Store) write(ctx context.Context, fn func(tx *sql.Tx) error) error {
	return s.writeOn(ctx, s.db, fn)
}

// mark is write on the lazily synced pool (see Store.lazy).
func (s *Store) mark(ctx context.Context, fn func(tx *sql.Tx) error) error {
	return s.writeOn(ctx, s.lazy, fn)
}

func (s *Store) writeOn(ctx context.Context, db *sql.DB, fn func(tx *sql.Tx) error) error {
	select {
	case s.writeSlot <- struct{}{}:
		defer func() { <-s.writeSlot }()
	case <-ctx.Done():
		return ctx.Err()
	}
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	if err := fn(tx); err != nil {
		return err
	}
	return tx.Commit()
}

// read runs fn in a read transaction: every query in fn sees the same
// snapshot of the database.
func (s *Store) read(ctx context.Context, fn func(tx *sql.Tx) error) error {
	tx, err := s.db.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
	if err != nil {
		return err
	}
	defer tx.Rollback()
	return fn(tx)
}

// now is the current time as stored: Unix nanoseconds.
func now() int64 { return time.Now().UnixNano() }

// fromNanos converts a stored time back.
func fromNanos(ns int64) time.Time { return time.Unix(0, ns).UTC() }
