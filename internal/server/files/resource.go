package files

import (
	"errors"
	"fmt"
	"io/fs"
	"net/http"
	"strings"

	"den.dev/den/internal/hostfs"
	"den.dev/den/internal/resource"
	"den.dev/den/internal/session"
)

// Resource answers GET (and HEAD) /api/v1/resources?url=den://...: the
// file or folder a den:// URL names, in the folders of the session
// given as session=ID, or, for the agent's own folders (memory, skills,
// shared) and no session, of the agent given as agent=NAME. A file is
// served and a folder listed as Get serves them, under the same rules.
func (h *Handler) Resource(w http.ResponseWriter, r *http.Request) error {
	q := r.URL.Query()
	for _, key := range []string{"url", "session", "agent"} {
		if len(q[key]) > 1 {
			return badRequest("%s is given %d times: give it once", key, len(q[key]))
		}
	}
	if q.Get("url") == "" {
		return badRequest("give the file as url=den://KIND/PATH")
	}
	u, err := resource.Parse(q.Get("url"))
	if err != nil {
		return badRequest("%v", err)
	}
	folders, err := h.resourceFolders(r, u.Kind, q.Get("session"), q.Get("agent"))
	if err != nil {
		return err
	}
	at := u.Kind.Guest()
	root, err := hostfs.OpenDirNamed(folders.Dir(u.Kind), at)
	if errors.Is(err, fs.ErrNotExist) {
		return errorf(http.StatusNotFound, "not_found", "%s does not exist (yet)", at)
	}
	if err != nil {
		return fmt.Errorf("files: open %s: %w", at, err)
	}
	defer root.Close()
	var comps []string
	if u.Path != "" {
		comps = strings.Split(u.Path, "/")
	}
	return serveAt(w, r, root, at, comps)
}

// resourceFolders finds the folders a den:// URL of kind is read in:
// the session's when one is given, else, for an agent's kind, the
// agent's.
func (h *Handler) resourceFolders(r *http.Request, kind resource.Kind, sessionID, agent string) (session.Folders, error) {
	switch {
	case sessionID != "" && agent != "":
		return session.Folders{}, badRequest("give session or agent, not both: a session's files are its agent's")
	case sessionID != "":
		return h.F.Folders(r.Context(), sessionID)
	case kind.Scope() == resource.PerSession:
		return session.Folders{}, badRequest("den://%s/ is a session's folder: give session=ID", kind)
	case agent != "":
		return h.F.AgentFolders(r.Context(), agent)
	}
	return session.Folders{}, badRequest("give session=ID, or agent=NAME for the agent's den://%s/", kind)
}
