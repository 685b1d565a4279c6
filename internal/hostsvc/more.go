package hostsvc

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"strings"
	"time"
)

// SessionInfo describes a session for den-sessions.
type SessionInfo struct {
	ID      string    `json:"id"`
	Title   string    `json:"title"`
	Model   string    `json:"model"`
	Updated time.Time `json:"updated"`
}

// SessionMessage is one message of a shown session.
type SessionMessage struct {
	Role string `json:"role"`
	Text string `json:"text"`
}

// Hit is a search match.
type Hit struct {
	Session string `json:"session"`
	Title   string `json:"title"`
	Snippet string `json:"snippet"`
}

// Sessions is the agent's sessions, as den-sessions may use them: only
// the calling agent's.
type Sessions interface {
	List(ctx context.Context, agent string) ([]SessionInfo, error)
	Search(ctx context.Context, agent, query string) ([]Hit, error)
	Show(ctx context.Context, agent, id string) (SessionInfo, []SessionMessage, error)
	// Send adds a message to another session of the agent, read by its
	// next run.
	Send(ctx context.Context, agent, fromSession, id, message string) error
}

// ModelInfo is a model den-model may call.
type ModelInfo struct {
	Ref    string `json:"ref"`
	Images bool   `json:"images"`
}

// ModelRequest is one den-model run.
type ModelRequest struct {
	Ref       string
	System    string
	Prompt    string
	Image     []byte
	ImageType string
	MaxTokens int
}

// ModelAnswer is what the model said.
type ModelAnswer struct {
	Model        string  `json:"model"`
	Text         string  `json:"text"`
	InputTokens  int64   `json:"input_tokens"`
	OutputTokens int64   `json:"output_tokens"`
	CostUSD      float64 `json:"cost_usd"`
}

// Models is what den-model may call: the allow-listed models.
type Models interface {
	List() []ModelInfo
	Run(ctx context.Context, req ModelRequest) (ModelAnswer, error)
}

// Config is den's settings, as den-config may touch them.
type Config interface {
	Get(key string) (string, error)
	Set(key, value string) (old string, err error)
}

func (s *Service) sessions(ctx context.Context, c *Call) Result {
	if s.Sessions == nil {
		return fail("", CodeNotAvailable, "sessions are not available here")
	}
	args := c.Args
	if len(args) == 0 {
		return fail("", CodeInvalidArgs, "want list, search QUERY, show ID or send ID MESSAGE")
	}
	switch args[0] {
	case "list":
		list, err := s.Sessions.List(ctx, c.Agent)
		if err != nil {
			return fail("list", CodeInternal, "%v", err)
		}
		return ok("list", list)
	case "search":
		q := strings.TrimSpace(strings.Join(args[1:], " "))
		if q == "" {
			return fail("search", CodeInvalidArgs, "no query")
		}
		hits, err := s.Sessions.Search(ctx, c.Agent, q)
		if err != nil {
			return fail("search", CodeInternal, "%v", err)
		}
		if len(hits) == 0 {
			return fail("search", CodeNoData, "nothing matches %q", q)
		}
		return ok("search", hits)
	case "show":
		if len(args) != 2 {
			return fail("show", CodeInvalidArgs, "want show ID")
		}
		info, msgs, err := s.Sessions.Show(ctx, c.Agent, args[1])
		if err != nil {
			return fail("show", CodeNoData, "%v", err)
		}
		return ok("show", map[string]any{"session": info, "messages": msgs})
	case "send":
		if len(args) < 3 {
			return fail("send", CodeInvalidArgs, "want send ID MESSAGE")
		}
		if args[1] == c.Session {
			return fail("send", CodeInvalidArgs, "that is this session")
		}
		if err := s.Sessions.Send(ctx, c.Agent, c.Session, args[1], strings.Join(args[2:], " ")); err != nil {
			return fail("send", CodeNoData, "%v", err)
		}
		return ok("send", map[string]string{"session": args[1]})
	}
	return fail(args[0], CodeInvalidArgs, "unknown action %q: want list, search, show or send", args[0])
}

func (s *Service) model(ctx context.Context, c *Call) Result {
	if s.Models == nil {
		return fail("", CodeNotAvailable, "no models are configured for den-model")
	}
	if len(c.Args) == 0 {
		return fail("", CodeInvalidArgs, "want list or run")
	}
	switch c.Args[0] {
	case "list":
		return ok("list", s.Models.List())
	case "run":
	default:
		return fail(c.Args[0], CodeInvalidArgs, "unknown action %q: want list or run", c.Args[0])
	}
	fs := flag.NewFlagSet("den-model run", flag.ContinueOnError)
	ref := fs.String("model", "", "model ref")
	prompt := fs.String("prompt", "", "prompt")
	promptFile := fs.String("prompt-file", "", "file holding the prompt")
	system := fs.String("system", "", "system prompt")
	image := fs.String("image", "", "image file")
	maxTokens := fs.Int("max-tokens", 0, "output limit")
	fs.Bool("json", false, "answer as JSON (the envelope always is)")
	rest, bad := flags("run", fs, c.Args[1:])
	if bad != nil {
		return *bad
	}
	if *ref == "" {
		return fail("run", CodeInvalidArgs, "--model is required (den-model list shows them)")
	}
	if len(rest) > 0 {
		return fail("run", CodeInvalidArgs, "unexpected arguments %q", rest)
	}
	req := ModelRequest{Ref: *ref, System: *system, MaxTokens: *maxTokens}
	switch {
	case *prompt != "" && *promptFile != "":
		return fail("run", CodeInvalidArgs, "--prompt and --prompt-file exclude each other")
	case *prompt != "":
		req.Prompt = *prompt
	case *promptFile != "":
		b, err := s.readFile(c.Cwd, *promptFile)
		if err != nil {
			return fail("run", CodeInvalidArgs, "prompt file: %v", err)
		}
		req.Prompt = string(b)
	default:
		b, err := io.ReadAll(io.LimitReader(c.Stdin, 4<<20))
		if err != nil {
			return fail("run", CodeInvalidArgs, "reading the prompt: %v", err)
		}
		req.Prompt = string(b)
	}
	if strings.TrimSpace(req.Prompt) == "" {
		return fail("run", CodeInvalidArgs, "empty prompt: give --prompt, --prompt-file, or standard input")
	}
	if *image != "" {
		b, err := s.readFile(c.Cwd, *image)
		if err != nil {
			return fail("run", CodeInvalidArgs, "image: %v", err)
		}
		req.Image, req.ImageType = b, sniffImage(b)
		if req.ImageType == "" {
			return fail("run", CodeInvalidArgs, "%s is not a PNG, JPEG, GIF or WebP image", *image)
		}
	}
	// Which models may run is the permission gate's decision (the
	// allow-list, or the user's approval), made before this runs.
	ans, err := s.Models.Run(ctx, req)
	if err != nil {
		return fail("run", CodeInternal, "%v", err)
	}
	return ok("run", ans)
}

// readFile reads a file of the computer (a path as the command inside
// saw it, relative to its cwd).
func (s *Service) readFile(cwd, p string) ([]byte, error) {
	if !path.IsAbs(p) {
		p = path.Join(cwd, p)
	}
	if s.Files == nil {
		return nil, fmt.Errorf("files of the computer are not readable here")
	}
	return s.Files.ReadFile(path.Clean(p))
}

func sniffImage(b []byte) string {
	switch {
	case len(b) > 8 && string(b[:8]) == "\x89PNG\r\n\x1a\n":
		return "image/png"
	case len(b) > 3 && b[0] == 0xFF && b[1] == 0xD8 && b[2] == 0xFF:
		return "image/jpeg"
	case len(b) > 6 && (string(b[:6]) == "GIF87a" || string(b[:6]) == "GIF89a"):
		return "image/gif"
	case len(b) > 12 && string(b[:4]) == "RIFF" && string(b[8:12]) == "WEBP":
		return "image/webp"
	}
	return ""
}

func (s *Service) config(ctx context.Context, c *Call) Result {
	if s.Config == nil {
		return fail("", CodeNotAvailable, "settings are not available here")
	}
	if len(c.Args) == 0 {
		return fail("", CodeInvalidArgs, "want get [KEY] or set KEY VALUE")
	}
	switch c.Args[0] {
	case "get":
		if len(c.Args) > 2 {
			return fail("get", CodeInvalidArgs, "want get [KEY]")
		}
		key := ""
		if len(c.Args) == 2 {
			key = c.Args[1]
		}
		v, err := s.Config.Get(key)
		if err != nil {
			return fail("get", CodeNoData, "%v", err)
		}
		return ok("get", map[string]string{"key": key, "value": v})
	case "set":
		if len(c.Args) != 3 {
			return fail("set", CodeInvalidArgs, "want set KEY VALUE")
		}
		old, err := s.Config.Set(c.Args[1], c.Args[2])
		if err != nil {
			return fail("set", CodeInvalidArgs, "%v", err)
		}
		return ok("set", map[string]string{"key": c.Args[1], "old": old, "revert": fmt.Sprintf("den-config set %s %s", c.Args[1], orUnset(old))})
	}
	return fail(c.Args[0], CodeInvalidArgs, "unknown action %q: want get or set", c.Args[0])
}

func orUnset(s string) string {
	if s == "" {
		return `""`
	}
	return s
}

func (s *Service) clipboard(ctx context.Context, c *Call) Result {
	if len(c.Args) == 0 || (c.Args[0] != "read" && c.Args[0] != "write") {
		return fail("", CodeInvalidArgs, "want read or write [TEXT]")
	}
	action := c.Args[0]
	var read, write []string
	switch {
	case os.Getenv("WAYLAND_DISPLAY") != "":
		read, write = []string{"wl-paste", "--no-newline"}, []string{"wl-copy"}
	case os.Getenv("DISPLAY") != "":
		read, write = []string{"xclip", "-selection", "clipboard", "-o"}, []string{"xclip", "-selection", "clipboard", "-i"}
	default:
		return fail(action, CodeNotAvailable, "the host has no graphical session, so no clipboard")
	}
	argv := read
	if action == "write" {
		argv = write
	}
	bin, err := s.lookPath(argv[0])
	if err != nil {
		return fail(action, CodeNotAvailable, "%s is not installed on the host (wl-clipboard or xclip)", argv[0])
	}
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, argv[1:]...)
	if action == "write" {
		if len(c.Args) > 1 {
			cmd.Stdin = strings.NewReader(strings.Join(c.Args[1:], " "))
		} else {
			cmd.Stdin = io.LimitReader(c.Stdin, 16<<20)
		}
		if out, err := cmd.CombinedOutput(); err != nil {
			return fail(action, CodeInternal, "%s: %v: %s", argv[0], err, strings.TrimSpace(string(out)))
		}
		return ok(action, map[string]bool{"written": true})
	}
	out, err := cmd.Output()
	if err != nil {
		return fail(action, CodeNoData, "%s: %v", argv[0], err)
	}
	return ok(action, map[string]string{"text": string(out)})
}

func (s *Service) speak(ctx context.Context, c *Call) Result {
	fs := flag.NewFlagSet("den-speak", flag.ContinueOnError)
	voice := fs.String("voice", "", "espeak-ng voice")
	args, bad := flags("speak", fs, c.Args)
	if bad != nil {
		return *bad
	}
	text := strings.TrimSpace(strings.Join(args, " "))
	if text == "" {
		return fail("speak", CodeInvalidArgs, "no text")
	}
	bin, err := s.lookPath("espeak-ng")
	if err != nil {
		return fail("speak", CodeNotAvailable, "espeak-ng is not installed on the host")
	}
	if s.AttachmentsDir == "" {
		return fail("speak", CodeNotAvailable, "no attachments folder")
	}
	name := fmt.Sprintf("speech-%s.wav", time.Now().UTC().Format("20060102-150405.000"))
	out := filepath.Join(s.AttachmentsDir, name)
	argv := []string{"-w", out}
	if *voice != "" {
		argv = append(argv, "-v", *voice)
	}
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, append(argv, "--", text)...)
	if msg, err := cmd.CombinedOutput(); err != nil {
		return fail("speak", CodeInternal, "espeak-ng: %v: %s", err, strings.TrimSpace(string(msg)))
	}
	guest := "/den/attachments/" + name
	s.Emit(&SpeechEvent{Path: guest, Text: text})
	return ok("speak", map[string]string{"path": guest})
}
