package callfix

import (
	"fmt"
	"slices"
	"strings"

	"den.dev/den/internal/llm"
)

// aliases are names models use for den's tools (from other agents'
// tool sets), by normalised name.
var aliases = map[string]string{
	"bash": "shell_execute", "sh": "shell_execute", "shell": "shell_execute", "exec": "shell_execute",
	"execute": "shell_execute", "run": "shell_execute", "terminal": "shell_execute", "cmd": "shell_execute",
	"command": "shell_execute", "run_command": "shell_execute", "execute_command": "shell_execute",
	"run_shell_command": "shell_execute", "shell_exec": "shell_execute", "run_terminal_cmd": "shell_execute",
	"read_file": "file_read", "read": "file_read", "cat": "file_read", "view": "file_read", "open_file": "file_read",
	"view_file": "file_read", "readfile": "file_read",
	"write_file": "file_write", "write": "file_write", "create_file": "file_write", "writefile": "file_write",
	"edit_file": "file_edit", "edit": "file_edit", "str_replace": "file_edit", "replace_in_file": "file_edit",
	"str_replace_editor": "file_edit",
	"view_image":         "read_image", "image_read": "read_image", "look_at_image": "read_image",
}

// prefixes are namespaces some models put before a tool's name.
var prefixes = []string{"functions.", "function.", "tools.", "tool.", "default_api.", "default_api:", "functions:"}

// resolve finds the tool a call names: exactly; or, uniquely, one
// differing in case or separators (-, _, ., space), a known alias, the
// same words in another order, or a name within edit distance 2.
func resolve(name string, specs []llm.Tool) (llm.Tool, string, error) {
	for _, s := range specs {
		if s.Name == name {
			return s, "", nil
		}
	}
	found := func(s llm.Tool, how string) (llm.Tool, string, error) {
		return s, fmt.Sprintf("the tool name %q was read as %s (%s)", name, s.Name, how), nil
	}
	n := normName(name)
	if n != "" {
		if s, ok := unique(specs, func(s llm.Tool) bool { return normName(s.Name) == n }); ok {
			return found(s, "a spelling variant")
		}
		if target, ok := aliases[n]; ok {
			if s, ok := unique(specs, func(s llm.Tool) bool { return s.Name == target }); ok {
				return found(s, "a common alias")
			}
		}
		words := sortedWords(n)
		if s, ok := unique(specs, func(s llm.Tool) bool { return sortedWords(normName(s.Name)) == words }); ok {
			return found(s, "the same words in another order")
		}
		if len(n) >= 4 {
			best, bestD, count := llm.Tool{}, 3, 0
			for _, s := range specs {
				switch d := levenshtein(n, normName(s.Name)); {
				case d < bestD:
					best, bestD, count = s, d, 1
				case d == bestD:
					count++
				}
			}
			if bestD <= 2 && count == 1 {
				return found(best, "a near-miss spelling")
			}
		}
	}
	names := make([]string, len(specs))
	for i, s := range specs {
		names[i] = s.Name
	}
	return llm.Tool{}, "", &Error{Kind: ErrUnknownTool, Msg: fmt.Sprintf("Unknown tool %q. The available tools are: %s.", name, strings.Join(names, ", "))}
}

func unique(specs []llm.Tool, match func(llm.Tool) bool) (llm.Tool, bool) {
	var found llm.Tool
	n := 0
	for _, s := range specs {
		if match(s) {
			found = s
			n++
		}
	}
	return found, n == 1
}

// normName lowercases a name, drops a namespace prefix and writes its
// separators as _.
func normName(name string) string {
	n := strings.ToLower(strings.TrimSpace(name))
	for _, p := range prefixes {
		n = strings.TrimPrefix(n, p)
	}
	n = strings.Map(func(r rune) rune {
		switch r {
		case '-', '.', ' ', ':', '/':
			return '_'
		}
		return r
	}, n)
	for strings.Contains(n, "__") {
		n = strings.ReplaceAll(n, "__", "_")
	}
	return strings.Trim(n, "_")
}

func sortedWords(n string) string {
	w := strings.Split(n, "_")
	slices.Sort(w)
	return strings.Join(w, "_")
}

// levenshtein is the edit distance between a and b, in runes.
func levenshtein(a, b string) int {
	ra, rb := []rune(a), []rune(b)
	prev := make([]int, len(rb)+1)
	cur := make([]int, len(rb)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(ra); i++ {
		cur[0] = i
		for j := 1; j <= len(rb); j++ {
			cost := 1
			if ra[i-1] == rb[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(rb)]
}
