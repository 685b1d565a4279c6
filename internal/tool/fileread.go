package tool

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"

	"den.dev/den/internal/llm"
)

// Limits of file_read.
const (
	ReadDefaultChars = 15000
	ReadMaxChars     = 80000
	// sniffBytes is how much of a file's start decides whether it is
	// text.
	sniffBytes = 8192
)

// FileRead is the file_read tool: a range of lines of a text file.
type FileRead struct{}

// Spec implements Tool.
func (FileRead) Spec() llm.Tool {
	return llm.Tool{
		Name: "file_read",
		Description: "Read a text file in your computer. The result starts with a header: the path, its size in bytes and which lines are shown. " +
			"Long files are cut at a line boundary; the header then gives the offset to continue from. Relative paths start at /workspace. " +
			"Binary files are reported, not shown (use read_image for images).",
		Schema: json.RawMessage(fmt.Sprintf(`{
  "type": "object",
  "properties": {
    "path": {"type": "string", "description": "The file to read."},
    "offset": {"type": "integer", "minimum": 1, "description": "The first line to show, counting from 1 (default 1)."},
    "lines": {"type": "integer", "minimum": 1, "description": "How many lines to show at most (default: as many as fit in max_chars)."},
    "max_chars": {"type": "integer", "minimum": 1, "maximum": %d, "description": "How many characters to show at most (default %d)."}
  },
  "required": ["path"],
  "additionalProperties": false
}`, ReadMaxChars, ReadDefaultChars)),
	}
}

// ReadOnly implements Tool.
func (FileRead) ReadOnly(json.RawMessage) bool { return true }

// Run implements Tool. One command gives the file's size, its line
// count, its first bytes (to tell text
// from binary) and the lines asked for, in sections behind a random
// marker.
func (FileRead) Run(ctx context.Context, env *Env, input json.RawMessage) (Result, error) {
	var in struct {
		Path     string `json:"path"`
		Offset   int    `json:"offset"`
		Lines    int    `json:"lines"`
		MaxChars int    `json:"max_chars"`
	}
	if err := json.Unmarshal(input, &in); err != nil {
		return Errorf("invalid input: %v", err), nil
	}
	if strings.TrimSpace(in.Path) == "" {
		return Errorf("path is empty"), nil
	}
	p := ResolvePath(in.Path)
	in.Offset = max(in.Offset, 1)
	if in.MaxChars <= 0 {
		in.MaxChars = ReadDefaultChars
	}
	in.MaxChars = min(in.MaxChars, ReadMaxChars)
	// Enough bytes for max_chars+1 characters, so that a cut shows.
	limit := 4 * (in.MaxChars + 1)

	mark := make([]byte, 8)
	rand.Read(mark)
	sep := "\n__den_" + hex.EncodeToString(mark) + "\n"
	var sel strings.Builder
	fmt.Fprintf(&sel, "tail -n +%d \"$f\"", in.Offset)
	if in.Lines > 0 {
		fmt.Fprintf(&sel, " | head -n %d", in.Lines)
	}
	fmt.Fprintf(&sel, " | head -c %d", limit)
	script := "f=" + quote(p) + "\n" + checkFile +
		// stat is quick; wc reads the whole file. grep -c counts a
		// last line without a newline too.
		"s=$(stat -c %s \"$f\" 2>/dev/null) || s=$(wc -c <\"$f\") || exit 1\n" +
		"n=$(grep -c '' \"$f\")\n" +
		"echo $s $n\n" +
		"printf '%s' " + quote(sep) + "\n" +
		fmt.Sprintf("head -c %d \"$f\"\n", sniffBytes) +
		"printf '%s' " + quote(sep) + "\n" +
		sel.String() + "\n" +
		"printf '%s' " + quote(sep) + "\n"
	out, res, err := rawRun(ctx, env, script, nil)
	if err != nil {
		return Result{}, err
	}
	if msg := fileProblem(res.ExitCode, p); msg != "" {
		return Errorf("%s", msg), nil
	}
	parts := bytes.Split(out, []byte(sep))
	if res.ExitCode != 0 || len(parts) != 4 {
		return Errorf("cannot read %s: %s", p, failure(res)), nil
	}
	f := strings.Fields(string(parts[0]))
	if len(f) < 2 {
		return Errorf("cannot read %s: unexpected answer %q", p, parts[0]), nil
	}
	size, _ := strconv.ParseInt(f[0], 10, 64)
	total, _ := strconv.Atoi(f[1])
	head, content := parts[1], parts[2]

	if size == 0 {
		return located(Text(fmt.Sprintf("[%s | 0 bytes | empty file]", p)), p), nil
	}
	if why := binaryWhy(head, int64(len(head)) < size); why != "" {
		return located(binaryResult(p, size, head, why), p), nil
	}
	if in.Offset > total {
		return Errorf("offset %d is past the end of %s, which has %d line%s", in.Offset, p, total, plural(total)), nil
	}
	if len(content) >= limit {
		content = trimCutRune(content)
	}
	return located(Text(page(p, size, total, in.Offset, in.MaxChars, content)), p), nil
}

// page renders the lines read from offset on, cut to maxChars
// characters at a line boundary, under the header.
func page(p string, size int64, total, offset, maxChars int, content []byte) string {
	text := string(content)
	var notes []string
	if !utf8.ValidString(text) {
		// The start of the file is text; a later part is not.
		text = strings.ToValidUTF8(text, "\uFFFD")
		notes = append(notes, "bytes that are not UTF-8 are shown as \uFFFD")
	}
	cut := false
	if utf8.RuneCountInString(text) > maxChars {
		cut = true
		end := runeOffset(text, maxChars)
		if i := strings.LastIndexByte(text[:end], '\n'); i >= 0 {
			text = text[:i+1]
		} else {
			// One line longer than the limit: show its start.
			text = text[:end]
			notes = append(notes, fmt.Sprintf("line %d is longer than %d characters and is cut; read the rest with shell_execute (e.g. cut or fold)", offset, maxChars))
		}
	}
	shown := strings.Count(text, "\n")
	if !strings.HasSuffix(text, "\n") {
		shown++ // the last line of the file, or the start of a long line
	}
	last := offset + shown - 1
	hdr := fmt.Sprintf("[%s | %d bytes | lines %d-%d of %d", p, size, offset, last, total)
	switch {
	case last < total && cut:
		hdr += fmt.Sprintf(" | truncated at %d chars; next offset %d", maxChars, last+1)
	case last < total:
		hdr += fmt.Sprintf(" | next offset %d", last+1)
	}
	hdr += "]"
	for _, n := range notes {
		hdr += "\n[" + n + "]"
	}
	return hdr + "\n" + text
}

// binaryWhy says why a file whose first bytes are head is not text, or
// returns "". more says the file goes on after head, so a character cut
// at its end is not an error.
func binaryWhy(head []byte, more bool) string {
	if bytes.IndexByte(head, 0) >= 0 {
		return "it contains NUL bytes"
	}
	if more {
		head = trimCutRune(head)
	}
	if !utf8.Valid(head) {
		return "it is not valid UTF-8 text"
	}
	return ""
}

// trimCutRune drops an incomplete character at the end of b, where a
// byte limit cut it.
func trimCutRune(b []byte) []byte {
	for i := 1; i <= utf8.UTFMax && i <= len(b); i++ {
		if utf8.RuneStart(b[len(b)-i]) {
			if !utf8.FullRune(b[len(b)-i:]) {
				return b[:len(b)-i]
			}
			break
		}
	}
	return b
}

func binaryResult(p string, size int64, head []byte, why string) Result {
	var b strings.Builder
	fmt.Fprintf(&b, "[%s | %d bytes | binary file: %s]\n", p, size, why)
	if kind := imageKind(head); kind != "" {
		fmt.Fprintf(&b, "It is a %s image; look at it with read_image.\n", strings.ToUpper(strings.TrimPrefix(kind, "image/")))
	}
	n := min(len(head), 64)
	fmt.Fprintf(&b, "First %d bytes (hex): %s\n", n, hex.EncodeToString(head[:n]))
	b.WriteString("Inspect it with shell_execute (file, od -c, strings, xxd), or convert it to text first.")
	return Text(b.String())
}
