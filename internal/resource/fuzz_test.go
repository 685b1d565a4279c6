package resource

import (
	"path"
	"strings"
	"testing"
	"unicode/utf8"
)

// FuzzParse: whatever Parse accepts stays beneath its kind's folder,
// has no component a path could climb with, and reads back the same
// from its String and from its Guest path.
func FuzzParse(f *testing.F) {
	for _, s := range []string{
		"den://workspace/report.md", "den://workspace/", "den://skills/pdf/SKILL.md",
		"den://workspace/%2e%2e/x", "den://workspace/a%2Fb", "den://memory/a%00", "den://workspace//x",
		"den://workspace/r%C3%A9sum%C3%A9.txt", "den://shared/a/b/", "den://browser/%252e",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		u, err := Parse(s)
		if err != nil {
			return
		}
		g := u.Guest()
		base := u.Kind.Guest()
		if base == "" || path.Clean(g) != g || (g != base && !strings.HasPrefix(g, base+"/")) {
			t.Fatalf("Parse(%q) = %+v: guest path %q is not beneath %s", s, u, g, base)
		}
		if u.Path != "" {
			for c := range strings.SplitSeq(u.Path, "/") {
				if c == "" || c == "." || c == ".." || strings.ContainsAny(c, "\x00\n\r") || len(c) > MaxName {
					t.Fatalf("Parse(%q) = %+v: component %q", s, u, c)
				}
			}
		}
		if !utf8.ValidString(u.Path) || len(u.Path) > MaxPath {
			t.Fatalf("Parse(%q) = %+v: a path of %d bytes, valid UTF-8 %v", s, u, len(u.Path), utf8.ValidString(u.Path))
		}
		back, err := Parse(u.String())
		if err != nil || back != u {
			t.Fatalf("Parse(%q) = %+v, whose String %q reads as %+v, %v", s, u, u.String(), back, err)
		}
		if fg, ok := FromGuest(g); !ok || fg != u {
			t.Fatalf("Parse(%q) = %+v, whose guest path %q reads as %+v, %v", s, u, g, fg, ok)
		}
	})
}

// FuzzFromGuest: a guest path with a URL is the URL's guest path.
func FuzzFromGuest(f *testing.F) {
	for _, s := range []string{"/workspace/a", "/den/skills/x/y", "/workspace/../etc", "/den/memoryx"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, p string) {
		u, ok := FromGuest(p)
		if !ok {
			return
		}
		if u.Guest() != p {
			t.Fatalf("FromGuest(%q) = %+v, whose guest path is %q", p, u, u.Guest())
		}
		if back, err := Parse(u.String()); err != nil || back != u {
			t.Fatalf("FromGuest(%q) = %+v: its String %q reads as %+v, %v", p, u, u.String(), back, err)
		}
	})
}
