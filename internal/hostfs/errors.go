package hostfs

import "errors"

// Each sentinel is wrapped with the path it concerns, and reads as the
// rest of a sentence after it: "/workspace/a.txt is a symbolic link:
// den reads only real files".
var (
	// ErrSymlink is a path with a symbolic link in it, the last
	// component included.
	ErrSymlink = errors.New("is a symbolic link")

	// ErrNotRegular is a path to something other than a regular file
	// (a folder, a named pipe, a socket, a device node) where a
	// regular file was asked for.
	ErrNotRegular = errors.New("is not a regular file")

	// ErrNotDir is an existing entry that is not a folder where a
	// folder was asked for.
	ErrNotDir = errors.New("is not a folder")

	// ErrEscapes is an absolute path, or one with a ".." component.
	ErrEscapes = errors.New("leads outside its folder")

	// ErrInvalidPath is an empty path or ".", a path with a NUL byte,
	// or, where one name is asked for, a name with a "/" in it.
	ErrInvalidPath = errors.New("is not a valid path")

	// ErrTooLarge is a file bigger than the caller's limit.
	ErrTooLarge = errors.New("is too large")

	// ErrExists is a name that is already taken, by anything.
	ErrExists = errors.New("already exists")
)
