package rootfs

import (
	"fmt"
	"regexp"
	"strings"
)

// Kind names where a rootfs comes from.
type Kind string

// The source kinds ParseSource accepts.
const (
	Alpine  Kind = "alpine"  // the Alpine minirootfs from a mirror (the default)
	Debian  Kind = "debian"  // debootstrap/mmdebstrap of a Debian suite
	Ubuntu  Kind = "ubuntu"  // debootstrap/mmdebstrap of an Ubuntu suite
	Tar     Kind = "tar"     // an imported tarball
	Dir     Kind = "dir"     // an imported directory
	Busybox Kind = "busybox" // a tiny rootfs from the host's static busybox
)

// Default suites for Debian and Ubuntu when the source names none.
const (
	DefaultDebianSuite = "bookworm"
	DefaultUbuntuSuite = "noble"
)

// Source says what a rootfs is built from. The zero value is invalid; use
// ParseSource or DefaultSource.
type Source struct {
	Kind Kind
	// Version is the Alpine version ("3.21" or "3.21.3") or the Debian or
	// Ubuntu suite. Empty means the latest stable Alpine release or the
	// default suite.
	Version string
	// Path is the tarball or directory for Tar and Dir.
	Path string
}

// DefaultSource returns the source used when the user chose none: the latest
// stable Alpine minirootfs.
func DefaultSource() Source { return Source{Kind: Alpine} }

const validSources = "alpine[:VERSION], debian[:SUITE], ubuntu[:SUITE], tar:PATH, dir:PATH, busybox"

var (
	alpineVersionRE = regexp.MustCompile(`^[0-9]+\.[0-9]+(\.[0-9]+)?$`)
	suiteRE         = regexp.MustCompile(`^[a-z][a-z0-9.-]*$`)
)

// ParseSource parses one of alpine[:VERSION], debian[:SUITE], ubuntu[:SUITE],
// tar:PATH, dir:PATH or busybox. Anything else is an error wrapping
// ErrUnknownSource that lists the valid forms.
func ParseSource(s string) (Source, error) {
	kind, arg, hasArg := strings.Cut(s, ":")
	bad := func(why string) (Source, error) {
		return Source{}, fmt.Errorf("rootfs: parse source %q: %w: %s (valid: %s)", s, ErrUnknownSource, why, validSources)
	}
	switch Kind(kind) {
	case Alpine:
		if hasArg && !alpineVersionRE.MatchString(arg) {
			return bad("alpine version must look like 3.21 or 3.21.3")
		}
		return Source{Kind: Alpine, Version: arg}, nil
	case Debian, Ubuntu:
		if hasArg && !suiteRE.MatchString(arg) {
			return bad("suite must be a lower-case name like bookworm or noble")
		}
		return Source{Kind: Kind(kind), Version: arg}, nil
	case Tar, Dir:
		if arg == "" {
			return bad(kind + ": needs a path")
		}
		return Source{Kind: Kind(kind), Path: arg}, nil
	case Busybox:
		if hasArg {
			return bad("busybox takes no argument")
		}
		return Source{Kind: Busybox}, nil
	}
	return bad("unknown kind")
}

// String returns the spelling ParseSource accepts.
func (s Source) String() string {
	switch s.Kind {
	case Tar, Dir:
		return string(s.Kind) + ":" + s.Path
	case Alpine, Debian, Ubuntu:
		if s.Version != "" {
			return string(s.Kind) + ":" + s.Version
		}
	}
	return string(s.Kind)
}

// suite returns the Debian or Ubuntu suite, applying the default.
func (s Source) suite() string {
	switch {
	case s.Version != "":
		return s.Version
	case s.Kind == Ubuntu:
		return DefaultUbuntuSuite
	}
	return DefaultDebianSuite
}
