package files

import (
	"errors"
	"fmt"
	"io/fs"
	"net/http"
	"syscall"

	"den.dev/den/internal/hostfs"
)

// Error is a request den refuses, with the HTTP status and the code of
// den's JSON errors ({"error": {"code", "message"}}). Message is for
// the client: it names paths as the computer sees them, never the
// host's.
type Error struct {
	Status  int
	Code    string
	Message string
}

func (e *Error) Error() string { return e.Message }

func errorf(status int, code, format string, args ...any) *Error {
	return &Error{Status: status, Code: code, Message: fmt.Sprintf(format, args...)}
}

func badRequest(format string, args ...any) *Error {
	return errorf(http.StatusBadRequest, "bad_request", format, args...)
}

func refused(format string, args ...any) *Error {
	return errorf(http.StatusForbidden, "refused", format, args...)
}

func conflict(format string, args ...any) *Error {
	return errorf(http.StatusConflict, "conflict", format, args...)
}

// refusal turns an error of hostfs into what the client is told: an
// *Error for what the request or the computer did, err itself for
// den's own failures. hostfs messages name paths as the computer sees
// them (the folders are opened with OpenDirNamed).
func refusal(err error) error {
	switch {
	case errors.Is(err, hostfs.ErrSymlink), errors.Is(err, hostfs.ErrNotRegular), errors.Is(err, hostfs.ErrNotDir):
		return refused("%v", err)
	case errors.Is(err, hostfs.ErrEscapes), errors.Is(err, hostfs.ErrInvalidPath), errors.Is(err, syscall.ENAMETOOLONG):
		return badRequest("%v", err)
	case errors.Is(err, hostfs.ErrTooLarge):
		return errorf(http.StatusRequestEntityTooLarge, "too_large", "%v", err)
	case errors.Is(err, hostfs.ErrExists), errors.Is(err, syscall.EISDIR):
		return conflict("%v", err)
	case errors.Is(err, fs.ErrNotExist), errors.Is(err, syscall.ENOTDIR):
		return errorf(http.StatusNotFound, "not_found", "%v", err)
	case errors.Is(err, fs.ErrPermission):
		return refused("%v", err)
	}
	return err
}
