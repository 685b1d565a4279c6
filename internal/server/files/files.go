package files

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"path"
	"strings"

	"den.dev/den/internal/hostfs"
	"den.dev/den/internal/session"
)

// MaxUpload is the most bytes a PUT or an attachments request may
// send, unless Handler.Limit says otherwise.
const MaxUpload = 512 << 20

// The computer's names for the folders, which requests and messages
// use.
const (
	workspace   = "/workspace"
	attachments = "/den/attachments"
	offloads    = "/den/offloads"
)

// Folders finds a session's folders, and an agent's; *session.Runtime
// satisfies it. A session or an agent that does not exist is an error
// wrapping store.ErrNotFound; a name no agent can have wraps
// session.ErrBadOptions.
type Folders interface {
	Folders(ctx context.Context, sessionID string) (session.Folders, error)
	AgentFolders(ctx context.Context, agent string) (session.Folders, error)
}

var _ Folders = (*session.Runtime)(nil)

// Handler serves a session's files. Its methods are the routes'
// handlers (see the package doc); each returns the error the server
// answers with. The zero Limit is MaxUpload; F must be set.
type Handler struct {
	F Folders
	// Limit is the most bytes a PUT or an attachments request may
	// send; 0 means MaxUpload.
	Limit int64
}

func (h *Handler) limit() int64 {
	if h.Limit > 0 {
		return h.Limit
	}
	return MaxUpload
}

// split checks rel, a path from the request's URL beneath a folder,
// and returns its components without empty and "." ones: an absolute
// path, a ".." component or a NUL byte is refused before hostfs sees
// it (which refuses them too).
func split(rel string) ([]string, error) {
	if strings.HasPrefix(rel, "/") {
		return nil, badRequest("%q is an absolute path: give a path relative to %s", rel, workspace)
	}
	if strings.IndexByte(rel, 0) >= 0 {
		return nil, badRequest("%q has a NUL byte", rel)
	}
	var comps []string
	for c := range strings.SplitSeq(rel, "/") {
		switch c {
		case "", ".":
		case "..":
			return nil, badRequest("%q has a \"..\": den takes only paths beneath %s", rel, workspace)
		default:
			comps = append(comps, c)
		}
	}
	return comps, nil
}

// shown is how the computer names comps beneath its folder at.
func shown(at string, comps ...string) string {
	return path.Join(append([]string{at}, comps...)...)
}

// body is a request body that remembers its error, to tell a body
// that failed (cut short, over the limit) from a disk that did.
type body struct {
	r   io.Reader
	err error
}

func (b *body) Read(p []byte) (int, error) {
	n, err := b.r.Read(p)
	if err != nil && err != io.EOF {
		b.err = err
	}
	return n, err
}

// bodyError is the error to answer a failed upload with: the body's
// own when it failed (an *http.MaxBytesError as it is, for the
// server's 413), else err, refused or den's.
func bodyError(b *body, err error) error {
	var tooLarge *http.MaxBytesError
	switch {
	case b.err == nil:
		return refusal(err)
	case errors.As(b.err, &tooLarge):
		return b.err
	}
	return badRequest("the upload was cut short: %v", b.err)
}

// tooLong reports whether r says it sends more than max bytes, as the
// limit's own error, before any of it is read.
func tooLong(r *http.Request, max int64) error {
	if r.ContentLength > max {
		return &http.MaxBytesError{Limit: max}
	}
	return nil
}

// openDir opens the host folder at, named name in messages: a folder
// of den's, whose failure to open is den's.
// folder opens a folder of the request's session, named as the
// computer names it (workspace or attachments), with the session's
// folders.
func (h *Handler) folder(r *http.Request, name string) (*hostfs.Dir, session.Folders, error) {
	folders, err := h.F.Folders(r.Context(), r.PathValue("id"))
	if err != nil {
		return nil, session.Folders{}, err
	}
	at := folders.Workspace
	switch name {
	case attachments:
		at = folders.Attachments
	case offloads:
		at = folders.Offloads
	}
	d, err := openDir(at, name)
	return d, folders, err
}

func openDir(at, name string) (*hostfs.Dir, error) {
	d, err := hostfs.OpenDirNamed(at, name)
	if err != nil {
		return nil, fmt.Errorf("files: open %s: %w", name, err)
	}
	return d, nil
}
