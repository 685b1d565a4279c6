package tool

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	"den.dev/den/internal/cmdscan"
	"den.dev/den/internal/llm"
	"den.dev/den/internal/sandbox"
)

// Limits of shell_execute.
const (
	ShellDefaultTimeout = 600 // seconds
	ShellMaxTimeout     = 3600
	// ShellMaxChars is how much output the model reads; above it, the
	// first and last halves are kept and the whole output is saved in
	// /den/offloads.
	ShellMaxChars = 30000
)

// ShellExecute is the shell_execute tool: a command in the session's
// persistent shell, or in a fresh process when the call runs beside
// others.
type ShellExecute struct{}

// Spec implements Tool.
func (ShellExecute) Spec() llm.Tool {
	return llm.Tool{
		Name: "shell_execute",
		Description: "Run a shell command in your Linux computer and return its output (stdout and stderr combined) and exit code. " +
			"Commands run one after another in a persistent shell, so the working directory and exported variables carry over to the next call " +
			"(when several calls run at once, each runs in a fresh shell that starts from that state). The default directory is /workspace. " +
			"Keep commands short; write longer scripts to a file first. Start long-running servers in the background (nohup ... &). " +
			fmt.Sprintf("Output beyond %d characters is cut to its beginning and end, and the whole output is saved to a file whose path is given.", ShellMaxChars),
		Schema: json.RawMessage(fmt.Sprintf(`{
  "type": "object",
  "properties": {
    "command": {"type": "string", "description": "The shell command to run."},
    "timeout": {"type": "integer", "minimum": 1, "maximum": %d, "description": "Seconds before the command and everything it started are stopped (default %d)."}
  },
  "required": ["command"],
  "additionalProperties": false
}`, ShellMaxTimeout, ShellDefaultTimeout)),
	}
}

// ReadOnly implements Tool: a command may change anything.
func (ShellExecute) ReadOnly(json.RawMessage) bool { return false }

// Run implements Tool.
func (ShellExecute) Run(ctx context.Context, env *Env, input json.RawMessage) (Result, error) {
	var in struct {
		Command string `json:"command"`
		Timeout int    `json:"timeout"`
	}
	if err := json.Unmarshal(input, &in); err != nil {
		return Errorf("invalid input: %v", err), nil
	}
	if strings.TrimSpace(in.Command) == "" {
		return Errorf("command is empty"), nil
	}
	if in.Timeout <= 0 {
		in.Timeout = ShellDefaultTimeout
	}
	// The computer's shell is BusyBox ash (or dash) when bash is not
	// installed: bash-only syntax would fail or, worse, silently do
	// something else. Say which construct, and how to get bash.
	if env.Shell != "" && !strings.HasSuffix(env.Shell, "bash") {
		if need, cs := cmdscan.NeedsBash(in.Command, "ash"); need && len(cs) > 0 {
			c := cs[0]
			return Errorf("this computer's /bin/sh is not bash, and the command uses bash-only syntax: %s at line %d column %d (%q). %s Or install bash first (apk add bash); den then runs commands with it.",
				c.Name, c.Pos.Line, c.Pos.Col, c.Snippet, c.Fix), nil
		}
	}
	cmd := sandbox.Command{Script: in.Command, Timeout: time.Duration(in.Timeout) * time.Second}
	if env.Output != nil {
		out := env.Output
		cmd.OnOutput = func(_, text string) { out(text) }
	}
	run := env.Computer.Run
	if env.Concurrent {
		run = env.Computer.Exec
	}
	res, err := run(ctx, cmd)
	if err != nil {
		return Result{}, err
	}
	if err := ctx.Err(); err != nil {
		return Result{}, err
	}

	out := res.Output
	var saved string
	if utf8.RuneCountInString(out) > ShellMaxChars {
		full, size := res.OffloadPath, res.TotalBytes // the sandbox saved it already
		if full == "" {
			p, problem, err := saveOffload(ctx, env, "shell", out)
			if err != nil {
				return Result{}, err
			}
			full, size = p, int64(len(out))
			if problem != "" {
				saved = "output truncated to its beginning and end; the full output could not be saved: " + problem
			}
		}
		out = headTail(out, ShellMaxChars/2, ShellMaxChars/2)
		switch {
		case full != "" && res.Truncated && res.OffloadPath == "":
			// The sandbox kept only a head and tail and could not save
			// the rest: what is saved is that excerpt.
			saved = fmt.Sprintf("output truncated to its first and last %d characters; the output was %d bytes, of which the sandbox kept its beginning and end, saved in %s", ShellMaxChars/2, res.TotalBytes, full)
		case full != "":
			saved = fmt.Sprintf("output truncated to its first and last %d characters; the full output (%d bytes) is in %s — read parts of it with file_read (offset, lines) or grep", ShellMaxChars/2, size, full)
		}
	}

	var b strings.Builder
	if out == "" {
		b.WriteString("(no output)\n")
	} else {
		b.WriteString(out)
		if !strings.HasSuffix(out, "\n") {
			b.WriteByte('\n')
		}
	}
	fmt.Fprintf(&b, "[exit code: %d]", res.ExitCode)
	note := res.Note
	if saved != "" {
		note = dropTruncationNote(note) // ours says it again, for the model
	}
	for _, note := range []string{note, saved} {
		if note != "" {
			b.WriteString("\n[" + note + "]")
		}
	}
	r := Text(b.String())
	r.IsError = res.TimedOut || res.Canceled
	code := res.ExitCode
	r.ExitCode = &code
	return r, nil
}

// dropTruncationNote removes the sandbox's own words about a capped
// output from its note; they come last.
func dropTruncationNote(note string) string {
	if i := strings.Index(note, "output truncated to head and tail"); i >= 0 {
		return strings.TrimSuffix(note[:i], "; ")
	}
	return note
}

// headTail keeps the first head and last tail characters of s, moved to
// line boundaries when one is near, with a marker between them.
func headTail(s string, head, tail int) string {
	h := runeOffset(s, head)
	if i := strings.LastIndexByte(s[:h], '\n'); i >= h/2 {
		h = i + 1
	}
	t := len(s) - runeOffsetFromEnd(s, tail)
	if i := strings.IndexByte(s[t:], '\n'); i >= 0 && i < (len(s)-t)/2 {
		t += i + 1
	}
	if t < h {
		return s
	}
	omitted := utf8.RuneCountInString(s[h:t])
	return s[:h] + fmt.Sprintf("\n[… %d characters omitted …]\n", omitted) + s[t:]
}

// runeOffset is the byte offset after the first n runes of s.
func runeOffset(s string, n int) int {
	for i := range s {
		if n == 0 {
			return i
		}
		n--
	}
	return len(s)
}

// runeOffsetFromEnd is the byte length of the last n runes of s.
func runeOffsetFromEnd(s string, n int) int {
	i := len(s)
	for ; n > 0 && i > 0; n-- {
		_, size := utf8.DecodeLastRuneInString(s[:i])
		i -= size
	}
	return len(s) - i
}

// saveOffload saves text in the computer's offload folder and returns
// its guest path.
func saveOffload(ctx context.Context, env *Env, kind, text string) (string, string, error) {
	b := make([]byte, 4)
	rand.Read(b)
	p := fmt.Sprintf("%s/%s-%s-%s.txt", sandbox.GuestOffloads, kind, time.Now().UTC().Format("20060102-150405"), hex.EncodeToString(b))
	problem, err := writeFile(ctx, env, p, []byte(text), false)
	if err != nil || problem != "" {
		return "", problem, err
	}
	return p, "", nil
}
