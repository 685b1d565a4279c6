package tool

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"path"
	"strings"
	"time"

	"den.dev/den/internal/llm"
	"den.dev/den/internal/resource"
	"den.dev/den/internal/sandbox"
)

// Tool is one tool the model can call.
type Tool interface {
	// Spec is the tool's name, description and input schema, as the
	// model sees them (the registry adds tool_title to the schema).
	Spec() llm.Tool
	// ReadOnly reports whether a call with this input changes nothing,
	// so that it may run beside other calls of the same turn. The
	// input has been validated.
	ReadOnly(input json.RawMessage) bool
	// Run carries out one call. input has been validated against the
	// schema and no longer holds tool_title. What the model got wrong
	// comes back as a Result with IsError set; the error is for what
	// ends the turn instead: the computer is gone, ctx was canceled.
	Run(ctx context.Context, env *Env, input json.RawMessage) (Result, error)
}

// Computer is the part of a sandbox.Session tools use.
type Computer interface {
	// Run runs a command in the persistent shell, one at a time.
	Run(ctx context.Context, cmd sandbox.Command) (*sandbox.Result, error)
	// Exec runs a command as a fresh process, beside anything else.
	Exec(ctx context.Context, cmd sandbox.Command) (*sandbox.Result, error)
}

var _ Computer = (*sandbox.Session)(nil)

// Env is what a call runs against.
type Env struct {
	// Computer is the session's computer.
	Computer Computer
	// Images says the model accepts images in tool results.
	Images bool
	// Shell is the computer's shell (bash when installed); shell_execute
	// refuses bash-only syntax when it is not bash.
	Shell string
	// Concurrent says the call runs beside other calls of its turn;
	// Registry.Call sets it. Shell commands then run as fresh processes
	// instead of in the persistent shell.
	Concurrent bool
	// Output, when set, receives a shell command's output as it arrives
	// (cleaned text, stdout and stderr interleaved), for the record of a
	// call that is still running.
	Output func(text string)
	// Memory is the agent's memory; nil when it is off for the session.
	Memory Memory
	// Session is the call's session and Message the assistant message
	// that made the call (memory entries name both).
	Session, Message string
}

// Result is a tool's answer.
type Result struct {
	Content []llm.Part // *llm.Text and *llm.Image
	IsError bool
	// ExitCode is a shell command's exit status (nil for other tools).
	ExitCode *int
}

// Text returns a result holding one text part.
func Text(s string) Result {
	return Result{Content: []llm.Part{&llm.Text{Text: s}}}
}

// Errorf returns an error result the model reads.
func Errorf(format string, args ...any) Result {
	r := Text(fmt.Sprintf(format, args...))
	r.IsError = true
	return r
}

// ResolvePath turns a path the model gave into an absolute, clean path
// inside the computer: relative paths start at /workspace and a leading
// ~ is /root.
func ResolvePath(p string) string {
	switch {
	case p == "~":
		return sandbox.GuestHome
	case strings.HasPrefix(p, "~/"):
		p = sandbox.GuestHome + p[1:]
	case !strings.HasPrefix(p, "/"):
		p = sandbox.GuestWorkspace + "/" + p
	}
	return path.Clean(p)
}

// located ends r, a result about the file at p (absolute and clean),
// with the file's den:// URL on a line of its own when p is in one of
// the folders den:// URLs name: the model can write it in its answer,
// and the faces show the file.
func located(r Result, p string) Result {
	u, ok := resource.FromGuest(p)
	if !ok {
		return r
	}
	r.Content = append(r.Content, &llm.Text{Text: "\n" + u.String()})
	return r
}

// quote quotes s for the computer's shell.
func quote(s string) string { return sandbox.QuoteArgs([]string{s}) }

// prelude starts every script the file tools run: a known PATH and the
// C locale, so that byte counts are bytes whatever the user exported.
const prelude = "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin; LC_ALL=C; export PATH LC_ALL\n"

// fileTimeout bounds the commands of the file tools.
const fileTimeout = 2 * time.Minute

// checkFile is shell source that exits with one of the codes below
// unless $f is a readable regular file.
const checkFile = `[ -e "$f" ] || exit 82
[ -d "$f" ] && exit 83
[ -f "$f" ] || exit 84
[ -r "$f" ] || exit 85
`

// fileProblem explains an exit code of checkFile, or returns "".
func fileProblem(code int, p string) string {
	switch code {
	case 82:
		return fmt.Sprintf("%s does not exist", p)
	case 83:
		return fmt.Sprintf("%s is a directory, not a file; list it with shell_execute (ls -la %s)", p, quote(p))
	case 84:
		return fmt.Sprintf("%s is not a regular file (a device, FIFO or socket); it cannot be read as a file", p)
	case 85:
		return fmt.Sprintf("%s is not readable (permission denied)", p)
	}
	return ""
}

// rawRun runs a file tool's script as a fresh process (file tools never
// need the persistent shell's state, and must not be changed by its
// functions or options) and returns its exact stdout bytes.
func rawRun(ctx context.Context, env *Env, script string, stdin []byte) ([]byte, *sandbox.Result, error) {
	var out bytes.Buffer
	res, err := env.Computer.Exec(ctx, sandbox.Command{
		Script:    prelude + script,
		Stdin:     stdin,
		Timeout:   fileTimeout,
		RawOutput: true,
		NoOffload: true,
		OnOutput: func(stream, text string) {
			if stream == "stdout" {
				out.WriteString(text)
			}
		},
	})
	if err != nil {
		return nil, nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, nil, err
	}
	return out.Bytes(), res, nil
}

// failure describes a failed file command from its stderr.
func failure(res *sandbox.Result) string {
	msg := strings.TrimSpace(res.Stderr)
	if msg == "" {
		msg = fmt.Sprintf("exit code %d", res.ExitCode)
	}
	if res.Note != "" {
		msg += " (" + res.Note + ")"
	}
	return msg
}

// maxFileBytes caps what file_edit and read_image load into den.
const maxFileBytes = 32 << 20

// readFile returns the exact bytes of a regular file in the computer, or
// a problem for the model.
func readFile(ctx context.Context, env *Env, p string, limit int64) ([]byte, string, error) {
	script := "f=" + quote(p) + "\n" + checkFile +
		fmt.Sprintf("s=$(wc -c <\"$f\") || exit 1\n[ \"$s\" -gt %d ] && { echo \"$s\"; exit 86; }\nexec cat \"$f\"\n", limit)
	out, res, err := rawRun(ctx, env, script, nil)
	if err != nil {
		return nil, "", err
	}
	if msg := fileProblem(res.ExitCode, p); msg != "" {
		return nil, msg, nil
	}
	switch res.ExitCode {
	case 0:
		return out, "", nil
	case 86:
		return nil, fmt.Sprintf("%s is too large (%s bytes; the limit here is %d)", p, strings.TrimSpace(string(out)), limit), nil
	}
	return nil, fmt.Sprintf("cannot read %s: %s", p, failure(res)), nil
}

// writeFile replaces (or, with appendTo, extends) a file in the
// computer with exactly data, creating its parent folders. An existing
// file is written in place, so it keeps its mode, owner and links.
func writeFile(ctx context.Context, env *Env, p string, data []byte, appendTo bool) (string, error) {
	op := ">"
	if appendTo {
		op = ">>"
	}
	if data == nil {
		data = []byte{}
	}
	script := "f=" + quote(p) + "\n" +
		`[ -d "$f" ] && exit 83` + "\n" +
		"mkdir -p " + quote(path.Dir(p)) + " || exit 1\n" +
		"cat " + op + `"$f"` + "\n"
	_, res, err := rawRun(ctx, env, script, data)
	if err != nil {
		return "", err
	}
	switch res.ExitCode {
	case 0:
		return "", nil
	case 83:
		return fileProblem(83, p), nil
	}
	return fmt.Sprintf("cannot write %s: %s", p, failure(res)), nil
}
