package resource

import (
	"fmt"
	"net/url"
	"path"
	"strings"
	"unicode"
	"unicode/utf8"

	"den.dev/den/internal/sandbox"
)

// Scheme starts every den:// URL.
const Scheme = "den://"

// Limits of a URL.
const (
	// MaxURL is the most bytes of a URL as written, escapes and all.
	MaxURL = 8192
	// MaxPath is the most bytes of its path once decoded.
	MaxPath = 4000
	// MaxName is the most bytes of one component of the path (a file
	// name's limit on Linux).
	MaxName = 255
)

// Kind is a folder of the computer that den:// URLs name.
type Kind string

// The kinds, named as URLs write them.
const (
	Workspace   Kind = "workspace"
	Attachments Kind = "attachments"
	Offloads    Kind = "offloads"
	Browser     Kind = "browser"
	Memory      Kind = "memory"
	Skills      Kind = "skills"
	Shared      Kind = "shared"
)

// Kinds are all the kinds, the session's first.
func Kinds() []Kind {
	return []Kind{Workspace, Attachments, Offloads, Browser, Memory, Skills, Shared}
}

// Scope says whose folder a kind is.
type Scope int

// The scopes.
const (
	// PerSession is a folder of one session: each session has its own.
	PerSession Scope = iota + 1
	// PerAgent is a folder of the agent, shared by its sessions.
	PerAgent
)

// Guest is where the kind's folder is in the computer ("" for a kind
// that is not one of den's).
func (k Kind) Guest() string {
	switch k {
	case Workspace:
		return sandbox.GuestWorkspace
	case Attachments:
		return sandbox.GuestAttachments
	case Offloads:
		return sandbox.GuestOffloads
	case Browser:
		return sandbox.GuestBrowser
	case Memory:
		return sandbox.GuestMemory
	case Skills:
		return sandbox.GuestSkills
	case Shared:
		return sandbox.GuestShared
	}
	return ""
}

// Scope is whose folder the kind is; 0 for a kind that is not one of
// den's.
func (k Kind) Scope() Scope {
	switch k {
	case Workspace, Attachments, Offloads, Browser:
		return PerSession
	case Memory, Skills, Shared:
		return PerAgent
	}
	return 0
}

// URL is a den:// URL: a kind of folder and a path beneath it.
type URL struct {
	Kind Kind
	// Path is slash-separated and relative to the kind's folder, its
	// components checked (see the package doc); "" is the folder
	// itself.
	Path string
}

// Parse reads a den:// URL strictly (see the package doc). Its errors
// wrap ErrInvalid.
func Parse(s string) (URL, error) {
	if len(s) > MaxURL {
		return URL{}, invalid(s, "it is longer than %d bytes", MaxURL)
	}
	rest, ok := strings.CutPrefix(s, Scheme)
	if !ok {
		return URL{}, invalid(s, "it does not start with %s", Scheme)
	}
	kind, raw, _ := strings.Cut(rest, "/")
	k := Kind(kind)
	if k.Scope() == 0 {
		return URL{}, invalid(s, "%s names %s", Scheme, kindList())
	}
	for _, r := range raw {
		if !allowedRaw(r) {
			return URL{}, invalid(s, "%q must be percent-encoded in a URL (a den:// URL has no query or fragment)", r)
		}
	}
	p, err := url.PathUnescape(raw)
	if err != nil {
		return URL{}, invalid(s, "%v", err)
	}
	if raw != "" {
		// One trailing slash marks a folder ("den://workspace/" is the
		// folder itself: raw is "" there).
		p = strings.TrimSuffix(p, "/")
		if p == "" {
			return URL{}, invalid(s, "its path has an empty component")
		}
	}
	if err := checkPath(p); err != nil {
		return URL{}, invalid(s, "%v", err)
	}
	return URL{Kind: k, Path: p}, nil
}

// String is the URL as den writes it: each component percent-encoded
// as a URL path segment, the folder itself with a trailing slash.
func (u URL) String() string {
	var b strings.Builder
	b.WriteString(Scheme)
	b.WriteString(string(u.Kind))
	b.WriteString("/")
	if u.Path == "" {
		return b.String()
	}
	for i, c := range strings.Split(u.Path, "/") {
		if i > 0 {
			b.WriteString("/")
		}
		b.WriteString(url.PathEscape(c))
	}
	return b.String()
}

// Guest is the URL's path in the computer: den://workspace/a.txt is
// /workspace/a.txt.
func (u URL) Guest() string {
	if u.Path == "" {
		return u.Kind.Guest()
	}
	return u.Kind.Guest() + "/" + u.Path
}

// FromGuest is the den:// URL of p, an absolute and clean path in the
// computer; ok is false when p is not in one of the kinds' folders, is
// not clean, or has a component Parse would refuse.
func FromGuest(p string) (u URL, ok bool) {
	if !strings.HasPrefix(p, "/") || path.Clean(p) != p {
		return URL{}, false
	}
	for _, k := range Kinds() {
		g := k.Guest()
		if p == g {
			return URL{Kind: k}, true
		}
		if rel, in := strings.CutPrefix(p, g+"/"); in {
			if checkPath(rel) != nil {
				return URL{}, false
			}
			return URL{Kind: k, Path: rel}, true
		}
	}
	return URL{}, false
}

// checkPath checks a decoded path beneath a kind's folder ("" is the
// folder).
func checkPath(p string) error {
	if p == "" {
		return nil
	}
	if len(p) > MaxPath {
		return fmt.Errorf("its path is longer than %d bytes", MaxPath)
	}
	if !utf8.ValidString(p) {
		return fmt.Errorf("its path is not valid UTF-8")
	}
	for c := range strings.SplitSeq(p, "/") {
		switch {
		case c == "":
			return fmt.Errorf("its path has an empty component")
		case c == "." || c == "..":
			return fmt.Errorf("its path has a %q component", c)
		case len(c) > MaxName:
			return fmt.Errorf("a name in its path is longer than %d bytes", MaxName)
		case strings.IndexFunc(c, control) >= 0:
			return fmt.Errorf("its path has a control character")
		}
	}
	return nil
}

// control reports whether r is a character no name in a URL may hold:
// a control character (C0, DEL, C1), a line or paragraph separator, or
// a bidirectional control, which would make a name read as another.
func control(r rune) bool {
	return unicode.In(r, unicode.Cc, unicode.Zl, unicode.Zp, unicode.Bidi_Control)
}

// allowedRaw reports whether r may stand unescaped in a URL's path:
// RFC 3986's pchar and "/", with "%" for escapes, and, as an IRI writes
// them, non-ASCII characters other than spaces and controls.
func allowedRaw(r rune) bool {
	switch {
	case r >= utf8.RuneSelf:
		return r != utf8.RuneError && !unicode.IsSpace(r) && !control(r)
	case 'a' <= r && r <= 'z', 'A' <= r && r <= 'Z', '0' <= r && r <= '9':
		return true
	}
	return strings.ContainsRune("-._~!$&'()*+,;=:@/%", r)
}

func kindList() string {
	var names []string
	for _, k := range Kinds() {
		names = append(names, string(k))
	}
	return strings.Join(names[:len(names)-1], ", ") + " or " + names[len(names)-1]
}

// invalid is the error for s, shown shortened: a URL can be long, and
// hostile.
func invalid(s, format string, args ...any) error {
	if len(s) > 80 {
		s = strings.ToValidUTF8(s[:80], "") + "…"
	}
	return fmt.Errorf("%q is %w: %s", s, ErrInvalid, fmt.Sprintf(format, args...))
}
