package store

import "errors"

var (
	// ErrNotFound is returned, wrapped, when an agent, session or message
	// does not exist.
	ErrNotFound = errors.New("not found")

	// ErrSchemaTooNew is returned, wrapped, by Open when the database was
	// migrated by a newer den than this one: its user_version is past the
	// last migration this build knows.
	ErrSchemaTooNew = errors.New("database schema is newer than this den")
)
