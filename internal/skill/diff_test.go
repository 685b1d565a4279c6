package skill

import (
	"fmt"
	"math/rand/v2"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestCompare(t *testing.T) {
	old := []File{
		{Path: "SKILL.md", Data: []byte("a\nb\nc\nd\ne\nf\ng\nh\ni\nj\nk\n")},
		{Path: "gone.md", Data: []byte("bye\n")},
		{Path: "run.sh", Data: []byte("echo\n")},
		{Path: "logo.png", Data: []byte("\x89PNG\x00\x01")},
		{Path: "same.md", Data: []byte("same\n")},
	}
	new := []File{
		{Path: "SKILL.md", Data: []byte("a\nB\nc\nd\ne\nf\ng\nh\ni\nj\nk\nl")},
		{Path: "new.md", Data: []byte("hello\n")},
		{Path: "run.sh", Exec: true, Data: []byte("echo\n")},
		{Path: "logo.png", Data: []byte("\x89PNG\x00\x02")},
		{Path: "same.md", Data: []byte("same\n")},
	}
	want := []FileDiff{
		{Path: "SKILL.md", Change: Modified, Unified: "--- a/SKILL.md\n+++ b/SKILL.md\n" +
			"@@ -1,5 +1,5 @@\n a\n-b\n+B\n c\n d\n e\n" +
			"@@ -9,3 +9,4 @@\n i\n j\n k\n+l\n\\ No newline at end of file\n"},
		{Path: "gone.md", Change: Removed, Unified: "--- a/gone.md\n+++ /dev/null\n@@ -1 +0,0 @@\n-bye\n"},
		{Path: "logo.png", Change: Modified, Binary: true},
		{Path: "new.md", Change: Added, Unified: "--- /dev/null\n+++ b/new.md\n@@ -0,0 +1 @@\n+hello\n"},
		{Path: "run.sh", Change: ModeChanged, Note: "now executable"},
	}
	if diff := cmp.Diff(want, Compare(old, new)); diff != "" {
		t.Errorf("Compare (-want +got):\n%s", diff)
	}
}

// TestDiffApplies checks, on random edits, that applying the unified
// diff to the old text gives the new text, and that the edit script is
// no longer than deleting and inserting the lines that differ.
func TestDiffApplies(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	for i := range 500 {
		var a []string
		for range r.IntN(40) {
			a = append(a, fmt.Sprintf("l%d\n", r.IntN(6)))
		}
		b := append([]string(nil), a...)
		for range 1 + r.IntN(6) {
			if len(b) > 0 && r.IntN(2) == 0 {
				j := r.IntN(len(b))
				b = append(b[:j], b[j+1:]...)
			} else {
				j := r.IntN(len(b) + 1)
				b = append(b[:j], append([]string{fmt.Sprintf("n%d\n", r.IntN(4))}, b[j:]...)...)
			}
		}
		ops := myers(a, b)
		if got := strings.Join(apply(a, b, ops), ""); got != strings.Join(b, "") {
			t.Fatalf("case %d: the script gives %q, want %q", i, got, strings.Join(b, ""))
		}
		if edits := countEdits(ops); edits > len(a)+len(b)-2*lcs(a, b) {
			t.Fatalf("case %d: %d edits, the shortest has %d", i, edits, len(a)+len(b)-2*lcs(a, b))
		}
		d := textDiff("f", Modified, []byte(strings.Join(a, "")), []byte(strings.Join(b, "")))
		if got := patch(t, strings.Join(a, ""), d.Unified); got != strings.Join(b, "") {
			t.Fatalf("case %d: patching gives %q, want %q\n%s", i, got, strings.Join(b, ""), d.Unified)
		}
	}
}

func apply(a, b []string, ops []op) []string {
	var out []string
	i, j := 0, 0
	for _, o := range ops {
		switch o {
		case keep:
			out = append(out, a[i])
			i++
			j++
		case del:
			i++
		case ins:
			out = append(out, b[j])
			j++
		}
	}
	return out
}

func countEdits(ops []op) int {
	n := 0
	for _, o := range ops {
		if o != keep {
			n++
		}
	}
	return n
}

// lcs is the length of the longest common subsequence of a and b.
func lcs(a, b []string) int {
	prev := make([]int, len(b)+1)
	for i := range a {
		cur := make([]int, len(b)+1)
		for j := range b {
			if a[i] == b[j] {
				cur[j+1] = prev[j] + 1
			} else {
				cur[j+1] = max(prev[j+1], cur[j])
			}
		}
		prev = cur
	}
	return prev[len(b)]
}

var hunkRE = regexp.MustCompile(`^@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@`)

// patch applies a unified diff to text, hunk by hunk, checking every
// context and removed line.
func patch(t *testing.T, text, unified string) string {
	t.Helper()
	lines := splitLines([]byte(text))
	var out []string
	pos := 0
	diffLines := strings.SplitAfter(unified, "\n")
	for k := 2; k < len(diffLines); k++ {
		l := diffLines[k]
		if l == "" {
			continue
		}
		if m := hunkRE.FindStringSubmatch(l); m != nil {
			s1, _ := strconv.Atoi(m[1])
			n1 := 1
			if m[2] != "" {
				n1, _ = strconv.Atoi(m[2])
			}
			start := s1 - 1
			if n1 == 0 {
				start = s1
			}
			out = append(out, lines[pos:start]...)
			pos = start
			continue
		}
		switch l[0] {
		case ' ', '-':
			if pos >= len(lines) || strings.TrimSuffix(lines[pos], "\n") != strings.TrimSuffix(l[1:], "\n") {
				t.Fatalf("line %d: %q does not match %q", pos+1, l, lines[min(pos, len(lines)-1)])
			}
			if l[0] == ' ' {
				out = append(out, lines[pos])
			}
			pos++
		case '+':
			out = append(out, l[1:])
		case '\\':
			last := len(out) - 1
			out[last] = strings.TrimSuffix(out[last], "\n")
		}
	}
	return strings.Join(append(out, lines[pos:]...), "")
}
