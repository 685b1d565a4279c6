package privfile

import (
	"errors"
	"fmt"
	"io/fs"
)

// ErrRefused is wrapped by every *RefusedError: a file Read will not use.
var ErrRefused = errors.New("privfile: file refused")

// Reason is the rule a refused file broke.
type Reason int

const (
	// Symlink is a name that is a symbolic link, to whatever it points.
	Symlink Reason = iota + 1
	// NotRegular is a folder, named pipe, device or socket.
	NotRegular
	// Shared is a file whose mode gives group or others any permission.
	Shared
	// TooLarge is a file over the size Read was given.
	TooLarge
)

// RefusedError is Read's error for a file that breaks one of its rules.
type RefusedError struct {
	Reason Reason
	// Mode is the file's permission bits; set for Shared.
	Mode fs.FileMode
	// Max is the size Read was given; set for TooLarge.
	Max int64
}

// Error says the broken rule as a clause, with no file name: "it is a
// symbolic link", "it is not a regular file", "its mode 0644 lets group
// or others at it", "the file is over 4096 bytes".
func (e *RefusedError) Error() string {
	switch e.Reason {
	case Symlink:
		return "it is a symbolic link"
	case NotRegular:
		return "it is not a regular file"
	case Shared:
		return fmt.Sprintf("its mode %04o lets group or others at it", e.Mode)
	case TooLarge:
		return fmt.Sprintf("the file is over %d bytes", e.Max)
	}
	return fmt.Sprintf("refused for reason %d", int(e.Reason))
}

// Unwrap returns ErrRefused.
func (e *RefusedError) Unwrap() error { return ErrRefused }
