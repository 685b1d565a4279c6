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
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"den.dev/den/internal/mcpclient"
	"den.dev/den/internal/privfile"
	"den.dev/den/internal/sandbox"
	"den.dev/den/internal/sandbox/idmap"
	"den.dev/den/internal/sandbox/rootfs"
	"den.dev/den/internal/store"
)

// RestoreOptions say where Restore writes.
type RestoreOptions struct {
	DataDir string
	// ConfigPath is where the config file goes; mcp.json and env go
	// beside it.
	ConfigPath string
	// Force restores over a data dir that holds data and over config
	// files that exist: they are moved aside, never deleted.
	Force bool
	// Total is the archive's size when known, for Progress.
	Total    int64
	Progress func(Progress)
	// Warn, when set, is told what could not be restored as it was, as
	// it happens.
	Warn func(string)
}

// RestoreSummary is what Restore did.
type RestoreSummary struct {
	Manifest Manifest
	Files    int   // regular files written, config files included
	Bytes    int64 // their content
	// Aside are where the data and config files that were in the way
	// went (with Force).
	Aside []string
	// PushForgotten is how many browsers' push subscriptions were
	// dropped: they belonged to a VAPID key the archive did not hold.
	PushForgotten int
	// Warnings say what could not be restored as it was: extended
	// attributes this machine or den's privileges refused, one each.
	Warnings []string
	Took     time.Duration
}

// ignorable are the data dir's entries that do not count as data:
// what den makes again, and the id range (kept, so that the computers'
// files go to the ids this machine already uses).
var ignorable = map[string]bool{"serve.lock": true, "run": true, "cache": true, "bin": true, "locks": true, "idmap.json": true}

// Restore writes the archive read from r into the data dir and the
// config files, or refuses (see the package doc). The caller holds the
// data dir's lock, so that no den serve runs on it meanwhile and no
// other restore: a staging folder left there is one a restore that was
// killed left, and goes.
func Restore(ctx context.Context, r io.Reader, o RestoreOptions) (RestoreSummary, error) {
	start := time.Now()
	data, err := filepath.Abs(o.DataDir)
	if err != nil {
		return RestoreSummary{}, fmt.Errorf("restore: %w", err)
	}
	a, err := openArchive(r)
	if err != nil {
		return RestoreSummary{}, fmt.Errorf("restore: %w", err)
	}
	defer a.close()
	m, err := a.manifest()
	if err == nil {
		err = m.check(store.SchemaVersion())
	}
	if err != nil {
		return RestoreSummary{}, fmt.Errorf("restore: %w", err)
	}
	targets := configTargets(o.ConfigPath)
	for _, name := range m.Config {
		if _, ok := targets[name]; !ok || o.ConfigPath == "" {
			return RestoreSummary{}, fmt.Errorf("restore: %w: config file %q", ErrUnsafe, name)
		}
	}
	sweepStages(data)
	if !o.Force {
		if err := checkEmpty(data, m.Config, targets); err != nil {
			return RestoreSummary{}, err
		}
	}
	if err := os.MkdirAll(data, 0o700); err != nil {
		return RestoreSummary{}, fmt.Errorf("restore: %w", err)
	}
	stage, err := os.MkdirTemp(data, stagePrefix)
	if err != nil {
		return RestoreSummary{}, fmt.Errorf("restore: %w", err)
	}
	defer removeAll(stage)

	rs, err := newRestorer(stage, data, m, o.Warn)
	if err != nil {
		return RestoreSummary{}, err
	}
	defer rs.closeTrees()
	if err := rs.readAll(ctx, a, o); err != nil {
		return RestoreSummary{}, err
	}
	s := RestoreSummary{Manifest: m, Files: rs.files, Bytes: rs.bytes, Warnings: rs.warnings}
	if s.PushForgotten, err = rs.database(ctx); err != nil {
		return RestoreSummary{}, fmt.Errorf("restore: %w", err)
	}
	stamp := time.Now().Format("20060102-150405")
	if s.Aside, err = rs.place(stamp); err != nil {
		return s, fmt.Errorf("restore: %w", err)
	}
	aside, err := rs.placeConfigs(targets, stamp)
	s.Aside = append(s.Aside, aside...)
	if err != nil {
		return s, fmt.Errorf("restore: %w", err)
	}
	if o.Progress != nil {
		o.Progress(Progress{Done: a.in.n, Total: max(o.Total, a.in.n), Files: rs.files, Final: true})
	}
	s.Took = time.Since(start)
	return s, nil
}

// readAll writes every entry the shared reader checked, up to
// SHA256SUMS, and finishes the trees once the archive is checked whole.
func (rs *restorer) readAll(ctx context.Context, a *archive, o RestoreOptions) error {
	rd := newReader(a, rs.m)
	tick := func() {
		if o.Progress != nil && time.Since(rs.last) >= 100*time.Millisecond {
			rs.last = time.Now()
			o.Progress(Progress{Done: a.in.n, Total: o.Total, Files: rd.files})
		}
	}
	if err := rd.each(ctx, rs.add, tick); err != nil {
		return fmt.Errorf("restore: %w", err)
	}
	rs.files, rs.bytes = rd.files, rd.bytes
	if err := rs.finish(); err != nil {
		return fmt.Errorf("restore: %w", err)
	}
	return nil
}

// placeConfigs writes the config files (mode 0600), moving what is
// at their names aside first.
func (rs *restorer) placeConfigs(targets map[string]string, stamp string) (aside []string, err error) {
	for _, name := range rs.m.Config {
		dst := targets[name]
		if _, err := os.Lstat(dst); err == nil {
			old := dst + ".before-restore-" + stamp
			if err := os.Rename(dst, old); err != nil {
				return aside, err
			}
			aside = append(aside, old)
		}
		if err := privfile.Replace(dst, rs.configs[name]); err != nil {
			return aside, err
		}
	}
	return aside, nil
}

// configTargets are where each config file of an archive goes.
func configTargets(configPath string) map[string]string {
	return map[string]string{
		configFile: configPath,
		mcpFile:    mcpclient.PathBeside(configPath),
		envFile:    filepath.Join(filepath.Dir(configPath), envFile),
	}
}

// checkEmpty refuses a data dir that holds data, and config files the
// archive would replace.
func checkEmpty(data string, configs []string, targets map[string]string) error {
	var held []string
	ents, err := os.ReadDir(data)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("restore: %w", err)
	}
	for _, e := range ents {
		if ignorable[e.Name()] || emptyDir(filepath.Join(data, e.Name())) {
			continue
		}
		held = append(held, e.Name())
	}
	if len(held) > 0 {
		return fmt.Errorf("restore: %w: %s holds %s: restore into an empty data dir (--data-dir), or pass --force to move what is there aside",
			ErrNotEmpty, data, strings.Join(held, ", "))
	}
	for _, name := range configs {
		if fi, err := os.Lstat(targets[name]); err == nil && (fi.Size() > 0 || !fi.Mode().IsRegular()) {
			return fmt.Errorf("restore: %w: %s exists: pass --config to restore the config elsewhere, or --force to move it aside",
				ErrNotEmpty, targets[name])
		}
	}
	return nil
}

// stagePrefix names a restore's staging folder in the data dir.
const stagePrefix = ".restore-"

func sweepStages(data string) {
	ents, _ := os.ReadDir(data)
	for _, e := range ents {
		if strings.HasPrefix(e.Name(), stagePrefix) && e.IsDir() {
			removeAll(filepath.Join(data, e.Name()))
		}
	}
}

func emptyDir(p string) bool {
	fi, err := os.Lstat(p)
	if err != nil || !fi.IsDir() {
		return false
	}
	f, err := os.Open(p)
	if err != nil {
		return false
	}
	defer f.Close()
	_, err = f.Readdirnames(1)
	return errors.Is(err, io.EOF)
}

// restorer writes an archive's entries into the staging folder.
type restorer struct {
	stage string
	m     Manifest
	ids   sandbox.IDMap // the ids this machine gives its computers
	root  bool          // den runs as root: owners are set
	uid   int
	gid   int

	den     *rootfs.Tree // den's files, in the staging folder
	cur     *rootfs.Tree // the computer's or host tree being written
	curRoot string       // its folder, relative to the staging folder
	configs map[string][]byte

	warn     func(string)
	warnings []string
	refused  map[string]bool // extended attributes refused, warned of once

	files int
	bytes int64
	last  time.Time
}

func newRestorer(stage, data string, m Manifest, warn func(string)) (*restorer, error) {
	// The computers' files go to the range this data dir already
	// records, if any; else to the one this machine gives.
	if b, err := os.ReadFile(filepath.Join(data, idmap.RecordFile)); err == nil {
		if err := os.WriteFile(filepath.Join(stage, idmap.RecordFile), b, 0o600); err != nil {
			return nil, fmt.Errorf("restore: %w", err)
		}
	}
	ids, err := idmap.For(stage)
	if err != nil {
		return nil, fmt.Errorf("restore: %w", err)
	}
	den, err := rootfs.OpenTree(stage)
	if err != nil {
		return nil, fmt.Errorf("restore: %w", err)
	}
	rs := &restorer{stage: stage, m: m, ids: ids, root: os.Geteuid() == 0, uid: os.Getuid(), gid: os.Getgid(),
		den: den, configs: map[string][]byte{}, warn: warn, refused: map[string]bool{}}
	den.KeepXattrs(rs.xattrRefused)
	return rs, nil
}

// xattrRefused warns, once for each name, of an extended attribute
// this machine or den's privileges refuse: the file is restored
// without it.
func (rs *restorer) xattrRefused(name string, err error) {
	if rs.refused[name] {
		return
	}
	rs.refused[name] = true
	why := err.Error()
	if errors.Is(err, unix.EPERM) && !rs.root {
		why += ", den is not root"
	}
	msg := fmt.Sprintf("extended attribute %s could not be set (%s): files that had it are restored without it", name, why)
	rs.warnings = append(rs.warnings, msg)
	if rs.warn != nil {
		rs.warn(msg)
	}
}

// add writes one entry.
func (rs *restorer) add(e *entry) error {
	h := e.h
	if e.config != "" {
		return rs.config(e.config, h, e.body)
	}
	p := e.at
	if p.kind == computerFiles {
		h.Uid, h.Gid = rs.hostIDs(h.Uid, h.Gid)
	} else {
		h.Uid, h.Gid = rs.uid, rs.gid
		h.Mode &^= 0o6000 // den's files are never setuid or setgid
	}
	if h.Typeflag == tar.TypeLink {
		h.Linkname = e.link
	}
	if v, ok := h.PAXRecords[xattrRecord+capabilityXattr]; ok {
		// For the root of the computer on this machine; den's own files
		// are never privileged, and neither is a file for host root (a
		// capability for root 0 holds for every program the host runs).
		delete(h.PAXRecords, xattrRecord+capabilityXattr)
		if p.kind == computerFiles {
			in, _ := capRoot(v)
			if host, _ := rs.hostIDs(int(in), int(in)); host != 0 {
				h.PAXRecords[xattrRecord+capabilityXattr] = capFor(v, uint32(host))
			}
		}
	}
	tree := rs.den
	if p.tree != "" {
		var err error
		if tree, err = rs.open(p.tree); err != nil {
			return err
		}
	}
	h.Name = p.rel
	return tree.Add(h, e.body)
}

// hostIDs maps a computer's inside ids to this machine's host ids.
func (rs *restorer) hostIDs(uid, gid int) (int, int) {
	if !rs.root {
		return rs.uid, rs.gid
	}
	host := func(in int, to func(uint32) (uint32, bool)) int {
		if in >= 0 && in <= 1<<32-1 {
			if h, ok := to(uint32(in)); ok {
				return int(h)
			}
		}
		if h, ok := to(nobody); ok {
			return int(h)
		}
		h, _ := to(0)
		return int(h)
	}
	return host(uid, rs.ids.HostUID), host(gid, rs.ids.HostGID)
}

// open returns the tree at dir, closing the one before: a tree's
// entries come together (the reader checks it), so a tree closed is
// done.
func (rs *restorer) open(dir string) (*rootfs.Tree, error) {
	if dir == rs.curRoot {
		return rs.cur, nil
	}
	if err := rs.closeCur(); err != nil {
		return nil, err
	}
	// The folder and its parents (den's folders, whose own entries give
	// them their modes) are made through an os.Root on the staging
	// folder, so that nothing leads them elsewhere.
	sr, err := os.OpenRoot(rs.stage)
	if err != nil {
		return nil, err
	}
	err = sr.MkdirAll(dir, 0o700)
	sr.Close()
	if err != nil {
		return nil, err
	}
	t, err := rootfs.OpenTree(filepath.Join(rs.stage, filepath.FromSlash(dir)))
	if err != nil {
		return nil, err
	}
	t.KeepXattrs(rs.xattrRefused)
	rs.cur, rs.curRoot = t, dir
	return t, nil
}

func (rs *restorer) closeCur() error {
	if rs.cur == nil {
		return nil
	}
	err := rs.cur.Finish()
	rs.cur.Close()
	rs.cur, rs.curRoot = nil, ""
	return err
}

func (rs *restorer) closeTrees() {
	if rs.cur != nil {
		rs.cur.Close()
		rs.cur = nil
	}
	if rs.den != nil {
		rs.den.Close()
		rs.den = nil
	}
}

// config keeps a config file for the end.
func (rs *restorer) config(name string, h *tar.Header, r io.Reader) error {
	b, err := io.ReadAll(io.LimitReader(r, h.Size))
	if err != nil {
		return err
	}
	rs.configs[name] = b
	return nil
}

// finish closes the trees, giving folders their modes, and records in
// each computer.json that the computer's files are this machine's ids'.
func (rs *restorer) finish() error {
	if err := rs.closeCur(); err != nil {
		return err
	}
	err := rs.den.Finish()
	rs.den.Close()
	rs.den = nil
	if err != nil {
		return err
	}
	agents, _ := os.ReadDir(filepath.Join(rs.stage, "agents"))
	for _, a := range agents {
		file := filepath.Join(rs.stage, "agents", a.Name(), "computer.json")
		info, err := rootfs.ReadInfo(file)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return err
		}
		info.Owner = nil
		if uid, gid, ok := rs.ids.Root(); ok && rs.root {
			info.Owner = &rootfs.Owner{UID: uint32(uid), GID: uint32(gid)}
		}
		if err := rootfs.WriteInfo(file, info); err != nil {
			return err
		}
	}
	return nil
}

// database checks the restored database, and drops the push
// subscriptions when the archive had no VAPID key: they were made for
// the old key, and push services refuse den's new one for them.
func (rs *restorer) database(ctx context.Context) (forgotten int, err error) {
	db := filepath.Join(rs.stage, dbName)
	if _, err := os.Lstat(db); errors.Is(err, fs.ErrNotExist) {
		return 0, nil
	}
	if _, err := store.CheckFile(ctx, db); err != nil {
		return 0, err
	}
	if _, err := os.Lstat(filepath.Join(rs.stage, "push")); err == nil {
		return 0, nil
	}
	st, err := store.Open(db)
	if err != nil {
		return 0, err
	}
	defer st.Close()
	subs, err := st.PushSubscriptions(ctx)
	if err != nil {
		return 0, err
	}
	for _, s := range subs {
		if err := st.DeletePushSubscription(ctx, s.Endpoint); err != nil {
			return forgotten, err
		}
		forgotten++
	}
	return forgotten, nil
}

// place moves the staging folder's entries into the data dir. What is
// in the way is moved into DATA/before-restore-STAMP (with the
// database's WAL and shared-memory files, which belong to the old
// database); an empty folder is replaced.
func (rs *restorer) place(stamp string) ([]string, error) {
	data := filepath.Dir(rs.stage)
	aside := filepath.Join(data, "before-restore-"+stamp)
	var moved []string
	moveAside := func(name string) error {
		src := filepath.Join(data, name)
		if _, err := os.Lstat(src); errors.Is(err, fs.ErrNotExist) {
			return nil
		}
		if err := os.MkdirAll(aside, 0o700); err != nil {
			return err
		}
		if len(moved) == 0 {
			moved = append(moved, aside)
		}
		return os.Rename(src, filepath.Join(aside, name))
	}
	ents, err := os.ReadDir(rs.stage)
	if err != nil {
		return moved, err
	}
	for _, e := range ents {
		name := e.Name()
		dst := filepath.Join(data, name)
		switch {
		case name == idmap.RecordFile:
			// The same record, or a new one for a data dir that had none.
		case emptyDir(dst):
			if err := os.Remove(dst); err != nil {
				return moved, err
			}
		default:
			if err := moveAside(name); err != nil {
				return moved, err
			}
		}
		if name == dbName {
			for _, side := range []string{"-wal", "-shm", "-journal"} {
				if err := moveAside(dbName + side); err != nil {
					return moved, err
				}
			}
		}
		if err := os.Rename(filepath.Join(rs.stage, name), dst); err != nil {
			return moved, err
		}
	}
	return moved, nil
}

// removeAll removes a tree even where it holds folders without write
// permission (a computer's).
func removeAll(dir string) {
	if os.RemoveAll(dir) == nil {
		return
	}
	filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err == nil && d.IsDir() {
			os.Chmod(p, 0o700)
		}
		return nil
	})
	os.RemoveAll(dir)
}
