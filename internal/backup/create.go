package backup

import (
	"archive/tar"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"den.dev/den/internal/computer"
	"den.dev/den/internal/config"
	"den.dev/den/internal/mcpclient"
	"den.dev/den/internal/sandbox"
	"den.dev/den/internal/sandbox/idmap"
	"den.dev/den/internal/sandbox/rootfs"
	"den.dev/den/internal/store"
)

// Options say what Create copies and from where.
type Options struct {
	DataDir string
	// ConfigPath is the config file; mcp.json and env are beside it.
	ConfigPath string
	// Secrets keeps den's secrets (see Manifest.Secrets); without, the
	// config files' secrets are emptied and the secret files left out.
	Secrets bool
	// ExcludeComputers leaves the agents' root filesystems out.
	ExcludeComputers bool
	// Live says a den serve runs on the data dir (recorded).
	Live    bool
	Version string // den's
	// Progress, when set, is called at most about ten times a second
	// while files are copied, and once at the end.
	Progress func(Progress)
	// Warn, when set, is told what is left out and why, as it happens.
	Warn func(string)
}

// Progress is how far a backup or a restore is.
type Progress struct {
	Done, Total int64 // bytes: files read (backup), archive read (restore); Total 0 when unknown
	Files       int
	Final       bool
}

// Summary is what Create wrote.
type Summary struct {
	Manifest Manifest
	Files    int   // regular files of the data dir and config files
	Bytes    int64 // their content
	Written  int64 // the archive's size
	Warnings []string
	Took     time.Duration
}

// creation is one Create.
type creation struct {
	o       Options
	data    string
	w       *writer
	jobs    []job
	leftOut []string
	warns   []string
	total   int64
	last    time.Time
}

// job is one thing to copy: a folder's entry, a file or a tree.
type job struct {
	name string // in the archive
	path string // on the host
	kind kind
	tree bool
	dir  bool          // only the folder's own entry (den's folders around the parts)
	ids  sandbox.IDMap // who the computer's files belong to now
}

// Create writes a backup of the data dir and the config files to w.
// It may run while den serve and other dens use the data dir (see the
// package doc for what that means for each file).
func Create(ctx context.Context, w io.Writer, o Options) (Summary, error) {
	return createArchive(ctx, w, o, nil)
}

// createArchive is Create; ready, when set, is told how large the archive can
// be before its first byte is written, and may refuse.
func createArchive(ctx context.Context, w io.Writer, o Options, ready func(upper int64) error) (Summary, error) {
	start := time.Now()
	data, err := filepath.Abs(o.DataDir)
	if err != nil {
		return Summary{}, fmt.Errorf("backup: %w", err)
	}
	if fi, err := os.Stat(data); err != nil || !fi.IsDir() {
		if err == nil {
			err = errors.New("not a folder")
		}
		return Summary{}, fmt.Errorf("backup: data dir %s: %w", data, err)
	}
	c := &creation{o: o, data: data}
	m := Manifest{Format: Format, Den: o.Version, Created: time.Now().UTC(), Secrets: o.Secrets,
		Computers: !o.ExcludeComputers, Live: o.Live, Owners: "inside"}
	m.Host, _ = os.Hostname()

	// The database first: the point in time the archive stands for.
	sweepSnapshots(data)
	var db string
	if _, err := os.Lstat(filepath.Join(data, dbName)); err == nil {
		db = filepath.Join(data, fmt.Sprintf(".backup-%d-%d.db", os.Getpid(), time.Now().UnixNano()))
		if m.Schema, err = store.Snapshot(ctx, filepath.Join(data, dbName), db); err != nil {
			return Summary{}, fmt.Errorf("backup: %w", err)
		}
		defer os.Remove(db)
		if n, err := store.CountSessions(ctx, db); err == nil {
			m.Sessions = &n
		}
	}
	configs, err := c.configs(&m)
	if err != nil {
		return Summary{}, err
	}
	if err := c.plan(&m); err != nil {
		return Summary{}, err
	}
	m.LeftOut = c.leftOut
	total, entries := c.size(db, configs)
	c.total = total
	if ready != nil {
		if err := ready(upperBound(total, entries)); err != nil {
			return Summary{}, err
		}
	}

	c.w = newWriter(w, c.tick)
	mb := m.marshal()
	if err := c.w.bytesFile(ManifestName, 0o600, mb, m.Created); err != nil {
		return Summary{}, fmt.Errorf("backup: %w", err)
	}
	for _, f := range configs {
		if err := c.w.bytesFile(configDir+f.name, 0o600, f.data, f.mtime); err != nil {
			return Summary{}, fmt.Errorf("backup: %w", err)
		}
	}
	if db != "" {
		if err := c.run(ctx, job{name: dataDir + dbName, path: db}); err != nil {
			return Summary{}, fmt.Errorf("backup: %s: %w", dbName, err)
		}
	}
	for _, j := range c.jobs {
		if err := c.run(ctx, j); err != nil {
			return Summary{}, fmt.Errorf("backup: %s: %w", j.path, err)
		}
	}
	if err := c.w.close(); err != nil {
		return Summary{}, fmt.Errorf("backup: %w", err)
	}
	// The files are the data dir's and the config's: not the manifest.
	s := Summary{Manifest: m, Files: c.w.files - 1, Bytes: c.w.bytes - int64(len(mb)), Written: c.w.out.n, Warnings: c.warns, Took: time.Since(start)}
	if o.Progress != nil {
		o.Progress(Progress{Done: c.w.bytes, Total: max(c.total, c.w.bytes), Files: c.w.files, Final: true})
	}
	return s, nil
}

func (c *creation) warn(format string, args ...any) {
	msg := fmt.Sprintf(format, args...)
	c.warns = append(c.warns, msg)
	if c.o.Warn != nil {
		c.o.Warn(msg)
	}
}

func (c *creation) tick() {
	if c.o.Progress == nil || time.Since(c.last) < 100*time.Millisecond {
		return
	}
	c.last = time.Now()
	c.o.Progress(Progress{Done: c.w.bytes, Total: max(c.total, c.w.bytes), Files: c.w.files})
}

// sweepSnapshots removes database copies that a backup killed midway
// left in the data dir (.backup-PID-NANOS.db of a process that is gone).
func sweepSnapshots(data string) {
	ents, _ := os.ReadDir(data)
	for _, e := range ents {
		f := strings.Split(e.Name(), "-")
		if len(f) != 3 || f[0] != ".backup" || !strings.HasSuffix(f[2], ".db") {
			continue
		}
		if pid, err := strconv.Atoi(f[1]); err == nil && pid > 0 && pid != os.Getpid() && unix.Kill(pid, 0) == unix.ESRCH {
			os.Remove(filepath.Join(data, e.Name()))
		}
	}
}

// configEntry is one config file as it goes into the archive.
type configEntry struct {
	name  string
	data  []byte
	mtime time.Time
}

// configs reads the config files: secrets emptied unless Secrets.
func (c *creation) configs(m *Manifest) ([]configEntry, error) {
	if c.o.ConfigPath == "" {
		return nil, nil
	}
	dir := filepath.Dir(c.o.ConfigPath)
	var out []configEntry
	for _, f := range []struct {
		name, path string
		redact     func([]byte) ([]byte, []string, error)
	}{
		{configFile, c.o.ConfigPath, config.Redact},
		{mcpFile, mcpclient.PathBeside(c.o.ConfigPath), mcpclient.Redact},
		{envFile, filepath.Join(dir, envFile), nil},
	} {
		fi, err := os.Stat(f.path)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err == nil && !fi.Mode().IsRegular() {
			err = errors.New("not a regular file")
		}
		if err == nil && fi.Size() > 16<<20 {
			err = errors.New("over 16 MiB")
		}
		if err != nil {
			return nil, fmt.Errorf("backup: %s: %w", f.path, err)
		}
		b, err := os.ReadFile(f.path)
		if err != nil {
			return nil, fmt.Errorf("backup: %w", err)
		}
		if !c.o.Secrets {
			if f.redact == nil {
				c.leftOut = append(c.leftOut, "config/"+f.name+" (secrets)")
				continue
			}
			red, keys, err := f.redact(b)
			if err != nil {
				c.warn("%s does not read, so den cannot leave its secrets out: left out of the backup (%v)", f.path, err)
				c.leftOut = append(c.leftOut, "config/"+f.name+" (unreadable, may hold secrets)")
				continue
			}
			b = red
			for _, k := range keys {
				m.Redacted = append(m.Redacted, f.name+":"+k)
			}
		}
		m.Config = append(m.Config, f.name)
		out = append(out, configEntry{name: f.name, data: b, mtime: fi.ModTime()})
	}
	return out, nil
}

// plan lists what to copy from the data dir, and what is left out.
func (c *creation) plan(m *Manifest) error {
	ents, err := os.ReadDir(c.data)
	if err != nil {
		return fmt.Errorf("backup: %w", err)
	}
	for _, e := range ents {
		name := e.Name()
		switch {
		case name == dbName || name == "agents" || skipData[name] || strings.HasPrefix(name, "."):
		case name == "mcp":
			sub, _ := os.ReadDir(filepath.Join(c.data, name))
			for _, s := range sub {
				if !skipMCP[s.Name()] {
					c.dataPart("mcp/" + s.Name())
				}
			}
		default:
			c.dataPart(name)
		}
	}
	agents, err := os.ReadDir(filepath.Join(c.data, "agents"))
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("backup: %w", err)
	}
	if err != nil {
		return nil
	}
	ids, idErr := idmap.For(c.data)
	c.jobs = append(c.jobs, job{name: dataDir + "agents", path: filepath.Join(c.data, "agents"), dir: true})
	for _, a := range agents {
		if !a.IsDir() || computer.ValidName("agent", a.Name()) != nil {
			if !strings.HasPrefix(a.Name(), ".") {
				c.warn("agents/%s: not an agent's folder; left out", a.Name())
			}
			continue
		}
		if idErr != nil {
			return fmt.Errorf("backup: %w", idErr)
		}
		m.Agents = append(m.Agents, a.Name())
		if err := c.agent(a.Name(), ids); err != nil {
			return err
		}
	}
	return nil
}

// dataPart plans one entry of the data dir beside the database and the
// agents.
func (c *creation) dataPart(name string) {
	p, ok := findPart(dataParts, name)
	switch {
	case !ok:
		c.warn("%s: den backup does not know it; left out", name)
		c.leftOut = append(c.leftOut, name+" (unknown)")
	case p.secret && !c.o.Secrets:
		c.leftOut = append(c.leftOut, name+" (secret)")
	default:
		c.jobs = append(c.jobs, job{name: dataDir + name, path: filepath.Join(c.data, name), kind: p.kind, tree: p.tree})
	}
}

// agent plans one agent's folder: who its computer's files belong to
// now, its parts, and its sessions' folders.
func (c *creation) agent(agent string, ids sandbox.IDMap) error {
	dir := filepath.Join(c.data, "agents", agent)
	owners := ids
	if info, err := rootfs.ReadInfo(filepath.Join(dir, "computer.json")); err == nil {
		owners = computer.TreeIDs(ids, info)
	} else if !errors.Is(err, fs.ErrNotExist) {
		c.warn("agents/%s/computer.json: %v; its files are recorded as den's ids map them now", agent, err)
	}
	at := dataDir + "agents/" + agent
	c.jobs = append(c.jobs, job{name: at, path: dir, dir: true})
	ents, err := os.ReadDir(dir)
	if err != nil {
		return fmt.Errorf("backup: %w", err)
	}
	for _, e := range ents {
		name := e.Name()
		if name == sessionsDir {
			c.sessions(agent, owners)
			continue
		}
		if skipAgent(name) {
			continue
		}
		p, ok := findPart(agentParts, name)
		switch {
		case !ok:
			c.warn("agents/%s/%s: den backup does not know it; left out", agent, name)
			c.leftOut = append(c.leftOut, "agents/"+agent+"/"+name+" (unknown)")
		case p.secret && !c.o.Secrets:
			c.leftOut = append(c.leftOut, "agents/"+agent+"/"+name+" (secret: the browser's logins)")
		case p.computer && c.o.ExcludeComputers:
			c.leftOut = append(c.leftOut, "agents/"+agent+"/"+name+" (computer)")
		default:
			c.jobs = append(c.jobs, job{name: at + "/" + name, path: filepath.Join(dir, name), kind: p.kind, tree: p.tree, ids: owners})
		}
	}
	return nil
}

func (c *creation) sessions(agent string, owners sandbox.IDMap) {
	dir := filepath.Join(c.data, "agents", agent, sessionsDir)
	at := dataDir + "agents/" + agent + "/" + sessionsDir
	ents, err := os.ReadDir(dir)
	if err != nil {
		c.warn("agents/%s/%s: %v; left out", agent, sessionsDir, err)
		return
	}
	c.jobs = append(c.jobs, job{name: at, path: dir, dir: true})
	for _, s := range ents {
		if !s.IsDir() || computer.ValidName("session", s.Name()) != nil {
			c.warn("agents/%s/%s/%s: not a session's folder; left out", agent, sessionsDir, s.Name())
			continue
		}
		sdir := filepath.Join(dir, s.Name())
		c.jobs = append(c.jobs, job{name: at + "/" + s.Name(), path: sdir, dir: true})
		parts, _ := os.ReadDir(sdir)
		for _, e := range parts {
			p, ok := findPart(sessionParts(), e.Name())
			if !ok {
				c.warn("agents/%s/%s/%s/%s: den backup does not know it; left out", agent, sessionsDir, s.Name(), e.Name())
				continue
			}
			c.jobs = append(c.jobs, job{name: at + "/" + s.Name() + "/" + p.name, path: filepath.Join(sdir, p.name), kind: p.kind, tree: true, ids: owners})
		}
	}
}

// size is how many bytes of files the backup will read, and how many
// entries it will write, as far as a look now tells.
func (c *creation) size(db string, configs []configEntry) (bytes int64, entries int) {
	for _, f := range configs {
		bytes += int64(len(f.data))
	}
	entries = len(configs) + 1
	if fi, err := os.Stat(db); db != "" && err == nil {
		bytes += fi.Size()
		entries++
	}
	for _, j := range c.jobs {
		if j.dir {
			entries++
			continue
		}
		filepath.WalkDir(j.path, func(_ string, d fs.DirEntry, err error) error {
			if err != nil {
				return nil
			}
			entries++
			if d.Type().IsRegular() {
				if fi, err := d.Info(); err == nil {
					bytes += fi.Size()
				}
			}
			return nil
		})
	}
	return bytes, entries
}

// upperBound is how large an archive of files of these bytes in these
// entries can be: what gzip cannot compress it stores with a few bytes
// per block, and each entry takes at most a header, a PAX header of
// extended attributes, padding and its line in SHA256SUMS.
func upperBound(bytes int64, entries int) int64 {
	return bytes + bytes/1000 + int64(entries)*(2<<10) + 64<<10
}

// run copies one job.
func (c *creation) run(ctx context.Context, j job) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if j.tree {
		return c.tree(ctx, j)
	}
	var st unix.Stat_t
	if err := unix.Lstat(j.path, &st); err != nil {
		if !errors.Is(err, unix.ENOENT) {
			c.warn("%s: %v; left out", j.path, err)
		}
		return nil
	}
	if j.dir {
		if st.Mode&syscall.S_IFMT != syscall.S_IFDIR {
			c.warn("%s is not a folder; left out", j.path)
			return nil
		}
		return c.w.header(c.header(j, j.name+"/", &st, tar.TypeDir))
	}
	return c.leaf(j, unix.AT_FDCWD, j.path, j.path, j.name, &st, nil)
}

// tree copies a folder and everything in it without following a link
// anywhere beneath it: each folder is opened relative to its parent's
// descriptor (O_NOFOLLOW), and each file relative to its folder's, so a
// folder the computer swaps for a link to the host's /etc while the
// backup runs is never entered.
func (c *creation) tree(ctx context.Context, j job) error {
	fd, err := unix.Open(j.path, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	switch {
	case errors.Is(err, unix.ENOENT):
		return nil
	case errors.Is(err, unix.ELOOP) || errors.Is(err, unix.ENOTDIR):
		c.warn("%s is not a folder; left out", j.path)
		return nil
	case err != nil:
		c.warn("%s: %v; left out", j.path, err)
		return nil
	}
	return c.folder(ctx, j, fd, j.path, j.name, map[[2]uint64]string{})
}

// folder copies the open folder fd (which it closes) and what is in it.
// links holds the tree's files with several names.
func (c *creation) folder(ctx context.Context, j job, fd int, show, name string, links map[[2]uint64]string) error {
	f := os.NewFile(uintptr(fd), show)
	defer f.Close()
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return err
	}
	h := c.header(j, name+"/", &st, tar.TypeDir)
	c.xattrs(j, h, fdXattrs(fd), show)
	if err := c.w.header(h); err != nil {
		return err
	}
	ents, err := f.ReadDir(-1)
	if err != nil {
		c.warn("%s: %v; what could not be listed is left out", show, err)
	}
	for _, e := range ents {
		if err := ctx.Err(); err != nil {
			return err
		}
		base := e.Name()
		cshow, cname := show+"/"+base, name+"/"+base
		var cst unix.Stat_t
		if err := unix.Fstatat(fd, base, &cst, unix.AT_SYMLINK_NOFOLLOW); err != nil {
			if !errors.Is(err, unix.ENOENT) {
				c.warn("%s: %v; left out", cshow, err)
			}
			continue
		}
		if cst.Mode&syscall.S_IFMT != syscall.S_IFDIR {
			if err := c.leaf(j, fd, base, cshow, cname, &cst, links); err != nil {
				return err
			}
			continue
		}
		cfd, err := unix.Openat(fd, base, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		if err != nil {
			switch {
			case errors.Is(err, unix.ENOENT):
			case errors.Is(err, unix.ELOOP) || errors.Is(err, unix.ENOTDIR):
				c.warn("%s changed while it was read; left out", cshow)
			default:
				c.warn("%s: %v; left out", cshow, err)
			}
			continue
		}
		var now unix.Stat_t
		if err := unix.Fstat(cfd, &now); err != nil || now.Dev != cst.Dev || now.Ino != cst.Ino {
			unix.Close(cfd)
			c.warn("%s changed while it was read; left out", cshow)
			continue
		}
		if err := c.folder(ctx, j, cfd, cshow, cname, links); err != nil {
			return err
		}
	}
	return nil
}

// nobody is the inside id an owner the computer does not see is
// recorded as.
const nobody = 65534

// header is an entry's header: its mode and time, and for a computer's
// files the owners as the computer sees them.
func (c *creation) header(j job, name string, st *unix.Stat_t, typ byte) *tar.Header {
	h := &tar.Header{Name: name, Typeflag: typ, Mode: int64(st.Mode & 0o7777), ModTime: time.Unix(st.Mtim.Sec, st.Mtim.Nsec)}
	if j.kind == computerFiles {
		h.Uid, h.Gid = nobody, nobody
		if in, ok := j.ids.InsideUID(st.Uid); ok {
			h.Uid = int(in)
		}
		if in, ok := j.ids.InsideGID(st.Gid); ok {
			h.Gid = int(in)
		}
	}
	return h
}

// leaf copies an entry that is not a folder: base in the folder dfd
// (or a whole path with AT_FDCWD), found as st. links is nil where hard
// links are not kept.
func (c *creation) leaf(j job, dfd int, base, show, name string, st *unix.Stat_t, links map[[2]uint64]string) error {
	switch st.Mode & syscall.S_IFMT {
	case syscall.S_IFLNK:
		if j.kind == denFiles {
			c.warn("%s: a symbolic link where den makes none; left out", show)
			return nil
		}
		buf := make([]byte, unix.PathMax)
		n, err := unix.Readlinkat(dfd, base, buf)
		if err != nil {
			return nil // gone meanwhile
		}
		h := c.header(j, name, st, tar.TypeSymlink)
		h.Linkname = string(buf[:n])
		c.xattrs(j, h, nameXattrs(dfd, base), show)
		return c.w.header(h)
	case syscall.S_IFIFO:
		if j.kind != computerFiles {
			return nil
		}
		h := c.header(j, name, st, tar.TypeFifo)
		c.xattrs(j, h, nameXattrs(dfd, base), show)
		return c.w.header(h)
	case syscall.S_IFREG:
		if links != nil && j.kind != denFiles && st.Nlink > 1 {
			key := [2]uint64{st.Dev, st.Ino}
			if first, ok := links[key]; ok {
				h := c.header(j, name, st, tar.TypeLink)
				h.Linkname = first
				return c.w.header(h)
			}
			links[key] = name
		}
		return c.regular(j, dfd, base, show, name, st)
	}
	return nil // devices and sockets: every computer gets its own /dev
}

// regular copies a regular file, opened without following a link and
// checked to be the entry that was found.
func (c *creation) regular(j job, dfd int, base, show, name string, st *unix.Stat_t) error {
	fd, err := unix.Openat(dfd, base, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_NOCTTY|unix.O_CLOEXEC, 0)
	if err != nil {
		if !errors.Is(err, unix.ENOENT) {
			c.warn("%s: %v; left out", show, err)
		}
		return nil
	}
	f := os.NewFile(uintptr(fd), show)
	defer f.Close()
	var now unix.Stat_t
	if err := unix.Fstat(fd, &now); err != nil {
		return err
	}
	if now.Dev != st.Dev || now.Ino != st.Ino || now.Mode&syscall.S_IFMT != syscall.S_IFREG {
		c.warn("%s changed while it was read; left out", show)
		return nil
	}
	h := c.header(j, name, &now, tar.TypeReg)
	h.Size = now.Size
	c.xattrs(j, h, fdXattrs(fd), show)
	return c.w.content(h, f)
}

// xattrs records an entry's extended attributes (those carried) in its
// header: a file capability only on a computer's files, as the
// computer sees it.
func (c *creation) xattrs(j job, h *tar.Header, x xattrSource, show string) {
	names, values, err := x.read()
	if err != nil {
		c.warn("%s: %v; copied without its extended attributes", show, err)
		return
	}
	size := 0
	for i, name := range names {
		v := values[i]
		if name == capabilityXattr {
			if j.kind != computerFiles {
				continue // den's files are never privileged
			}
			in, ok := capInside(v, j.ids)
			if !ok {
				c.warn("%s: its file capability holds for no root of its computer; left out", show)
				continue
			}
			v = in
		}
		if strings.Contains(name, "=") || size+len(name)+len(v) > maxXattrs {
			c.warn("%s: extended attribute %s does not fit in the archive; left out", show, name)
			continue
		}
		size += len(name) + len(v)
		if h.PAXRecords == nil {
			h.PAXRecords = map[string]string{}
		}
		h.PAXRecords[xattrRecord+name] = v
	}
}
