package mcpclient

import (
	"cmp"
	"crypto/sha256"
	"encoding/hex"
	"slices"
	"strings"
)

// Prefix starts the name of every MCP tool the model sees.
const Prefix = "mcp__"

// maxName is the longest tool name every provider takes (OpenAI's and
// Gemini's 64).
const maxName = 64

// ToolRef is one tool of one server, by the names the server gives.
type ToolRef struct{ Server, Tool string }

// ModelNames names tools for the model as Claude Code does,
// mcp__SERVER__TOOL, within what every provider takes: letters, digits,
// '_' and '-', at most 64 of them. A character outside that set
// becomes '_'. A name that would be longer, or that two tools would
// share ("a.b" and "a_b"; server "a" tool "b__c" and server "a__b"
// tool "c"), is cut and ends with '_' and a hash of the server's and
// the tool's own names instead. The result depends only on the set of
// refs given, never on their order, and no two refs share a name.
func ModelNames(refs []ToolRef) map[ToolRef]string {
	base := make(map[ToolRef]string, len(refs))
	count := map[string]int{}
	for _, r := range refs {
		if _, dup := base[r]; dup {
			continue
		}
		b := Prefix + sanitize(r.Server) + "__" + sanitize(r.Tool)
		base[r] = b
		count[b]++
	}
	out := make(map[ToolRef]string, len(base))
	taken := map[string]bool{}
	for r, b := range base {
		if len(b) <= maxName && count[b] == 1 {
			out[r] = b
			taken[b] = true
		}
	}
	// Hashed names, each as short as keeps it apart from every other;
	// refs are taken in a fixed order so that the result is the same
	// whatever order they came in.
	var rest []ToolRef
	for r := range base {
		if _, ok := out[r]; !ok {
			rest = append(rest, r)
		}
	}
	slices.SortFunc(rest, func(a, b ToolRef) int {
		return cmp.Or(strings.Compare(a.Server, b.Server), strings.Compare(a.Tool, b.Tool))
	})
	for _, r := range rest {
		sum := sha256.Sum256([]byte(r.Server + "\x00" + r.Tool))
		h := hex.EncodeToString(sum[:])
		for n := 8; ; n += 4 {
			suffix := "_" + h[:n]
			name := base[r]
			if len(name)+len(suffix) > maxName {
				name = name[:maxName-len(suffix)]
			}
			name += suffix
			if !taken[name] || n >= len(h) {
				out[r] = name
				taken[name] = true
				break
			}
		}
	}
	return out
}

func sanitize(s string) string {
	return strings.Map(func(r rune) rune {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '_', r == '-':
			return r
		}
		return '_'
	}, s)
}
