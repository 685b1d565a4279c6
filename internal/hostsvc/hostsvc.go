// Package hostsvc implements den's host commands: what a program inside
// the agent's computer asks den to do on the host (open something in
// the user's face, notify, ask the user, call a model, read other
// sessions, read or change den's settings, use the clipboard, speak,
// use the MCP servers the user connected, schedule its own runs).
// The transport, the JSON envelope and the permission gate are
// elsewhere (hostcmd, permission).
//
// Everything a call carries comes from the computer, which may be
// hostile. So each command is split in two: Parse reads the arguments
// once, strictly (a flag given twice is an error, values are checked
// against what the host programs accept), and returns a Plan: the
// action, the subject and the exact effect the permission gate decides
// on, and the function that runs exactly that. Nothing is parsed twice,
// so the gate can never decide on one reading and the command run on
// another. Files named by the computer are read through GuestFS (as the
// computer's own ids, never following a symlink); files den writes
// for it go through hostfs.
package hostsvc

import (
	"context"
	"flag"
	"fmt"
	"io"
	"math"
	"os/exec"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"den.dev/den/internal/hostcmd"
	"den.dev/den/internal/hostfs"
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
// *NotifyEvent or *SpeechEvent. Their text comes from the computer:
// faces show it through permission.Printable.
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
	// Attachments is the host side of the session's /den/attachments,
	// where den-speak saves audio; Owner is who files den makes there
	// must belong to (root inside), nil when den's own ids are right.
	Attachments string
	Owner       *hostfs.Owner
	// Files reads files of the computer by their paths inside it.
	Files interface {
		ReadFile(guestPath string) ([]byte, error)
	}
	// Device reaches the user's browser (den-location, den-camera,
	// den-clipboard, den-speak --browser); nil where no web face can be
	// connected (den run).
	Device Device
	// MCP is the session's MCP servers (den-mcp); nil where the face
	// runs none.
	MCP MCP
	// Browser is the session's web browser (den-browser); nil where the
	// agent has none.
	Browser Browser
	// Agents is the session's sub-agents and the other agents
	// (den-agent); nil where the face runs none.
	Agents Agents
	// Schedules is the agent's scheduled jobs (den-schedule); nil where
	// there are none.
	Schedules Schedules
	// LookPath finds host programs (exec.LookPath when nil).
	LookPath func(string) (string, error)
}

func (s *Service) lookPath(name string) (string, error) {
	if s.LookPath != nil {
		return s.LookPath(name)
	}
	return exec.LookPath(name)
}

// Plan is a parsed call: what the permission gate decides on, and what
// runs if it allows the call.
type Plan struct {
	// Action is the command's action ("run", "set"; "" for commands
	// without actions).
	Action string
	// Subject is what the action acts on, for the policy and for the
	// reach of an approval (see permission.Request).
	Subject string
	// Detail is the exact effect, for the person asked ("" when the
	// command line says it all).
	Detail string
	// Run does it, with what Parse read.
	Run func(ctx context.Context) Result
}

// Command describes one host command.
type Command struct {
	Name    string
	Aliases []string
	Usage   string
	// Parse reads a call's arguments. It returns the call's plan, or a
	// result (invalid_args, not_available) when there is nothing to run.
	Parse func(s *Service, c *Call) (*Plan, *Result)
}

// Commands lists den's host commands.
func Commands() []Command {
	return []Command{
		{Name: "den-open", Aliases: []string{"xdg-open", "x-www-browser", "sensible-browser", "www-browser"},
			Usage: "den-open URL|PATH\n  Open a web address, or a file of this computer, in the user's face.",
			Parse: (*Service).parseOpen},
		{Name: "den-notify", Usage: "den-notify [--title T] MESSAGE\n  Show the user a notification.",
			Parse: (*Service).parseNotify},
		{Name: "den-ask", Usage: "den-ask [--choices a,b,c | --confirm] QUESTION\n  Ask the user and print the answer.",
			Parse: (*Service).parseAsk},
		{Name: "den-model", Usage: "den-model list\nden-model run --model REF [--prompt T | --prompt-file F] [--system T] [--image PATH] [--max-tokens N] [--json]\n  List the models den may call, or call one (the prompt is read from standard input when not given).",
			Parse: (*Service).parseModel},
		{Name: "den-sessions", Usage: "den-sessions list | search QUERY | show ID | send ID MESSAGE\n  Read or write the agent's other sessions.",
			Parse: (*Service).parseSessions},
		{Name: "den-config", Usage: "den-config get [KEY] | set KEY VALUE\n  Read den's settings (secrets are never printed), or change one of the few an agent may: " +
			"agents.<agent>.model and agents.<agent>.instructions of its own agent.",
			Parse: (*Service).parseConfig},
		{Name: "den-clipboard", Usage: "den-clipboard read | write [TEXT]\n  Read or write the host's clipboard (write reads standard input without TEXT).",
			Parse: (*Service).parseClipboard},
		{Name: "den-location", Usage: "den-location [--timeout 30s]\n  Ask the user's browser (den open on their phone) where it is: latitude, longitude and accuracy in meters.",
			Parse: (*Service).parseLocation},
		{Name: "den-speak", Usage: "den-speak [--voice V] TEXT\nden-speak --browser [--lang L] [--voice V] [--rate R] TEXT\n" +
			"  Speak TEXT into an audio file in /den/attachments and play it to the user, or (--browser) aloud on the user's browser, their phone.",
			Parse: (*Service).parseSpeak},
		{Name: "den-camera", Usage: "den-camera [--prompt TEXT] [--timeout 2m]\n  Ask the user to take a photo with their phone (den open in its browser); the photo is saved to /den/attachments and its path printed.",
			Parse: (*Service).parseCamera},
		{Name: "den-mcp", Usage: "den-mcp list | tools SERVER | call SERVER TOOL [JSON] | resources SERVER | read SERVER URI | prompts SERVER\n" +
			"  The MCP servers the user connected: list them, list a server's tools, call a tool (its arguments as one JSON object, or on standard input; decided as your own call of that tool is), list or read its resources, list its prompts.",
			Parse: (*Service).parseMCP},
		{Name: "den-browser", Usage: "den-browser ACTION [--name VALUE ...] [--json OBJECT]\n" +
			"  Drive the agent's web browser, the one the browser_use tool drives: navigate URL, snapshot, click --index N, type --index N --text T [--submit], " +
			"get_readable, screenshot, get_cookies (the values go to an env file in /den/offloads), ... (den-browser help lists them). " +
			"A value of - is read from standard input.",
			Parse: (*Service).parseBrowser},
		{Name: "den-agent", Usage: "den-agent run [--profile NAME] [--agent NAME] TASK | spawn [--profile NAME] [--agent NAME] TASK\n" +
			"den-agent status ID | wait ID [--timeout 5m] | steer ID MESSAGE | cancel ID | list | send AGENT MESSAGE\n" +
			"  Hand a task to a sub-agent, a session of its own (run waits for its answer; spawn prints its id, and its answer joins this conversation when it ends; " +
			"the task is read from standard input when not given), follow, steer or stop it; or send a message into another agent's inbox.",
			Parse: (*Service).parseAgent},
		{Name: "den-schedule", Usage: scheduleUsage + "\n" +
			"  Schedule yourself: run a prompt in a fresh session (or --session NAME) at --cron EXPR [--tz ZONE], --every D, --at TIME or --in D; " +
			"--verify CMD makes a run ok only if CMD exits 0 in this computer; den delivers each answer to the user. Only this agent's jobs. den-schedule add --help lists the flags.",
			Parse: (*Service).parseSchedule},
	}
}

// Limits on what a call may carry; beyond them a call is refused,
// never cut.
const (
	maxText     = 16 << 10 // a message, question or text to speak
	maxTitle    = 256
	maxTarget   = 8 << 10
	maxChoices  = 20
	maxChoice   = 200
	maxStdin    = 1 << 20 // a prompt or clipboard text read from standard input
	maxSpeech   = 64 << 20
	maxFileRead = 32 << 20
)

// flags is a strict flag set: a flag given twice is an error (the first
// and the last would otherwise disagree about what runs), as is any
// value with a NUL byte or invalid UTF-8.
type flags struct {
	fs  *flag.FlagSet
	set map[string]bool
}

func newFlags(name string) *flags {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	return &flags{fs: fs, set: map[string]bool{}}
}

type onceValue struct {
	f     *flags
	name  string
	apply func(string) error
	str   func() string
	bool  bool
}

func (v *onceValue) Set(s string) error {
	if v.f.set[v.name] {
		return fmt.Errorf("given more than once")
	}
	v.f.set[v.name] = true
	if strings.ContainsRune(s, 0) || !utf8.ValidString(s) {
		return fmt.Errorf("not text (a NUL byte or invalid UTF-8)")
	}
	return v.apply(s)
}
func (v *onceValue) String() string {
	if v.str == nil {
		return ""
	}
	return v.str()
}
func (v *onceValue) IsBoolFlag() bool { return v.bool }

func (f *flags) String(name, usage string) *string {
	p := new(string)
	f.fs.Var(&onceValue{f: f, name: name, apply: func(s string) error { *p = s; return nil }, str: func() string { return *p }}, name, usage)
	return p
}

func (f *flags) Int(name, usage string) *int {
	p := new(int)
	f.fs.Var(&onceValue{f: f, name: name, apply: func(s string) error {
		n, err := strconv.Atoi(s)
		if err != nil {
			return fmt.Errorf("not a whole number")
		}
		*p = n
		return nil
	}}, name, usage)
	return p
}

func (f *flags) Float(name, usage string) *float64 {
	p := new(float64)
	f.fs.Var(&onceValue{f: f, name: name, apply: func(s string) error {
		v, err := strconv.ParseFloat(s, 64)
		if err != nil || math.IsNaN(v) || math.IsInf(v, 0) {
			return fmt.Errorf("not a number")
		}
		*p = v
		return nil
	}}, name, usage)
	return p
}

func (f *flags) Duration(name string, def time.Duration) *time.Duration {
	p := &def
	f.fs.Var(&onceValue{f: f, name: name, apply: func(s string) error {
		d, err := time.ParseDuration(s)
		if err != nil {
			return fmt.Errorf("not a duration such as 30s")
		}
		*p = d
		return nil
	}}, name, "")
	return p
}

func (f *flags) Bool(name, usage string) *bool {
	p := new(bool)
	f.fs.Var(&onceValue{f: f, name: name, bool: true, apply: func(s string) error {
		switch s {
		case "true", "1":
			*p = true
		case "false", "0":
			*p = false
		default:
			return fmt.Errorf("want true or false")
		}
		return nil
	}}, name, usage)
	return p
}

// parse parses args; errors become an invalid_args result.
func (f *flags) parse(action string, args []string) ([]string, *Result) {
	if err := f.fs.Parse(args); err != nil {
		return nil, invalid(action, "%v", err)
	}
	for _, a := range f.fs.Args() {
		if strings.ContainsRune(a, 0) || !utf8.ValidString(a) {
			return nil, invalid(action, "an argument is not text (a NUL byte or invalid UTF-8)")
		}
	}
	return f.fs.Args(), nil
}

func invalid(action, format string, args ...any) *Result {
	r := fail(action, CodeInvalidArgs, format, args...)
	return &r
}

func unavailable(action, format string, args ...any) *Result {
	r := fail(action, CodeNotAvailable, format, args...)
	return &r
}

// plan makes a Plan.
func plan(action, subject, detail string, run func(ctx context.Context) Result) (*Plan, *Result) {
	return &Plan{Action: action, Subject: subject, Detail: detail, Run: run}, nil
}

// checkText refuses text longer than max bytes, saying so.
func checkText(action, what, s string, max int) *Result {
	if len(s) > max {
		return invalid(action, "%s is %d bytes: the most a host command takes is %d", what, len(s), max)
	}
	return nil
}

// readAll reads at most max bytes of r; more is an error, never a silent
// cut.
func readAll(r io.Reader, max int64) ([]byte, error) {
	b, err := io.ReadAll(io.LimitReader(r, max+1))
	if err != nil {
		return nil, err
	}
	if int64(len(b)) > max {
		return nil, fmt.Errorf("more than %d bytes on standard input", max)
	}
	return b, nil
}

// hasControl reports characters that have no place in a one-line value
// (a URL, a title): control characters, including newlines.
func hasControl(s string) bool {
	for _, r := range s {
		if r < 0x20 || r == 0x7f || (r >= 0x80 && r < 0xa0) {
			return true
		}
	}
	return false
}
