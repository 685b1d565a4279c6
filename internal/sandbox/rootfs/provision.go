package rootfs

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// Options configure Provision and Setup. The zero value is usable: no cache,
// the default mirrors, no fallback, no progress reports.
type Options struct {
	// CacheDir keeps downloads and bootstrapped base tarballs between runs.
	// Empty disables caching.
	CacheDir string
	// AlpineMirror is the base URL of an Alpine mirror (the folder holding
	// latest-stable/ and v3.21/). Empty means DefaultAlpineMirror.
	AlpineMirror string
	// DebianMirror is the Debian archive URL. Empty means the one the host's
	// apt sources use.
	DebianMirror string
	// UbuntuMirror is the Ubuntu archive URL. Empty means the official
	// archive (or the ports archive on non-x86 machines).
	UbuntuMirror string
	// FallbackToDebian lets Provision build Debian instead when the source
	// is the default Alpine one and its mirror cannot be reached. The caller
	// sets it only when the user did not choose a source.
	FallbackToDebian bool
	// HTTPClient fetches Alpine releases. Nil means a client with connect and
	// response-header timeouts.
	HTTPClient *http.Client
	// Progress, if set, receives reports from the provisioning goroutine.
	Progress func(Progress)
}

// Distro is the distribution found in a rootfs's /etc/os-release.
type Distro string

// The distributions Info reports.
const (
	DistroAlpine  Distro = "alpine"
	DistroDebian  Distro = "debian"
	DistroUbuntu  Distro = "ubuntu"
	DistroBusybox Distro = "busybox"
	DistroOther   Distro = "other"
)

// PackageManager is the package manager a rootfs has.
type PackageManager string

// The package managers Info reports.
const (
	Apk  PackageManager = "apk"
	Apt  PackageManager = "apt"
	None PackageManager = "none"
)

// Info describes a provisioned rootfs. It is what WriteInfo stores.
type Info struct {
	// Source is the source the rootfs was built from, as ParseSource spells
	// it. After a fallback it is the Debian source actually used.
	Source string `json:"source"`
	// Requested is the source asked for, when a fallback replaced it.
	Requested string `json:"requested,omitempty"`
	Distro    Distro `json:"distro"`
	// Version is the distribution's version (VERSION_ID, or the full
	// Alpine release from /etc/alpine-release).
	Version string `json:"version,omitempty"`
	// Codename is VERSION_CODENAME (the Debian or Ubuntu suite).
	Codename       string         `json:"codename,omitempty"`
	PackageManager PackageManager `json:"package_manager"`
	// Arch is the Go architecture the rootfs was provisioned for.
	Arch string `json:"arch"`
	// Mirror is the package mirror the rootfs came from and its package
	// manager is configured with, if any.
	Mirror  string    `json:"mirror,omitempty"`
	Created time.Time `json:"created"`
	// Checksum is the verified digest of the downloaded archive, as
	// "sha256:HEX", when there was one.
	Checksum string `json:"checksum,omitempty"`
	// Owner is the host uid and gid of the computer's root, once den
	// has given the tree to the computer's own ids; nil in a tree whose
	// owners are the inside ids themselves (provisioned as root and not
	// moved yet, or made before computers had ids of their own).
	Owner *Owner `json:"owner,omitempty"`
}

// Owner is a host uid and gid.
type Owner struct {
	UID uint32 `json:"uid"`
	GID uint32 `json:"gid"`
}

// WriteInfo stores info as JSON at file, atomically.
func WriteInfo(file string, info Info) error {
	data, err := json.MarshalIndent(info, "", "  ")
	if err != nil {
		return fmt.Errorf("rootfs: write info %s: %w", file, err)
	}
	if err := writeFileAtomic(file, append(data, '\n'), 0o644); err != nil {
		return fmt.Errorf("rootfs: write info %s: %w", file, err)
	}
	return nil
}

// ReadInfo reads what WriteInfo stored.
func ReadInfo(file string) (Info, error) {
	var info Info
	data, err := os.ReadFile(file)
	if err == nil {
		err = json.Unmarshal(data, &info)
	}
	if err != nil {
		return Info{}, fmt.Errorf("rootfs: read info %s: %w", file, err)
	}
	return info, nil
}

// Provision builds a complete rootfs from src at dst, which must not exist.
// It works in a temporary sibling of dst and renames it into place only
// once the tree is complete and Setup has run; on any error or cancellation
// the temporary directory is removed and dst is left untouched.
func Provision(ctx context.Context, dst string, src Source, opts Options) (Info, error) {
	p := &provisioner{opts: opts, rep: &reporter{fn: opts.Progress}}
	if opts.HTTPClient != nil {
		p.client = opts.HTTPClient
	} else {
		p.client = defaultClient()
	}
	dst, err := filepath.Abs(dst)
	if err != nil {
		return Info{}, fmt.Errorf("rootfs: provision %s: %w", dst, err)
	}
	if _, err := os.Lstat(dst); err == nil {
		return Info{}, fmt.Errorf("rootfs: provision %s: %w (remove it first to rebuild)", dst, ErrExists)
	} else if !errors.Is(err, os.ErrNotExist) {
		return Info{}, fmt.Errorf("rootfs: provision %s: %w", dst, err)
	}
	if src.Kind == Dir {
		// Before anything is created: the temporary directory must not
		// appear inside the source.
		if err := checkOverlap(src.Path, dst); err != nil {
			return Info{}, err
		}
	}
	parent := filepath.Dir(dst)
	if err := os.MkdirAll(parent, 0o755); err != nil {
		return Info{}, diskFull(parent, fmt.Errorf("rootfs: provision %s: %w", dst, err))
	}
	tmp, err := os.MkdirTemp(parent, "."+filepath.Base(dst)+".tmp-")
	if err != nil {
		return Info{}, diskFull(parent, fmt.Errorf("rootfs: provision %s: %w", dst, err))
	}
	p.tmp = tmp
	done := false
	defer func() {
		if !done {
			removeTree(tmp)
		}
	}()
	if err := os.Chmod(tmp, 0o755); err != nil {
		return Info{}, fmt.Errorf("rootfs: provision %s: %w", dst, err)
	}

	canceled := func() error {
		if err := ctx.Err(); err != nil {
			return fmt.Errorf("rootfs: provision %s: %w", dst, err)
		}
		return nil
	}
	info, err := p.build(ctx, src)
	if err == nil {
		err = canceled()
	}
	if err == nil {
		p.rep.say(StageSetup, "setting up "+dst)
		err = Setup(tmp, info, opts)
	}
	if err == nil {
		err = canceled()
	}
	if err == nil {
		err = renameNoReplace(tmp, dst)
	}
	if err != nil {
		return Info{}, diskFull(parent, err)
	}
	done = true
	syncDir(parent)
	return info, nil
}

// provisioner carries one Provision call's state.
type provisioner struct {
	opts   Options
	rep    *reporter
	client *http.Client
	tmp    string // the temporary tree being built
}

// build fills p.tmp from src and describes the result.
func (p *provisioner) build(ctx context.Context, src Source) (Info, error) {
	var (
		info Info
		err  error
	)
	switch src.Kind {
	case Alpine:
		info, err = p.alpine(ctx, src)
		if err != nil && errors.Is(err, ErrUnreachable) && src.Version == "" && p.opts.FallbackToDebian && ctx.Err() == nil {
			info, err = p.fallback(ctx, src, err)
		}
	case Debian, Ubuntu:
		info, err = p.debian(ctx, src)
	case Tar:
		p.rep.say(StageExtract, "importing "+src.Path)
		err = extractFile(ctx, src.Path, p.tmp, p.rep)
		info = Info{Source: src.String()}
	case Dir:
		err = copyDir(ctx, src.Path, p.tmp, p.rep)
		info = Info{Source: src.String()}
	case Busybox:
		err = buildBusybox(ctx, p.tmp)
		info = Info{Source: src.String()}
	default:
		return Info{}, fmt.Errorf("rootfs: provision: %w: %q (valid: %s)", ErrUnknownSource, src.Kind, validSources)
	}
	if err != nil {
		return Info{}, err
	}
	if err := checkRootfs(p.tmp); err != nil {
		return Info{}, fmt.Errorf("rootfs: provision %s: %w", src, err)
	}
	if err := detect(p.tmp, &info); err != nil {
		return Info{}, fmt.Errorf("rootfs: provision %s: %w", src, err)
	}
	info.Arch = runtime.GOARCH
	info.Created = time.Now().UTC()
	return info, nil
}

// fallback replaces an unreachable default Alpine source with Debian.
func (p *provisioner) fallback(ctx context.Context, src Source, cause error) (Info, error) {
	deb := Source{Kind: Debian}
	mirror, merr := p.mirror(deb)
	if merr != nil {
		return Info{}, fmt.Errorf("%w; cannot fall back to debian: %w", cause, merr)
	}
	if !p.haveBase(deb) && !haveBootstrapper() {
		return Info{}, fmt.Errorf("%w; cannot fall back to debian without debootstrap or mmdebstrap: "+
			"set a reachable Alpine mirror, install debootstrap, or import a rootfs with tar:PATH or dir:PATH", cause)
	}
	p.rep.say(StageFallback, fmt.Sprintf("alpine mirror unreachable: %v; falling back to debian %s from %s", cause, deb.suite(), mirror))
	if err := resetDir(p.tmp); err != nil {
		return Info{}, fmt.Errorf("rootfs: fallback: %w", err)
	}
	info, err := p.debian(ctx, deb)
	if err != nil {
		return Info{}, err
	}
	info.Requested = src.String()
	return info, nil
}

// checkRootfs makes sure the tree can serve as a computer: it has /bin/sh.
func checkRootfs(dir string) error {
	root, err := os.OpenRoot(dir)
	if err != nil {
		return err
	}
	defer root.Close()
	for _, sh := range []string{"bin/sh", "usr/bin/sh"} {
		if _, err := root.Lstat(sh); err == nil {
			return nil
		}
	}
	return fmt.Errorf("%w: no /bin/sh at the top (does the archive have an extra top-level folder?)", ErrNotRootfs)
}

// checkOverlap refuses a dir: source that contains dst or lies inside it.
func checkOverlap(src, dst string) error {
	s, err := filepath.EvalSymlinks(src)
	if err != nil {
		return fmt.Errorf("rootfs: copy %s: %w", src, err)
	}
	s, err = filepath.Abs(s)
	if err != nil {
		return fmt.Errorf("rootfs: copy %s: %w", src, err)
	}
	fi, err := os.Stat(s)
	if err != nil {
		return fmt.Errorf("rootfs: copy %s: %w", src, err)
	}
	if !fi.IsDir() {
		return fmt.Errorf("rootfs: copy %s: not a directory", src)
	}
	d, err := resolvePath(dst)
	if err != nil {
		return fmt.Errorf("rootfs: copy %s: %w", src, err)
	}
	within := func(a, b string) bool {
		return a == b || strings.HasPrefix(a, b+string(filepath.Separator)) || b == "/"
	}
	if within(d, s) || within(s, d) {
		return fmt.Errorf("rootfs: copy %s to %s: %w", src, dst, ErrOverlap)
	}
	return nil
}

// resolvePath resolves the symlinks of the longest existing prefix of the
// absolute path p.
func resolvePath(p string) (string, error) {
	rest := ""
	for {
		r, err := filepath.EvalSymlinks(p)
		if err == nil {
			return filepath.Join(r, rest), nil
		}
		if !errors.Is(err, os.ErrNotExist) || p == filepath.Dir(p) {
			return "", err
		}
		rest = filepath.Join(filepath.Base(p), rest)
		p = filepath.Dir(p)
	}
}

// diskFull rewrites an out-of-space failure into one that says so plainly.
func diskFull(dir string, err error) error {
	if errors.Is(err, syscall.ENOSPC) || errors.Is(err, syscall.EDQUOT) || errors.Is(err, ErrDiskFull) {
		return fmt.Errorf("rootfs: %w holding %s (free some space and retry): %w", ErrDiskFull, dir, err)
	}
	return err
}

// renameNoReplace moves tmp to dst, failing if dst appeared meanwhile.
func renameNoReplace(tmp, dst string) error {
	err := unix.Renameat2(unix.AT_FDCWD, tmp, unix.AT_FDCWD, dst, unix.RENAME_NOREPLACE)
	if errors.Is(err, unix.EINVAL) || errors.Is(err, unix.ENOSYS) {
		if _, serr := os.Lstat(dst); serr == nil {
			err = unix.EEXIST
		} else {
			err = os.Rename(tmp, dst)
		}
	}
	switch {
	case errors.Is(err, unix.EEXIST) || errors.Is(err, unix.ENOTEMPTY):
		return fmt.Errorf("rootfs: provision %s: %w", dst, ErrExists)
	case err != nil:
		return fmt.Errorf("rootfs: provision %s: rename: %w", dst, err)
	}
	return nil
}

func syncDir(dir string) {
	if d, err := os.Open(dir); err == nil {
		d.Sync()
		d.Close()
	}
}

// removeTree removes a half-built tree, first detaching anything a
// bootstrapper left mounted inside it so removal cannot reach the host.
func removeTree(dir string) {
	for _, mp := range mountsUnder(dir) {
		unix.Unmount(mp, unix.MNT_DETACH)
	}
	if len(mountsUnder(dir)) > 0 {
		return // never recurse into a mount that would not go away
	}
	os.RemoveAll(dir)
}

// resetDir empties dir, keeping it.
func resetDir(dir string) error {
	removeTree(dir)
	if err := os.Mkdir(dir, 0o755); err != nil {
		return err
	}
	return os.Chmod(dir, 0o755)
}

// mountsUnder lists the mount points below dir, deepest first.
func mountsUnder(dir string) []string {
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return nil
	}
	defer f.Close()
	var mps []string
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) < 5 {
			continue
		}
		mp := unescapeMount(fields[4])
		if strings.HasPrefix(mp, dir+"/") || mp == dir {
			mps = append(mps, mp)
		}
	}
	slices.SortFunc(mps, func(a, b string) int { return len(b) - len(a) })
	return mps
}

// unescapeMount decodes the octal escapes (\040 for a space) of mountinfo.
func unescapeMount(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+3 < len(s) {
			var v byte
			ok := true
			for _, c := range s[i+1 : i+4] {
				if c < '0' || c > '7' {
					ok = false
					break
				}
				v = v*8 + byte(c-'0')
			}
			if ok {
				b.WriteByte(v)
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// writeFileAtomic writes data to file through a temporary sibling.
func writeFileAtomic(file string, data []byte, perm os.FileMode) error {
	tmp, err := os.CreateTemp(filepath.Dir(file), "."+filepath.Base(file)+".tmp-*")
	if err != nil {
		return err
	}
	_, err = tmp.Write(data)
	if err == nil {
		err = tmp.Chmod(perm)
	}
	if err == nil {
		err = tmp.Sync()
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp.Name(), file)
	}
	if err != nil {
		os.Remove(tmp.Name())
	}
	return err
}
