package cli

import (
	"context"
	"path/filepath"
	"regexp"
	"strings"

	"den.dev/den/internal/resource"
	"den.dev/den/internal/session"
)

// denURLs finds what may be den:// URLs in an answer: up to a space or
// a character that ends a URL in Markdown.
var denURLs = regexp.MustCompile("den://[^\\s<>()\\[\\]{}\"'`]+")

// withHostPaths is an answer with the host path of each den:// URL in it
// written after the first time it appears, so that a person at the
// terminal can open the file: "den://workspace/a.md (/home/u/.../a.md)".
// host says where a URL's file is ("" when it cannot say); what does not
// parse as a den:// URL is left alone.
func withHostPaths(text string, host func(resource.URL) string) string {
	var b strings.Builder
	done := map[resource.URL]bool{}
	at := 0
	for _, m := range denURLs.FindAllStringIndex(text, -1) {
		start, end := m[0], m[1]
		// Punctuation after a URL ends its sentence.
		end = start + len(strings.TrimRight(text[start:end], ".,:;!?*"))
		u, err := resource.Parse(text[start:end])
		if err != nil || done[u] {
			continue
		}
		p := host(u)
		if p == "" {
			continue
		}
		done[u] = true
		// After what closes the link, the code or the emphasis around it.
		for end < len(text) && strings.IndexByte(")>`*_", text[end]) >= 0 {
			end++
		}
		b.WriteString(text[at:end])
		b.WriteString(" (" + p + ")")
		at = end
	}
	b.WriteString(text[at:])
	return b.String()
}

// hostPaths says where den:// URLs of a session are on the host. It
// asks the runtime for the session's folders the first time it is
// needed, and says nothing when it cannot learn them.
func hostPaths(ctx context.Context, rt *session.Runtime, sessionID string) func(resource.URL) string {
	var folders *session.Folders
	return func(u resource.URL) string {
		if folders == nil {
			f, err := rt.Folders(ctx, sessionID)
			if err != nil {
				return ""
			}
			folders = &f
		}
		dir := folders.Dir(u.Kind)
		if dir == "" {
			return ""
		}
		return filepath.Join(dir, filepath.FromSlash(u.Path))
	}
}
