package resource

import (
	"errors"
	"strings"
	"testing"
)

// TestParse reads good URLs: the kind, the decoded path, the guest
// path, and the URL den writes back.
func TestParse(t *testing.T) {
	for _, tt := range []struct {
		in     string
		want   URL
		guest  string
		string string // "" when it is in
	}{
		{"den://workspace/report.md", URL{Workspace, "report.md"}, "/workspace/report.md", ""},
		{"den://workspace/out/chart.png", URL{Workspace, "out/chart.png"}, "/workspace/out/chart.png", ""},
		{"den://workspace", URL{Workspace, ""}, "/workspace", "den://workspace/"},
		{"den://workspace/", URL{Workspace, ""}, "/workspace", ""},
		{"den://workspace/out/", URL{Workspace, "out"}, "/workspace/out", "den://workspace/out"},
		{"den://attachments/voice.ogg", URL{Attachments, "voice.ogg"}, "/den/attachments/voice.ogg", ""},
		{"den://offloads/out-1.txt", URL{Offloads, "out-1.txt"}, "/den/offloads/out-1.txt", ""},
		{"den://browser/shot.png", URL{Browser, "shot.png"}, "/den/browser/shot.png", ""},
		{"den://memory/GLOBAL.md", URL{Memory, "GLOBAL.md"}, "/den/memory/GLOBAL.md", ""},
		{"den://skills/pdf/SKILL.md", URL{Skills, "pdf/SKILL.md"}, "/den/skills/pdf/SKILL.md", ""},
		{"den://shared/notes.txt", URL{Shared, "notes.txt"}, "/den/shared/notes.txt", ""},
		{"den://workspace/my%20report.md", URL{Workspace, "my report.md"}, "/workspace/my report.md", ""},
		{"den://workspace/r%C3%A9sum%C3%A9.txt", URL{Workspace, "résumé.txt"}, "/workspace/résumé.txt", ""},
		{"den://workspace/résumé.txt", URL{Workspace, "résumé.txt"}, "/workspace/résumé.txt", "den://workspace/r%C3%A9sum%C3%A9.txt"},
		// Decoded once: %252e%252e is the name "%2e%2e", not "..".
		{"den://workspace/%252e%252e", URL{Workspace, "%2e%2e"}, "/workspace/%2e%2e", ""},
		{"den://workspace/a%2Fb", URL{Workspace, "a/b"}, "/workspace/a/b", "den://workspace/a/b"},
		{"den://workspace/...", URL{Workspace, "..."}, "/workspace/...", ""},
		{"den://workspace/.hidden", URL{Workspace, ".hidden"}, "/workspace/.hidden", ""},
		{"den://workspace/a(1)!.txt", URL{Workspace, "a(1)!.txt"}, "/workspace/a(1)!.txt", "den://workspace/a%281%29%21.txt"},
		{"den://workspace/q%3F%23.txt", URL{Workspace, "q?#.txt"}, "/workspace/q?#.txt", ""},
		{"den://workspace/" + strings.Repeat("n", MaxName), URL{Workspace, strings.Repeat("n", MaxName)}, "/workspace/" + strings.Repeat("n", MaxName), ""},
	} {
		got, err := Parse(tt.in)
		if err != nil {
			t.Errorf("Parse(%q): %v", tt.in, err)
			continue
		}
		if got != tt.want {
			t.Errorf("Parse(%q) = %+v, want %+v", tt.in, got, tt.want)
		}
		if g := got.Guest(); g != tt.guest {
			t.Errorf("Parse(%q).Guest() = %q, want %q", tt.in, g, tt.guest)
		}
		wantString := tt.string
		if wantString == "" {
			wantString = tt.in
		}
		if s := got.String(); s != wantString {
			t.Errorf("Parse(%q).String() = %q, want %q", tt.in, s, wantString)
		}
		if back, ok := FromGuest(tt.guest); !ok || back != got {
			t.Errorf("FromGuest(%q) = %+v, %v; want %+v", tt.guest, back, ok, got)
		}
	}
}

// TestParseRefuses reads hostile and malformed URLs: each is refused
// with ErrInvalid.
func TestParseRefuses(t *testing.T) {
	for _, in := range []string{
		"",
		"den:",
		"den://",
		"den:///workspace/a",
		"den:workspace/a",
		"den:/workspace/a",
		"DEN://workspace/a",
		"Den://workspace/a",
		"den://Workspace/a",
		"den://root/.ssh/id_rsa",
		"den://tmp/x",
		"den://etc/shadow",
		"den://run/den/token",
		"den://den/memory/x",
		"den://user@workspace/a",
		"den://workspace:80/a",
		"den://workspace../a",
		"file:///workspace/a",
		"http://workspace/a",
		"javascript:alert(1)//den://workspace/a",
		" den://workspace/a",
		"den://workspace/../../etc/shadow",
		"den://workspace/..",
		"den://workspace/a/../../x",
		"den://workspace/./a",
		"den://workspace/.",
		"den://workspace/%2e%2e/etc/shadow",
		"den://workspace/%2E%2E",
		"den://workspace/a/%2e%2e%2f%2e%2e%2fetc",
		"den://workspace/..%2fx",
		"den://workspace/%2e",
		"den://workspace//etc/shadow",
		"den://workspace//",
		"den://workspace/a//b",
		"den://workspace/%2fetc%2fshadow",
		"den://workspace/a%2f%2fb",
		"den://workspace/a//",
		"den://workspace/a%00b",
		"den://workspace/a\x00b",
		"den://workspace/a%0Ab",
		"den://workspace/a\nb",
		"den://workspace/a\rb",
		"den://workspace/a%7f",
		"den://workspace/a%c2%85", // NEL, a C1 control
		"den://workspace/evil%E2%80%AEgnp.exe",
		"den://workspace/evil\u202egnp.exe",
		"den://workspace/line%E2%80%A8sep",
		"den://workspace/bad%ff",
		"den://workspace/bad\xff",
		"den://workspace/a%",
		"den://workspace/a%zz",
		"den://workspace/a%4",
		"den://workspace/a b",
		"den://workspace/a\u00a0b",
		"den://workspace/a\tb",
		"den://workspace/a?b",
		"den://workspace/a#b",
		"den://workspace/a?",
		"den://workspace/a\\..\\b",
		"den://workspace/<script>",
		"den://workspace/a\"b",
		"den://workspace/a`b",
		"den://workspace/" + strings.Repeat("n", MaxName+1),
		"den://workspace/" + strings.Repeat("a/", MaxPath/2+1) + "a",
		"den://workspace/" + strings.Repeat("%41", MaxURL/3),
	} {
		got, err := Parse(in)
		if err == nil {
			t.Errorf("Parse(%q) = %+v, want an error", in, got)
			continue
		}
		if !errors.Is(err, ErrInvalid) {
			t.Errorf("Parse(%q): %v, not ErrInvalid", in, err)
		}
		if len(err.Error()) > 400 {
			t.Errorf("Parse(%q): a %d-byte error", in[:20], len(err.Error()))
		}
	}
}

// TestFromGuest: paths in the kinds' folders have URLs; the rest of the
// computer, and unclean paths, have none.
func TestFromGuest(t *testing.T) {
	for _, tt := range []struct {
		guest string
		want  string // "" for none
	}{
		{"/workspace/report.md", "den://workspace/report.md"},
		{"/workspace", "den://workspace/"},
		{"/workspace/a b/c.txt", "den://workspace/a%20b/c.txt"},
		{"/den/attachments/voice.ogg", "den://attachments/voice.ogg"},
		{"/den/offloads/out.txt", "den://offloads/out.txt"},
		{"/den/browser/shot.png", "den://browser/shot.png"},
		{"/den/memory/2025-01-02.md", "den://memory/2025-01-02.md"},
		{"/den/skills/pdf/SKILL.md", "den://skills/pdf/SKILL.md"},
		{"/den/shared/x", "den://shared/x"},
		{"/workspace2/x", ""},
		{"/workspaces", ""},
		{"/den", ""},
		{"/den/", ""},
		{"/den/x", ""},
		{"/den/memoryx/a", ""},
		{"/root/a.txt", ""},
		{"/tmp/a.txt", ""},
		{"/etc/shadow", ""},
		{"/run/den/token", ""},
		{"/", ""},
		{"", ""},
		{"workspace/a", ""},
		{"/workspace/", ""},
		{"/workspace/../etc/shadow", ""},
		{"/workspace/./a", ""},
		{"/workspace//a", ""},
		{"/workspace/a\nb", ""},
		{"/workspace/a\x00b", ""},
		{"/workspace/bad\xff", ""},
		{"/workspace/" + strings.Repeat("n", MaxName+1), ""},
	} {
		u, ok := FromGuest(tt.guest)
		got := ""
		if ok {
			got = u.String()
		}
		if got != tt.want {
			t.Errorf("FromGuest(%q) = %q, want %q", tt.guest, got, tt.want)
		}
	}
}

// TestKinds: every kind has its folder and scope; other strings have
// neither.
func TestKinds(t *testing.T) {
	session := map[Kind]bool{Workspace: true, Attachments: true, Offloads: true, Browser: true}
	for _, k := range Kinds() {
		if k.Guest() == "" {
			t.Errorf("%s has no folder", k)
		}
		want := PerAgent
		if session[k] {
			want = PerSession
		}
		if k.Scope() != want {
			t.Errorf("%s: scope %d, want %d", k, k.Scope(), want)
		}
	}
	for _, k := range []Kind{"", "root", "tmp", "WORKSPACE"} {
		if k.Guest() != "" || k.Scope() != 0 {
			t.Errorf("%q is taken for a kind", k)
		}
	}
}
