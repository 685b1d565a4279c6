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

	// ErrAnswered is returned, wrapped, by AnswerApproval when the
	// approval was already approved, denied or expired: the first answer
	// stands.
	ErrAnswered = errors.New("approval already answered")

	// ErrExpired is returned, wrapped, by AnswerApproval when the
	// approval's deadline has passed; the row is marked expired.
	ErrExpired = errors.New("approval expired")
)
