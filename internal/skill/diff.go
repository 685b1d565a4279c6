package skill

import (
	"bytes"
	"fmt"
	"slices"
	"strings"
)

// Change is how a file differs between two versions of a skill.
type Change string

// Changes.
const (
	Added    Change = "added"
	Removed  Change = "removed"
	Modified Change = "modified"
	// ModeChanged is a file whose executable bit alone changed.
	ModeChanged Change = "mode"
	// Planted is an entry that is neither a file nor a folder (a link,
	// say) found where the skill's files are.
	Planted Change = "planted"
)

// A FileDiff is one file's difference between two versions of a skill.
type FileDiff struct {
	Path   string
	Change Change
	// Binary is set when either version is not text: Unified is then
	// empty.
	Binary bool
	// Unified is a unified diff of the text (headers "--- a/PATH" and
	// "+++ b/PATH", three lines of context).
	Unified string
	// Note says more: an executable bit that changed, what was planted.
	Note string
}

func (d FileDiff) String() string {
	s := fmt.Sprintf("%s %s", d.Change, d.Path)
	if d.Binary {
		s += " (binary)"
	}
	if d.Note != "" {
		s += ": " + d.Note
	}
	return s
}

// Compare lists how the files of new differ from those of old, by
// path.
func Compare(old, new []File) []FileDiff {
	byPath := map[string]File{}
	for _, f := range old {
		byPath[f.Path] = f
	}
	var out []FileDiff
	seen := map[string]bool{}
	for _, n := range new {
		seen[n.Path] = true
		o, ok := byPath[n.Path]
		switch {
		case !ok:
			out = append(out, textDiff(n.Path, Added, nil, n.Data))
		case !bytes.Equal(o.Data, n.Data):
			d := textDiff(n.Path, Modified, o.Data, n.Data)
			if o.Exec != n.Exec {
				d.Note = execNote(n.Exec)
			}
			out = append(out, d)
		case o.Exec != n.Exec:
			out = append(out, FileDiff{Path: n.Path, Change: ModeChanged, Note: execNote(n.Exec)})
		}
	}
	for _, o := range old {
		if !seen[o.Path] {
			out = append(out, textDiff(o.Path, Removed, o.Data, nil))
		}
	}
	slices.SortFunc(out, func(a, b FileDiff) int { return strings.Compare(a.Path, b.Path) })
	return out
}

func execNote(exec bool) string {
	if exec {
		return "now executable"
	}
	return "no longer executable"
}

// maxDiffLines bounds the lines of a file den diffs line by line; a
// bigger change is shown whole.
const maxDiffLines = 20000

// textDiff is the FileDiff of one file from old to new (nil for a file
// that is not there).
func textDiff(p string, change Change, old, new []byte) FileDiff {
	d := FileDiff{Path: p, Change: change}
	if (old != nil && !isText(old)) || (new != nil && !isText(new)) {
		d.Binary = true
		return d
	}
	a, b := splitLines(old), splitLines(new)
	var ops []op
	if len(a)+len(b) > maxDiffLines {
		ops = wholeOps(len(a), len(b))
	} else {
		ops = myers(a, b)
	}
	var out strings.Builder
	from, to := "a/"+p, "b/"+p
	if old == nil {
		from = "/dev/null"
	}
	if new == nil {
		to = "/dev/null"
	}
	fmt.Fprintf(&out, "--- %s\n+++ %s\n", from, to)
	writeHunks(&out, a, b, ops)
	d.Unified = out.String()
	return d
}

// splitLines splits text into lines, each keeping its "\n".
func splitLines(data []byte) []string {
	if len(data) == 0 {
		return nil
	}
	s := string(data)
	var out []string
	for len(s) > 0 {
		i := strings.IndexByte(s, '\n')
		if i < 0 {
			out = append(out, s)
			break
		}
		out = append(out, s[:i+1])
		s = s[i+1:]
	}
	return out
}

// An op is one step of an edit script: keep a line of both, delete one
// of a, or insert one of b.
type op byte

const (
	keep op = iota
	del
	ins
)

// wholeOps deletes all of a and inserts all of b.
func wholeOps(n, m int) []op {
	ops := make([]op, 0, n+m)
	for range n {
		ops = append(ops, del)
	}
	for range m {
		ops = append(ops, ins)
	}
	return ops
}

// maxEdits bounds the edit distance myers searches: past it, a file's
// change is shown whole, and the search's memory stays a few MB.
const maxEdits = 1000

// myers is the shortest edit script from a to b (Myers, "An O(ND)
// Difference Algorithm and Its Variations", 1986): the greedy search
// for the furthest-reaching path on each diagonal, each step's frontier
// kept to trace the path back.
func myers(a, b []string) []op {
	n, m := len(a), len(b)
	// frontier[d][k+d+1] is the furthest x on diagonal k before step d
	// (diagonals -d-1 … d+1).
	var frontier [][]int
	v := map[int]int{1: 0}
	for d := 0; d <= min(n+m, maxEdits); d++ {
		f := make([]int, 2*d+3)
		for k := -d - 1; k <= d+1; k++ {
			f[k+d+1] = v[k]
		}
		frontier = append(frontier, f)
		for k := -d; k <= d; k += 2 {
			var x int
			if k == -d || (k != d && v[k-1] < v[k+1]) {
				x = v[k+1]
			} else {
				x = v[k-1] + 1
			}
			y := x - k
			for x < n && y < m && a[x] == b[y] {
				x++
				y++
			}
			v[k] = x
			if x >= n && y >= m {
				return backtrack(frontier, n, m, d)
			}
		}
	}
	return wholeOps(n, m)
}

// backtrack turns myers's frontiers into an edit script ending at
// (n, m) after dEnd steps.
func backtrack(frontier [][]int, n, m, dEnd int) []op {
	var rev []op
	x, y := n, m
	for d := dEnd; d > 0; d-- {
		f := frontier[d]
		at := func(k int) int { return f[k+d+1] }
		k := x - y
		prevK := k - 1
		if k == -d || (k != d && at(k-1) < at(k+1)) {
			prevK = k + 1
		}
		prevX := at(prevK)
		prevY := prevX - prevK
		for x > prevX && y > prevY {
			rev = append(rev, keep)
			x--
			y--
		}
		if x == prevX {
			rev = append(rev, ins)
			y--
		} else {
			rev = append(rev, del)
			x--
		}
	}
	for x > 0 && y > 0 {
		rev = append(rev, keep)
		x--
		y--
	}
	slices.Reverse(rev)
	return rev
}

// contextLines is the lines of context around each change.
const contextLines = 3

// writeHunks writes ops as unified-diff hunks: changes less than
// 2*contextLines unchanged lines apart share a hunk.
func writeHunks(w *strings.Builder, a, b []string, ops []op) {
	// at[k] is the position in a and b before ops[k].
	type pos struct{ i, j int }
	at := make([]pos, len(ops)+1)
	i, j := 0, 0
	for k, o := range ops {
		at[k] = pos{i, j}
		if o != ins {
			i++
		}
		if o != del {
			j++
		}
	}
	at[len(ops)] = pos{i, j}
	for k := 0; k < len(ops); {
		if ops[k] == keep {
			k++
			continue
		}
		last := k
		for e := k + 1; e < len(ops); {
			if ops[e] != keep {
				last = e
				e++
				continue
			}
			r := e
			for r < len(ops) && ops[r] == keep {
				r++
			}
			if r == len(ops) || r-e > 2*contextLines {
				break
			}
			e = r
		}
		start, stop := max(0, k-contextLines), min(len(ops), last+1+contextLines)
		from, to := at[start], at[stop]
		fmt.Fprintf(w, "@@ -%s +%s @@\n", span(from.i, to.i-from.i), span(from.j, to.j-from.j))
		for h := start; h < stop; h++ {
			switch p := at[h]; ops[h] {
			case keep:
				writeLine(w, ' ', a[p.i])
			case del:
				writeLine(w, '-', a[p.i])
			case ins:
				writeLine(w, '+', b[p.j])
			}
		}
		k = stop
	}
}

// span is a hunk header's "start,count", 1-based, as diff writes it.
func span(start, count int) string {
	if count == 0 {
		return fmt.Sprintf("%d,0", start)
	}
	if count == 1 {
		return fmt.Sprintf("%d", start+1)
	}
	return fmt.Sprintf("%d,%d", start+1, count)
}

func writeLine(w *strings.Builder, mark byte, line string) {
	w.WriteByte(mark)
	w.WriteString(line)
	if !strings.HasSuffix(line, "\n") {
		w.WriteString("\n\\ No newline at end of file\n")
	}
}
