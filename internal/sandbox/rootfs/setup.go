package rootfs

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"strings"
)

// Hostname is the host name every rootfs is set up with.
const Hostname = "den"

// hostResolvConf is copied into every rootfs, following a host symlink.
const hostResolvConf = "/etc/resolv.conf"

const profileScript = `# Written by den: the agent's shell environment.
export PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
export HOME=/root
export LANG=C.UTF-8
export TERM="${TERM:-xterm-256color}"
export DEBIAN_FRONTEND=noninteractive
PS1='\u@den:\w\$ '
`

const profileLoop = `# Added by den: read /etc/profile.d.
for f in /etc/profile.d/*.sh; do
	[ -r "$f" ] && . "$f"
done
unset f
`

const hostsFile = `127.0.0.1	localhost
127.0.1.1	` + Hostname + `
::1	localhost ip6-localhost ip6-loopback
`

const aptConf = `// Written by den. apt runs as root in the sandbox, where the _apt user
// may not be mapped (a single-uid user namespace), and never asks questions.
APT::Sandbox::User "root";
APT::Install-Recommends "false";
APT::Install-Suggests "false";
APT::Get::Assume-Yes "true";
Dpkg::Use-Pty "0";
Dpkg::Options { "--force-confdef"; "--force-confold"; };
Acquire::Retries "3";
`

const policyRCD = `#!/bin/sh
# Written by den: services never start inside the sandbox.
exit 101
`

// layoutDir is one directory of the skeleton every rootfs gets; an existing
// directory keeps its mode unless force is set.
type layoutDir struct {
	name  string
	mode  fs.FileMode
	force bool
}

func layout() []layoutDir {
	return []layoutDir{
		{"root", 0o700, true},
		{"tmp", 0o777 | fs.ModeSticky, true},
		{"proc", 0o555, false},
		{"sys", 0o555, false},
		{"dev", 0o755, false},
		{"workspace", 0o755, false},
		{"den/attachments", 0o755, false},
		{"den/offloads", 0o755, false},
		{"den/browser", 0o755, false},
		{"den/memory", 0o755, false},
		{"den/skills", 0o755, false},
		{"den/shared", 0o755, false},
		{"run/den", 0o755, false},
		{"usr/local/bin", 0o755, false},
		{"etc/profile.d", 0o755, false},
	}
}

// Setup makes the tree at dir ready to be an agent's computer: network
// identity (/etc/resolv.conf from the host, /etc/hosts, /etc/hostname), the
// shell profile, den's directory layout, and the package manager's
// configuration for the distribution in info (detected from the tree when
// info.Distro is empty). It is idempotent, so it can be re-run after an
// import. All writes stay inside dir; symlinks in the way are replaced, not
// written through.
func Setup(dir string, info Info, opts Options) error {
	if err := setup(dir, info, opts); err != nil {
		return fmt.Errorf("rootfs: setup %s: %w", dir, err)
	}
	return nil
}

func setup(dir string, info Info, opts Options) error {
	if info.Distro == "" {
		if err := detect(dir, &info); err != nil {
			return err
		}
	}
	r, err := os.OpenRoot(dir)
	if err != nil {
		return err
	}
	defer r.Close()
	for _, d := range layout() {
		_, statErr := r.Stat(d.name)
		if err := r.MkdirAll(d.name, d.mode.Perm()); err != nil {
			return err
		}
		if d.force || statErr != nil {
			if err := r.Chmod(d.name, d.mode); err != nil {
				return err
			}
		}
	}
	if err := replaceFile(r, "etc/hosts", []byte(hostsFile), 0o644); err != nil {
		return err
	}
	if err := replaceFile(r, "etc/hostname", []byte(Hostname+"\n"), 0o644); err != nil {
		return err
	}
	if resolv, err := os.ReadFile(hostResolvConf); err == nil {
		if err := replaceFile(r, "etc/resolv.conf", resolv, 0o644); err != nil {
			return err
		}
	}
	if err := replaceFile(r, "etc/profile.d/den.sh", []byte(profileScript), 0o644); err != nil {
		return err
	}
	profile, err := r.ReadFile("etc/profile")
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	if !bytes.Contains(profile, []byte("/etc/profile.d")) {
		if len(profile) > 0 && !bytes.HasSuffix(profile, []byte("\n")) {
			profile = append(profile, '\n')
		}
		if err := replaceFile(r, "etc/profile", append(profile, profileLoop...), 0o644); err != nil {
			return err
		}
	}
	return setupPackages(r, info, opts)
}

// setupPackages points the package manager at the mirror.
func setupPackages(r *os.Root, info Info, opts Options) error {
	switch {
	case info.PackageManager == Apk:
		mirror := firstNonEmpty(mirrorOf(info, Alpine), opts.AlpineMirror, DefaultAlpineMirror)
		release, err := r.ReadFile("etc/alpine-release")
		if err != nil {
			return nil // not an Alpine layout we know how to configure
		}
		branch := alpineBranch(strings.TrimSpace(string(release)))
		repos := fmt.Sprintf("%s/%s/main\n%s/%s/community\n", mirror, branch, mirror, branch)
		if err := r.MkdirAll("etc/apk", 0o755); err != nil {
			return err
		}
		return replaceFile(r, "etc/apk/repositories", []byte(repos), 0o644)
	case info.PackageManager == Apt:
		if err := r.MkdirAll("etc/apt/apt.conf.d", 0o755); err != nil {
			return err
		}
		if err := replaceFile(r, "etc/apt/apt.conf.d/99den", []byte(aptConf), 0o644); err != nil {
			return err
		}
		if err := replaceFile(r, "usr/sbin/policy-rc.d", []byte(policyRCD), 0o755); err != nil {
			return err
		}
		return setupAptSources(r, info, opts)
	}
	return nil
}

// setupAptSources writes /etc/apt/sources.list for Debian and Ubuntu when the
// suite and a mirror are known; otherwise the tree's own sources stay.
func setupAptSources(r *os.Root, info Info, opts Options) error {
	var kind Kind
	components := "main"
	switch info.Distro {
	case DistroDebian:
		kind = Debian
	case DistroUbuntu:
		kind, components = Ubuntu, "main universe"
	default:
		return nil
	}
	suite := info.Codename
	if suite == "" {
		return nil
	}
	mirror := mirrorOf(info, kind)
	if mirror == "" {
		var err error
		if mirror, err = defaultMirror(kind, opts, suite); err != nil {
			return nil
		}
	}
	line := fmt.Sprintf("deb %s %s %s\n", mirror, suite, components)
	return replaceFile(r, "etc/apt/sources.list", []byte(line), 0o644)
}

// mirrorOf returns info's mirror when it belongs to kind's distribution.
func mirrorOf(info Info, kind Kind) string {
	src, err := ParseSource(info.Source)
	if err != nil || src.Kind != kind {
		return ""
	}
	return info.Mirror
}

// alpineBranch maps an Alpine release ("3.21.3") to its repository branch
// ("v3.21"); pre-releases map to edge.
func alpineBranch(release string) string {
	parts := strings.Split(release, ".")
	if len(parts) < 2 || strings.ContainsAny(release, "_-") {
		return "edge"
	}
	return "v" + parts[0] + "." + parts[1]
}

// replaceFile writes name in the root by renaming a fresh file over it, so a
// symlink at name is replaced rather than written through.
func replaceFile(r *os.Root, name string, data []byte, perm fs.FileMode) error {
	if fi, err := r.Lstat(name); err == nil {
		if fi.IsDir() {
			return fmt.Errorf("/%s is a directory", name)
		}
		if fi.Mode().IsRegular() && fi.Mode().Perm() == perm {
			if old, err := r.ReadFile(name); err == nil && bytes.Equal(old, data) {
				return nil // already right; keep its mtime
			}
		}
	}
	tmp := path.Join(path.Dir(name), ".den-"+path.Base(name)+".tmp")
	if err := r.RemoveAll(tmp); err != nil {
		return err
	}
	f, err := r.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return err
	}
	_, err = f.Write(data)
	if err == nil {
		err = f.Chmod(perm)
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = r.Rename(tmp, name)
	}
	if err != nil {
		r.Remove(tmp)
	}
	return err
}

// detect fills info's distribution fields from the tree at dir.
func detect(dir string, info *Info) error {
	r, err := os.OpenRoot(dir)
	if err != nil {
		return err
	}
	defer r.Close()
	osr := map[string]string{}
	for _, name := range []string{"etc/os-release", "usr/lib/os-release"} {
		if data, err := r.ReadFile(name); err == nil {
			osr = parseOSRelease(data)
			break
		}
	}
	exists := func(names ...string) bool {
		for _, n := range names {
			if _, err := r.Lstat(n); err == nil {
				return true
			}
		}
		return false
	}
	info.Version = osr["VERSION_ID"]
	info.Codename = osr["VERSION_CODENAME"]
	switch id := osr["ID"]; {
	case id == "alpine" || id == "" && exists("etc/alpine-release"):
		info.Distro = DistroAlpine
		if rel, err := r.ReadFile("etc/alpine-release"); err == nil {
			info.Version = strings.TrimSpace(string(rel))
		}
	case id == "debian" || id == "" && exists("etc/debian_version"):
		info.Distro = DistroDebian
	case id == "ubuntu":
		info.Distro = DistroUbuntu
	case id == "busybox":
		info.Distro = DistroBusybox
	default:
		info.Distro = DistroOther
	}
	switch {
	case exists("sbin/apk", "usr/sbin/apk", "bin/apk", "usr/bin/apk"):
		info.PackageManager = Apk
	case exists("usr/bin/apt-get", "bin/apt-get"):
		info.PackageManager = Apt
	default:
		info.PackageManager = None
	}
	return nil
}

// parseOSRelease reads the KEY=value lines of an os-release file.
func parseOSRelease(data []byte) map[string]string {
	m := map[string]string{}
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		k, v, ok := strings.Cut(line, "=")
		if !ok || strings.HasPrefix(line, "#") {
			continue
		}
		m[k] = unquote(strings.TrimSpace(v))
	}
	return m
}

func unquote(v string) string {
	if len(v) >= 2 && (v[0] == '"' || v[0] == '\'') && v[len(v)-1] == v[0] {
		return v[1 : len(v)-1]
	}
	return v
}

func firstNonEmpty(s ...string) string {
	for _, v := range s {
		if v != "" {
			return strings.TrimRight(v, "/")
		}
	}
	return ""
}
