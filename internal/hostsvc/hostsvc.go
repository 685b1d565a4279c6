// Package hostsvc implements den's host commands: what a program inside
// the agent's computer asks den to do on the host (open something in
// the user's face, notify, ask the user, call a model, read other
// sessions, read or change den's settings, use the clipboard, speak).
// The transport, the JSON envelope and the permission gate are
// elsewhere (hostcmd, permission); each command here parses its
// arguments like a well-made Unix tool and returns data or a coded
// error.
package hostsvc

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"den.dev/den/internal/hostcmd"
)

// Error codes of the envelope (hostcmd's, under shorter names).
const (
	CodeDenied       = hostcmd.CodeDenied
	CodeNotAvailable = hostcmd.CodeNotAvailable
	CodeInvalidArgs  = hostcmd.CodeInvalidArgs
	CodeNoData       = hostcmd.CodeNoData
	CodeInternal     = hostcmd.CodeInternalError
)

// Result is a command's answer: Data when Code is "", else an error.
type Result struct {
	Action  string
	Data    any
	Code    string
	Message string
}

func ok(action string, data any) Result { return Result{Action: action, Data: data} }

func fail(action, code, format string, args ...any) Result {
	return Result{Action: action, Code: code, Message: fmt.Sprintf(format, args...)}
}

// Event is what a command raises for the faces: *OpenEvent,
// *NotifyEvent or *SpeechEvent.
type Event interface{ isHostEvent() }

// OpenEvent asks the faces to open a URL or a file of the computer.
type OpenEvent struct{ Target string }

// NotifyEvent is a notification for the user.
type NotifyEvent struct{ Title, Message string }

// SpeechEvent announces an audio file made by den-speak.
type SpeechEvent struct{ Path, Text string }

func (*OpenEvent) isHostEvent()   {}
func (*NotifyEvent) isHostEvent() {}
func (*SpeechEvent) isHostEvent() {}

// Call is one invocation as the commands see it.
type Call struct {
	Agent, Session string
	Args           []string
	Cwd            string
	Stdin          io.Reader
}

// Service holds what the commands need from den.
type Service struct {
	// Emit sends events to the faces.
	Emit func(Event)
	// Ask asks the user a question in the face in use; nil when no face
	// can ask (den run without a terminal).
	Ask func(ctx context.Context, question string, choices []string) (string, error)
	// Sessions reads and writes the agent's other sessions.
	Sessions Sessions
	// Models calls configured models.
	Models Models
	// Config reads and changes den's settings.
	Config Config
	// AttachmentsDir is the host side of the session's /den/attachments.
	AttachmentsDir string
	// Files reads files of the computer by their paths inside it.
	Files interface {
		ReadFile(guestPath string) ([]byte, error)
	}
	// LookPath finds host programs (exec.LookPath when nil).
	LookPath func(string) (string, error)
}

func (s *Service) lookPath(name string) (string, error) {
	if s.LookPath != nil {
		return s.LookPath(name)
	}
	return exec.LookPath(name)
}

// Command describes one host command for --help and dispatch.
type Command struct {
	Name    string
	Aliases []string
	Usage   string
	Run     func(s *Service, ctx context.Context, c *Call) Result
	// Action names the action of a call for the permission gate.
	Action func(args []string) string
}

// Commands lists den's host commands.
func Commands() []Command {
	return []Command{
		{Name: "den-open", Aliases: []string{"xdg-open", "x-www-browser", "sensible-browser", "www-browser"},
			Usage:  "den-open URL|PATH\n  Open a web address, or a file of this computer, in the user's face.",
			Run:    (*Service).open,
			Action: func([]string) string { return "open" }},
		{Name: "den-notify", Usage: "den-notify [--title T] MESSAGE\n  Show the user a notification.",
			Run: (*Service).notify, Action: func([]string) string { return "notify" }},
		{Name: "den-ask", Usage: "den-ask [--choices a,b,c | --confirm] QUESTION\n  Ask the user and print the answer.",
			Run: (*Service).ask, Action: func([]string) string { return "ask" }},
		{Name: "den-model", Usage: "den-model list\nden-model run --model REF [--prompt T | --prompt-file F] [--system T] [--image PATH] [--max-tokens N] [--json]\n  List the models den may call, or call one (the prompt is read from standard input when not given).",
			Run: (*Service).model, Action: firstWord},
		{Name: "den-sessions", Usage: "den-sessions list | search QUERY | show ID | send ID MESSAGE\n  Read or write the agent's other sessions.",
			Run: (*Service).sessions, Action: firstWord},
		{Name: "den-config", Usage: "den-config get [KEY] | set KEY VALUE\n  Read or change den's settings (secrets are never printed).",
			Run: (*Service).config, Action: firstWord},
		{Name: "den-clipboard", Usage: "den-clipboard read | write [TEXT]\n  Read or write the host's clipboard (write reads standard input without TEXT).",
			Run: (*Service).clipboard, Action: firstWord},
		{Name: "den-speak", Usage: "den-speak [--voice V] TEXT\n  Speak TEXT into an audio file in /den/attachments and play it to the user.",
			Run: (*Service).speak, Action: func([]string) string { return "speak" }},
	}
}

func firstWord(args []string) string {
	for _, a := range args {
		if !strings.HasPrefix(a, "-") {
			return a
		}
	}
	return ""
}

// flags parses a command's flags the Go way, turning errors into an
// invalid_args result.
func flags(action string, fs *flag.FlagSet, args []string) (rest []string, bad *Result) {
	fs.SetOutput(io.Discard)
	if err := fs.Parse(args); err != nil {
		r := fail(action, CodeInvalidArgs, "%v", err)
		return nil, &r
	}
	return fs.Args(), nil
}

func (s *Service) open(ctx context.Context, c *Call) Result {
	args, bad := flags("open", flag.NewFlagSet("den-open", flag.ContinueOnError), c.Args)
	if bad != nil {
		return *bad
	}
	if len(args) != 1 || strings.TrimSpace(args[0]) == "" {
		return fail("open", CodeInvalidArgs, "want one URL or path")
	}
	target := args[0]
	if !strings.Contains(target, "://") && !strings.HasPrefix(target, "mailto:") && !filepath.IsAbs(target) {
		target = filepath.Join(c.Cwd, target)
	}
	s.Emit(&OpenEvent{Target: target})
	return ok("open", map[string]string{"target": target})
}

func (s *Service) notify(ctx context.Context, c *Call) Result {
	fs := flag.NewFlagSet("den-notify", flag.ContinueOnError)
	title := fs.String("title", "den", "title")
	args, bad := flags("notify", fs, c.Args)
	if bad != nil {
		return *bad
	}
	msg := strings.TrimSpace(strings.Join(args, " "))
	if msg == "" {
		return fail("notify", CodeInvalidArgs, "no message")
	}
	s.Emit(&NotifyEvent{Title: *title, Message: msg})
	desktop := false
	if os.Getenv("DISPLAY") != "" || os.Getenv("WAYLAND_DISPLAY") != "" {
		if p, err := s.lookPath("notify-send"); err == nil {
			ctx, cancel := context.WithTimeout(ctx, 3*time.Second)
			desktop = exec.CommandContext(ctx, p, "--app-name=den", *title, msg).Run() == nil
			cancel()
		}
	}
	return ok("notify", map[string]any{"title": *title, "message": msg, "desktop": desktop})
}

func (s *Service) ask(ctx context.Context, c *Call) Result {
	fs := flag.NewFlagSet("den-ask", flag.ContinueOnError)
	choices := fs.String("choices", "", "comma-separated choices")
	confirm := fs.Bool("confirm", false, "a yes/no question")
	args, bad := flags("ask", fs, c.Args)
	if bad != nil {
		return *bad
	}
	q := strings.TrimSpace(strings.Join(args, " "))
	if q == "" {
		return fail("ask", CodeInvalidArgs, "no question")
	}
	if *confirm && *choices != "" {
		return fail("ask", CodeInvalidArgs, "--choices and --confirm exclude each other")
	}
	var opts []string
	if *confirm {
		opts = []string{"yes", "no"}
	} else if *choices != "" {
		for _, o := range strings.Split(*choices, ",") {
			if o = strings.TrimSpace(o); o != "" {
				opts = append(opts, o)
			}
		}
	}
	if s.Ask == nil {
		return fail("ask", CodeNotAvailable, "no one can answer: den runs without a terminal or a connected face")
	}
	answer, err := s.Ask(ctx, q, opts)
	switch {
	case errors.Is(err, context.DeadlineExceeded):
		return fail("ask", CodeNoData, "the user did not answer in time")
	case err != nil:
		return fail("ask", CodeNoData, "%v", err)
	}
	if len(opts) > 0 {
		found := false
		for _, o := range opts {
			if strings.EqualFold(o, answer) {
				answer, found = o, true
			}
		}
		if !found {
			return fail("ask", CodeNoData, "the answer %q is not one of the choices", answer)
		}
	}
	return ok("ask", map[string]string{"question": q, "answer": answer})
}
