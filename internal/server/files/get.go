package files

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"mime"
	"net/http"
	"os"
	"path"
	"slices"
	"strings"
	"time"

	"den.dev/den/internal/hostfs"
	"den.dev/den/internal/server/reply"
)

// MaxEntries is the most entries a listing shows; a folder with more
// is listed in part, with "truncated": true.
const MaxEntries = 10000

// Listing is the JSON of a folder.
type Listing struct {
	Path      string  `json:"path"` // as the computer names it: /workspace/...
	Entries   []Entry `json:"entries"`
	Truncated bool    `json:"truncated,omitempty"`
}

// Entry is one entry of a Listing, as lstat(2) sees it.
type Entry struct {
	Name     string    `json:"name"`
	Type     string    `json:"type"` // file, dir, symlink or other
	Size     int64     `json:"size"` // a file's length, a link's text's; 0 for the rest
	Modified time.Time `json:"modified"`
	Mode     string    `json:"mode"`             // the permission bits in octal: "0644"
	Target   string    `json:"target,omitempty"` // a symbolic link's text
}

// Get answers GET (and HEAD) /api/v1/sessions/{id}/files/{path...}: a
// folder of the workspace as a Listing, a regular file as its content.
func (h *Handler) Get(w http.ResponseWriter, r *http.Request) error {
	comps, err := split(r.PathValue("path"))
	if err != nil {
		return err
	}
	root, _, err := h.folder(r, workspace)
	if err != nil {
		return err
	}
	defer root.Close()
	return serveAt(w, r, root, workspace, comps)
}

// serveAt answers with what comps names beneath root, the folder the
// computer names at: a regular file as its content (see serve), a
// folder as its Listing; a link, a special file or a missing one is
// refused as refusal says.
func serveAt(w http.ResponseWriter, r *http.Request, root *hostfs.Dir, at string, comps []string) error {
	if len(comps) == 0 {
		return list(w, root, at)
	}
	rel := strings.Join(comps, "/")
	f, err := root.Open(rel)
	if err == nil {
		defer f.Close()
		return serve(w, r, f, comps[len(comps)-1])
	}
	if !errors.Is(err, hostfs.ErrNotRegular) {
		return refusal(err)
	}
	// A folder, or a special file, which Sub refuses as not a folder:
	// Open's error says better what it is.
	sub, serr := root.Sub(rel)
	if errors.Is(serr, hostfs.ErrNotDir) {
		return refusal(err)
	}
	if serr != nil {
		return refusal(serr)
	}
	defer sub.Close()
	return list(w, sub, shown(at, comps...))
}

// list answers with the Listing of d, named name: folders first, then
// everything else, each by name.
func list(w http.ResponseWriter, d *hostfs.Dir, name string) error {
	found, more, err := d.List(MaxEntries)
	if err != nil {
		return refusal(err)
	}
	l := Listing{Path: name, Entries: make([]Entry, 0, len(found)), Truncated: more}
	for _, e := range found {
		l.Entries = append(l.Entries, entry(e))
	}
	slices.SortFunc(l.Entries, func(a, b Entry) int {
		if (a.Type == "dir") != (b.Type == "dir") {
			if a.Type == "dir" {
				return -1
			}
			return 1
		}
		return strings.Compare(a.Name, b.Name)
	})
	return reply.JSON(w, http.StatusOK, l)
}

func entry(e hostfs.Entry) Entry {
	out := Entry{Name: e.Name, Modified: e.ModTime.UTC(), Mode: fmt.Sprintf("%04o", permBits(e.Mode))}
	switch e.Mode.Type() {
	case 0:
		out.Type, out.Size = "file", e.Size
	case fs.ModeDir:
		out.Type = "dir"
	case fs.ModeSymlink:
		out.Type, out.Size, out.Target = "symlink", e.Size, e.Target
	default:
		out.Type = "other"
	}
	return out
}

// permBits is mode's permission bits with setuid, setgid and sticky as
// chmod(1) writes them.
func permBits(mode fs.FileMode) uint32 {
	m := uint32(mode.Perm())
	if mode&fs.ModeSetuid != 0 {
		m |= 0o4000
	}
	if mode&fs.ModeSetgid != 0 {
		m |= 0o2000
	}
	if mode&fs.ModeSticky != 0 {
		m |= 0o1000
	}
	return m
}

// serve answers with the content of f, a regular file named name,
// streamed by http.ServeContent (which takes ranges and conditional
// requests).
func serve(w http.ResponseWriter, r *http.Request, f *os.File, name string) error {
	st, err := f.Stat()
	if err != nil {
		return fmt.Errorf("files: %w", err)
	}
	ctype, err := contentType(f, name)
	if err != nil {
		return fmt.Errorf("files: %w", err)
	}
	inline := r.URL.Query().Get("inline") == "1" && (inlineSafe(ctype) || framedHTML(r, ctype))
	hdr := w.Header()
	hdr.Set("Content-Type", ctype)
	hdr.Set("X-Content-Type-Options", "nosniff")
	hdr.Set("Content-Disposition", disposition(inline, name))
	hdr.Set("Cache-Control", "private, no-cache")
	if !inline || !strings.HasPrefix(ctype, "application/pdf") {
		// Should a browser render it after all, nothing in it runs.
		// (Browsers' PDF viewers do not work sandboxed.)
		hdr.Set("Content-Security-Policy", "sandbox; default-src 'none'; img-src 'self'; style-src 'unsafe-inline'")
	}
	http.ServeContent(w, r, name, st.ModTime(), f)
	return nil
}

// contentType is the type of the file f named name: by its extension,
// else sniffed from its first 512 bytes.
func contentType(f *os.File, name string) (string, error) {
	if t := mime.TypeByExtension(path.Ext(name)); t != "" {
		return t, nil
	}
	buf := make([]byte, 512)
	n, err := f.ReadAt(buf, 0)
	if err != nil && err != io.EOF {
		return "", err
	}
	return http.DetectContentType(buf[:n]), nil
}

// inlineSafe reports whether a browser shown ctype in den's origin can
// run no script from it: raster images, plain text and PDF. Not HTML,
// not SVG, not XML.
func inlineSafe(ctype string) bool {
	mt, _, err := mime.ParseMediaType(ctype)
	if err != nil {
		return false
	}
	switch {
	case mt == "text/plain", mt == "application/pdf":
		return true
	case strings.HasPrefix(mt, "image/"):
		return mt != "image/svg+xml" && !strings.HasSuffix(mt, "+xml")
	}
	return false
}

// framedHTML reports whether ctype is HTML that the browser is loading
// into a frame (Sec-Fetch-Dest, which pages cannot set), where the
// sandboxing Content-Security-Policy that serve sends with it gives it
// an origin of its own and runs none of its scripts: a preview. Opened
// as a page of its own, it is still an attachment, as it is for a
// browser too old to say where it loads it.
func framedHTML(r *http.Request, ctype string) bool {
	mt, _, err := mime.ParseMediaType(ctype)
	if err != nil || mt != "text/html" {
		return false
	}
	dest := r.Header.Get("Sec-Fetch-Dest")
	return dest == "iframe" || dest == "frame"
}

// disposition is the Content-Disposition for the file name.
func disposition(inline bool, name string) string {
	kind := "attachment"
	if inline {
		kind = "inline"
	}
	if d := mime.FormatMediaType(kind, map[string]string{"filename": name}); d != "" {
		return d
	}
	return kind
}

// GetAttachment answers GET (and HEAD) /api/v1/sessions/{id}/attachments/{name}:
// a file the session was given, as Get answers a file.
func (h *Handler) GetAttachment(w http.ResponseWriter, r *http.Request) error {
	return h.getOne(w, r, attachments)
}

// GetOffload answers GET (and HEAD) /api/v1/sessions/{id}/offloads/{name}:
// the full output of a command whose result was capped.
func (h *Handler) GetOffload(w http.ResponseWriter, r *http.Request) error {
	return h.getOne(w, r, offloads)
}

// getOne answers with the file {name} of the folder the computer names
// folder.
func (h *Handler) getOne(w http.ResponseWriter, r *http.Request, folder string) error {
	name := r.PathValue("name")
	comps, err := split(name)
	if err != nil {
		return err
	}
	if len(comps) != 1 {
		return badRequest("%q: name one file of %s", name, folder)
	}
	dir, _, err := h.folder(r, folder)
	if err != nil {
		return refusal(err)
	}
	defer dir.Close()
	f, err := dir.Open(comps[0])
	if err != nil {
		return refusal(err)
	}
	defer f.Close()
	return serve(w, r, f, comps[0])
}
