package files

import (
	"errors"
	"io/fs"
	"net/http"
	"strings"

	"den.dev/den/internal/hostfs"
	"den.dev/den/internal/server/auth"
	"den.dev/den/internal/server/reply"
)

// Upload is the JSON of an upload that was written.
type Upload struct {
	Path string `json:"path"` // as the computer names it: /workspace/...
	Size int64  `json:"size"`
}

// Put answers PUT /api/v1/sessions/{id}/files/{path...}: the body
// becomes the regular file at path in the workspace (mode 0644), the
// folders on the way made as needed (mode 0755), all of them the
// computer's (Folders.Owner). It answers 201 with an Upload for a new
// file, 200 for one replaced. A path ending in "/" with an empty body
// makes that folder instead.
func (h *Handler) Put(w http.ResponseWriter, r *http.Request) error {
	max := h.limit()
	auth.LimitBody(w, r, max)
	rel := r.PathValue("path")
	comps, err := split(rel)
	if err != nil {
		return err
	}
	if len(comps) == 0 {
		return conflict("%s is a folder: PUT a file's path beneath it", workspace)
	}
	folder := strings.HasSuffix(rel, "/")
	if folder && r.ContentLength != 0 {
		return badRequest("%q ends in \"/\": a folder is made with an empty body; PUT a file's path to upload", rel)
	}
	if err := tooLong(r, max); err != nil {
		return err
	}
	root, folders, err := h.folder(r, workspace)
	if err != nil {
		return err
	}
	defer root.Close()
	if folder {
		return makeFolder(w, root, comps, folders.Owner)
	}

	parents, name := comps[:len(comps)-1], comps[len(comps)-1]
	c, err := mkdirs(root, parents, folders.Owner)
	defer c.close()
	if err != nil {
		c.undo()
		return err
	}
	dir := c.dirs[len(c.dirs)-1]
	replaced, err := replaces(dir, name, shown(workspace, comps...))
	if err != nil {
		c.undo()
		return err
	}
	b := &body{r: r.Body}
	n, err := dir.WriteFrom(name, b, 0o644, folders.Owner, max)
	if err != nil {
		c.undo()
		return bodyError(b, err)
	}
	status := http.StatusCreated
	if replaced {
		status = http.StatusOK
	}
	return reply.JSON(w, status, Upload{Path: shown(workspace, comps...), Size: n})
}

// makeFolder makes the folder comps and those on its way: 201 when it
// made the last, 200 when it was there.
func makeFolder(w http.ResponseWriter, root *hostfs.Dir, comps []string, owner *hostfs.Owner) error {
	c, err := mkdirs(root, comps, owner)
	defer c.close()
	if err != nil {
		c.undo()
		return err
	}
	status := http.StatusOK
	if c.made[len(c.made)-1] {
		status = http.StatusCreated
	}
	return reply.JSON(w, status, Upload{Path: shown(workspace, comps...)})
}

// replaces checks what is at name in dir, shown as shown: it reports
// whether a regular file is there to replace, and refuses anything but
// that or nothing. (Should the computer plant a link there after the
// check, the rename replaces the link and follows nothing.)
func replaces(dir *hostfs.Dir, name, shown string) (bool, error) {
	e, err := dir.Lstat(name)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return false, nil
	case err != nil:
		return false, refusal(err)
	case e.Mode.IsRegular():
		return true, nil
	case e.Mode.IsDir():
		return false, conflict("%s is a folder: PUT writes only files", shown)
	case e.Mode.Type() == fs.ModeSymlink:
		return false, refused("%s %v: den writes only real files, and never through a link", shown, hostfs.ErrSymlink)
	}
	return false, refused("%s %v (%s): den writes only real files", shown, hostfs.ErrNotRegular, kind(e.Mode))
}

// kind names a special file's type.
func kind(mode fs.FileMode) string {
	switch {
	case mode&fs.ModeNamedPipe != 0:
		return "a named pipe"
	case mode&fs.ModeSocket != 0:
		return "a socket"
	case mode&fs.ModeDevice != 0:
		return "a device node"
	}
	return "an unknown kind of file"
}

// chain is the folders from the workspace down to a PUT's file, as
// mkdirs opened or made them.
type chain struct {
	dirs  []*hostfs.Dir // the workspace, then the folder of each of comps
	comps []string
	made  []bool // whether this request made the folder comps[i]
}

// mkdirs opens the folders comps beneath root, each in the one before,
// making those that are missing. On failure the chain holds those
// opened so far.
func mkdirs(root *hostfs.Dir, comps []string, owner *hostfs.Owner) (*chain, error) {
	c := &chain{dirs: []*hostfs.Dir{root}, comps: comps}
	for i, name := range comps {
		parent := c.dirs[i]
		sub, created, err := parent.Mkdir(name, 0o755, owner)
		if err != nil {
			if errors.Is(err, hostfs.ErrNotDir) {
				if e, lerr := parent.Lstat(name); lerr == nil && e.Mode.IsRegular() {
					return c, conflict("%s is a file, not a folder", shown(workspace, comps[:i+1]...))
				}
			}
			return c, refusal(err)
		}
		c.dirs = append(c.dirs, sub)
		c.made = append(c.made, created)
	}
	return c, nil
}

// undo removes the folders the request made, deepest first, when they
// are still folders and empty: a failed upload leaves nothing behind.
func (c *chain) undo() {
	for i := len(c.made) - 1; i >= 0; i-- {
		if !c.made[i] {
			continue
		}
		if e, err := c.dirs[i].Lstat(c.comps[i]); err == nil && e.Mode.IsDir() {
			c.dirs[i].Remove(c.comps[i])
		}
	}
}

// close closes the folders the chain opened (not the workspace).
func (c *chain) close() {
	for _, d := range c.dirs[1:] {
		d.Close()
	}
}
