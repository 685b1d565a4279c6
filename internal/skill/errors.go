package skill

import "errors"

// Each sentinel is wrapped with what it concerns and reads as the rest
// of a sentence after it: "skills/x/SKILL.md has no frontmatter".
var (
	// ErrInvalid is a SKILL.md den cannot use: no frontmatter, bad
	// YAML, no name or a name that is not a safe folder name, text that
	// is not UTF-8.
	ErrInvalid = errors.New("is not a valid skill")

	// ErrTooLarge is a file, a skill or an archive past one of the
	// Limits.
	ErrTooLarge = errors.New("is too large")

	// ErrUnsafe is a source den refuses to unpack or copy: a symbolic
	// or hard link, a device node, an absolute path or one with "..".
	ErrUnsafe = errors.New("is unsafe")

	// ErrNotFound is a skill, or a skill in a source, that is not
	// there.
	ErrNotFound = errors.New("is not there")

	// ErrExists is an install over a skill of the same name without
	// leave to replace it.
	ErrExists = errors.New("already exists")

	// ErrAmbiguous is a source holding several skills when one was
	// asked for.
	ErrAmbiguous = errors.New("holds several skills")

	// ErrFlagged is a skill whose scan found something of high
	// severity, installed or used only when the user says so.
	ErrFlagged = errors.New("has high-severity findings")

	// ErrState is an operation that does not apply to a skill in its
	// present state: accepting a skill that has not changed, restoring
	// one den did not install.
	ErrState = errors.New("does not apply")
)
