package config

import "errors"

var (
	// ErrInvalid wraps every validation error: a file that does not
	// load, or a value a Setting's Check refuses.
	ErrInvalid = errors.New("invalid config")

	// ErrBadKey is a dotted key den cannot read (empty, unclosed quotes,
	// control characters), or, for Unset, one that names no setting or
	// table of den's config.
	ErrBadKey = errors.New("config: bad key")

	// ErrBadValue is a value that cannot be set (a type TOML settings
	// here do not take, invalid UTF-8).
	ErrBadValue = errors.New("config: bad value")

	// ErrNoKey is returned, wrapped, by Get and Unset for a key the
	// file does not set.
	ErrNoKey = errors.New("no such key")

	// ErrNotEditable is returned, wrapped, by SetValue and Unset for a
	// change they cannot make one line at a time in this file (the key
	// is inside an inline table, say): the user makes it with den config
	// edit.
	ErrNotEditable = errors.New("cannot be changed line by line in this file")

	// ErrChanged is returned, wrapped, by SetValueIf when the key's value
	// in the file is no longer the one the Change was planned against.
	ErrChanged = errors.New("config changed since the change was planned")

	// ErrNotSettable is returned, wrapped, by AgentSettable for a key an
	// agent may not change from inside its computer.
	ErrNotSettable = errors.New("not settable from inside the computer")
)
