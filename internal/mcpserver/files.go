package mcpserver

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path"
	"slices"
	"strings"
	"syscall"
	"time"
	"unicode/utf8"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"den.dev/den/internal/hostfs"
	"den.dev/den/internal/resource"
	"den.dev/den/internal/session"
	"den.dev/den/internal/store"
)

// Limits of the file tools.
const (
	// ReadDefault and ReadMax bound what one read_file returns, in
	// bytes.
	ReadDefault = 256 << 10
	ReadMax     = 4 << 20
	// MaxWrite is the most bytes one write_file writes.
	MaxWrite = 8 << 20
	// MaxEntries is the most entries list_files shows.
	MaxEntries = 2000
)

// ReadIn is read_file's input.
type ReadIn struct {
	Path   string `json:"path" jsonschema:"the file: relative to /workspace, absolute (/workspace/..., /den/offloads/...) or a den:// URL"`
	Offset int64  `json:"offset,omitempty" jsonschema:"the byte to start at (default 0)"`
	Limit  int64  `json:"limit,omitempty" jsonschema:"at most this many bytes (default 262144, at most 4194304)"`
	Where
}

// ReadOut is read_file's output.
type ReadOut struct {
	Path       string `json:"path" jsonschema:"the file, as den's computer names it"`
	URL        string `json:"url" jsonschema:"its den:// URL"`
	Size       int64  `json:"size" jsonschema:"the whole file's size in bytes"`
	Offset     int64  `json:"offset"`
	Content    string `json:"content"`
	Encoding   string `json:"encoding" jsonschema:"utf-8, or base64 for bytes that are not UTF-8 text"`
	NextOffset int64  `json:"next_offset,omitempty" jsonschema:"when more of the file follows: the offset to read from next"`
}

// WriteIn is write_file's input.
type WriteIn struct {
	Path     string `json:"path" jsonschema:"the file in /workspace: relative to it, absolute (/workspace/...) or den://workspace/..."`
	Content  string `json:"content" jsonschema:"what the file holds"`
	Encoding string `json:"encoding,omitempty" jsonschema:"utf-8 (default), or base64 for bytes"`
	Where
}

// WriteOut is write_file's output.
type WriteOut struct {
	Session string `json:"session" jsonschema:"the session's id"`
	Path    string `json:"path"`
	URL     string `json:"url"`
	Size    int64  `json:"size"`
	Created bool   `json:"created" jsonschema:"a new file, rather than one replaced"`
}

// ListIn is list_files's input.
type ListIn struct {
	Path string `json:"path,omitempty" jsonschema:"the folder (default /workspace): relative to /workspace, absolute or a den:// URL"`
	Where
}

// ListOut is list_files's output.
type ListOut struct {
	Path      string  `json:"path"`
	URL       string  `json:"url"`
	Entries   []Entry `json:"entries" jsonschema:"folders first, then the rest, by name"`
	Truncated bool    `json:"truncated,omitempty" jsonschema:"the folder has more entries than listed"`
}

// Entry is one entry of a folder, as lstat(2) sees it.
type Entry struct {
	Name     string    `json:"name"`
	Type     string    `json:"type" jsonschema:"file, dir, symlink or other"`
	Size     int64     `json:"size"`
	Modified time.Time `json:"modified"`
	Mode     string    `json:"mode" jsonschema:"the permission bits in octal"`
	Target   string    `json:"target,omitempty" jsonschema:"a symbolic link's text (den follows none)"`
}

// guestPath reads a path as a client gives it: a den:// URL, a path in
// the computer, or one relative to /workspace ("" is /workspace).
func guestPath(p string) (resource.URL, error) {
	if strings.HasPrefix(p, resource.Scheme) {
		u, err := resource.Parse(p)
		if err != nil {
			return u, refusedf("%v", err)
		}
		return u, nil
	}
	if strings.IndexByte(p, 0) >= 0 {
		return resource.URL{}, refusedf("%q has a NUL byte", p)
	}
	if !strings.HasPrefix(p, "/") {
		p = resource.Workspace.Guest() + "/" + p
	}
	for c := range strings.SplitSeq(p, "/") {
		if c == ".." {
			return resource.URL{}, refusedf("%q has a \"..\": give a path in one of den's folders", p)
		}
	}
	u, ok := resource.FromGuest(path.Clean(p))
	if !ok {
		var at []string
		for _, k := range resource.Kinds() {
			at = append(at, k.Guest())
		}
		return resource.URL{}, refusedf("%s is not in den's folders: %s", p, strings.Join(at, ", "))
	}
	return u, nil
}

// openFolder opens the folder of u's kind for p: the session's, or the
// agent's. ok is false when the folder does not exist yet (the
// session is still to make, or the computer has not made the folder).
func (s *Server) openFolder(ctx context.Context, p place, u resource.URL) (d *hostfs.Dir, f session.Folders, ok bool, err error) {
	switch {
	case p.made():
		f, err = s.rt.Folders(ctx, p.sess.ID)
	case u.Kind.Scope() == resource.PerAgent:
		f, err = s.rt.AgentFolders(ctx, p.agent)
	default:
		return nil, f, false, nil
	}
	if errors.Is(err, store.ErrNotFound) {
		return nil, f, false, nil
	}
	if err != nil {
		return nil, f, false, err
	}
	d, err = hostfs.OpenDirNamed(f.Dir(u.Kind), u.Kind.Guest())
	if errors.Is(err, fs.ErrNotExist) {
		return nil, f, false, nil
	}
	if err != nil {
		return nil, f, false, fmt.Errorf("mcpserver: open %s: %w", u.Kind.Guest(), err)
	}
	return d, f, true, nil
}

func (s *Server) readFile(ctx context.Context, c *call, in ReadIn) (*mcp.CallToolResult, ReadOut, error) {
	u, err := guestPath(in.Path)
	if err != nil {
		return nil, ReadOut{}, err
	}
	if u.Path == "" {
		return nil, ReadOut{}, refusedf("%s is a folder: list it with list_files", u.Guest())
	}
	switch {
	case in.Offset < 0:
		return nil, ReadOut{}, refusedf("offset %d: want 0 or more", in.Offset)
	case in.Limit < 0 || in.Limit > ReadMax:
		return nil, ReadOut{}, refusedf("limit %d: want 1 to %d bytes", in.Limit, ReadMax)
	case in.Limit == 0:
		in.Limit = ReadDefault
	}
	p, err := s.locate(ctx, c.client, in.Agent, in.Session)
	if err != nil {
		return nil, ReadOut{}, err
	}
	pc, err := s.allow(ctx, c, p, "in session "+p.label(), u.Guest())
	if err != nil {
		return nil, ReadOut{}, err
	}
	out, err := s.read(ctx, p, u, in.Offset, in.Limit)
	s.done(ctx, pc, exitOf(err))
	if err != nil {
		return nil, ReadOut{}, err
	}
	s.setPlace(c.ss, p)
	return nil, out, nil
}

// read reads up to limit bytes of the file u from offset, as
// read_file answers: text as it is, other bytes in base64, a rune cut
// at the end left for the next read.
func (s *Server) read(ctx context.Context, p place, u resource.URL, offset, limit int64) (ReadOut, error) {
	buf, size, err := s.readAt(ctx, p, u, offset, limit)
	if err != nil {
		return ReadOut{}, err
	}
	out := ReadOut{Path: u.Guest(), URL: u.String(), Size: size, Offset: offset, Encoding: "utf-8"}
	if offset+int64(len(buf)) < size {
		if k := cutRune(buf); k > 0 && utf8.Valid(buf[:len(buf)-k]) {
			buf = buf[:len(buf)-k]
		}
	}
	if utf8.Valid(buf) {
		out.Content = string(buf)
	} else {
		out.Content, out.Encoding = base64.StdEncoding.EncodeToString(buf), "base64"
	}
	if end := offset + int64(len(buf)); end < size {
		out.NextOffset = end
	}
	return out, nil
}

// readAt reads up to limit bytes of the file u from offset, and returns
// them with the file's size. A folder is a refusal that says so
// (refusal.folder).
func (s *Server) readAt(ctx context.Context, p place, u resource.URL, offset, limit int64) ([]byte, int64, error) {
	d, _, ok, err := s.openFolder(ctx, p, u)
	if err != nil {
		return nil, 0, err
	}
	if !ok {
		return nil, 0, refusedf("%s does not exist", u.Guest())
	}
	defer d.Close()
	f, err := d.Open(u.Path)
	if err != nil {
		if errors.Is(err, hostfs.ErrNotRegular) {
			if e, lerr := d.Lstat(u.Path); lerr == nil && e.Mode.IsDir() {
				return nil, 0, &refusal{msg: u.Guest() + " is a folder: list it with list_files", folder: true}
			}
		}
		return nil, 0, fileError(err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, 0, fmt.Errorf("mcpserver: %w", err)
	}
	if offset > st.Size() {
		return nil, 0, refusedf("offset %d is past the end of %s (%d bytes)", offset, u.Guest(), st.Size())
	}
	buf := make([]byte, min(limit, st.Size()-offset))
	n, err := f.ReadAt(buf, offset)
	if err != nil && err != io.EOF {
		return nil, 0, fmt.Errorf("mcpserver: read %s: %w", u.Guest(), err)
	}
	return buf[:n], st.Size(), nil
}

// cutRune is how many bytes at the end of b are the start of a rune
// that does not end there (0 when none).
func cutRune(b []byte) int {
	for k := 1; k <= utf8.UTFMax-1 && k <= len(b); k++ {
		c := b[len(b)-k]
		if utf8.RuneStart(c) {
			if !utf8.FullRune(b[len(b)-k:]) {
				return k
			}
			return 0
		}
	}
	return 0
}

func (s *Server) writeFile(ctx context.Context, c *call, in WriteIn) (*mcp.CallToolResult, WriteOut, error) {
	u, err := guestPath(in.Path)
	if err != nil {
		return nil, WriteOut{}, err
	}
	if u.Kind != resource.Workspace || u.Path == "" {
		return nil, WriteOut{}, refusedf("write_file writes files in /workspace, and %s is not one", u.Guest())
	}
	data := []byte(in.Content)
	switch in.Encoding {
	case "", "utf-8":
	case "base64":
		if data, err = base64.StdEncoding.DecodeString(in.Content); err != nil {
			return nil, WriteOut{}, refusedf("content is not base64: %v", err)
		}
	default:
		return nil, WriteOut{}, refusedf("encoding %q: want utf-8 or base64", in.Encoding)
	}
	if len(data) > MaxWrite {
		return nil, WriteOut{}, refusedf("content is %d bytes, more than the %d write_file writes: write it in parts with exec, or with den's files API", len(data), MaxWrite)
	}
	p, err := s.locate(ctx, c.client, in.Agent, in.Session)
	if err != nil {
		return nil, WriteOut{}, err
	}
	if p, err = s.makeFor(ctx, c, p); err != nil {
		return nil, WriteOut{}, err
	}
	pc, err := s.allow(ctx, c, p, fmt.Sprintf("%d bytes, in session %s", len(data), p.label()), u.Guest())
	if err != nil {
		return nil, WriteOut{}, err
	}
	out, err := s.write(ctx, c, p, u, data)
	s.done(ctx, pc, exitOf(err))
	return nil, out, err
}

// write writes data to the file u of the place's session, making the
// session and the folders on the way.
func (s *Server) write(ctx context.Context, c *call, p place, u resource.URL, data []byte) (WriteOut, error) {
	p, err := s.make(ctx, p)
	if err != nil {
		return WriteOut{}, err
	}
	s.setPlace(c.ss, p)
	d, f, ok, err := s.openFolder(ctx, p, u)
	if err != nil {
		return WriteOut{}, err
	}
	if !ok {
		return WriteOut{}, fmt.Errorf("mcpserver: session %s has no %s", p.sess.ID, u.Kind.Guest())
	}
	defer d.Close()
	comps := strings.Split(u.Path, "/")
	dir := d
	for _, name := range comps[:len(comps)-1] {
		sub, _, err := dir.Mkdir(name, 0o755, f.Owner)
		if err != nil {
			if errors.Is(err, hostfs.ErrNotDir) {
				return WriteOut{}, refusedf("%v: a file is on the way", err)
			}
			return WriteOut{}, fileError(err)
		}
		if dir != d {
			dir.Close()
		}
		dir = sub
	}
	if dir != d {
		defer dir.Close()
	}
	name := comps[len(comps)-1]
	created := false
	e, err := dir.Lstat(name)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		created = true
	case err != nil:
		return WriteOut{}, fileError(err)
	case e.Mode.Type() == fs.ModeSymlink:
		return WriteOut{}, refusedf("%s %v: den writes only real files, and never through a link", u.Guest(), hostfs.ErrSymlink)
	case !e.Mode.IsRegular():
		return WriteOut{}, refusedf("%s %v: den writes only files", u.Guest(), hostfs.ErrNotRegular)
	}
	if err := dir.WriteFile(name, data, 0o644, f.Owner, false); err != nil {
		return WriteOut{}, fileError(err)
	}
	return WriteOut{Session: p.sess.ID, Path: u.Guest(), URL: u.String(), Size: int64(len(data)), Created: created}, nil
}

func (s *Server) listFiles(ctx context.Context, c *call, in ListIn) (*mcp.CallToolResult, ListOut, error) {
	u, err := guestPath(in.Path)
	if err != nil {
		return nil, ListOut{}, err
	}
	p, err := s.locate(ctx, c.client, in.Agent, in.Session)
	if err != nil {
		return nil, ListOut{}, err
	}
	pc, err := s.allow(ctx, c, p, "in session "+p.label(), u.Guest())
	if err != nil {
		return nil, ListOut{}, err
	}
	out, err := s.list(ctx, p, u)
	s.done(ctx, pc, exitOf(err))
	if err != nil {
		return nil, ListOut{}, err
	}
	s.setPlace(c.ss, p)
	return nil, out, nil
}

// list lists the folder u. A folder of den's the session does not have
// yet (a session still to make has an empty /workspace) lists empty.
func (s *Server) list(ctx context.Context, p place, u resource.URL) (ListOut, error) {
	out := ListOut{Path: u.Guest(), URL: u.String(), Entries: []Entry{}}
	d, _, ok, err := s.openFolder(ctx, p, u)
	if err != nil {
		return out, err
	}
	if !ok {
		if u.Path != "" {
			return out, refusedf("%s does not exist", u.Guest())
		}
		return out, nil
	}
	defer d.Close()
	dir := d
	if u.Path != "" {
		if dir, err = d.Sub(u.Path); err != nil {
			return out, fileError(err)
		}
		defer dir.Close()
	}
	found, more, err := dir.List(MaxEntries)
	if err != nil {
		return out, fileError(err)
	}
	out.Truncated = more
	for _, e := range found {
		out.Entries = append(out.Entries, entry(e))
	}
	slices.SortFunc(out.Entries, func(a, b Entry) int {
		if (a.Type == "dir") != (b.Type == "dir") {
			if a.Type == "dir" {
				return -1
			}
			return 1
		}
		return strings.Compare(a.Name, b.Name)
	})
	return out, nil
}

func entry(e hostfs.Entry) Entry {
	out := Entry{Name: e.Name, Modified: e.ModTime.UTC(), Mode: fmt.Sprintf("%04o", uint32(e.Mode.Perm()))}
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

// fileError turns an error of hostfs into what the client is told: a
// refusal for what the call or the computer did (hostfs's messages name
// paths as the computer does), err itself for den's own failures.
func fileError(err error) error {
	switch {
	case errors.Is(err, hostfs.ErrSymlink), errors.Is(err, hostfs.ErrNotRegular), errors.Is(err, hostfs.ErrNotDir),
		errors.Is(err, hostfs.ErrEscapes), errors.Is(err, hostfs.ErrInvalidPath), errors.Is(err, hostfs.ErrTooLarge),
		errors.Is(err, hostfs.ErrExists), errors.Is(err, fs.ErrNotExist), errors.Is(err, fs.ErrPermission),
		errors.Is(err, syscall.ENOTDIR), errors.Is(err, syscall.EISDIR), errors.Is(err, syscall.ENAMETOOLONG):
		return refusedf("%v", err)
	}
	return err
}

// exitOf is the audit's exit code of a call that ended with err.
func exitOf(err error) int {
	if err != nil {
		return 1
	}
	return 0
}
