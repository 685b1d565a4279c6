package hostsvc

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"path"
	"strings"
	"time"
)

func (s *Service) parseOpen(c *Call) (*Plan, *Result) {
	args, bad := newFlags("den-open").parse("open", c.Args)
	if bad != nil {
		return nil, bad
	}
	if len(args) != 1 || strings.TrimSpace(args[0]) == "" {
		return nil, invalid("open", "want one URL or path")
	}
	target := args[0]
	if bad := checkText("open", "the target", target, maxTarget); bad != nil {
		return nil, bad
	}
	if hasControl(target) {
		return nil, invalid("open", "the target holds control characters")
	}
	switch {
	case strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:"):
		if _, err := url.Parse(target); err != nil {
			return nil, invalid("open", "%v", err)
		}
	case path.IsAbs(target):
		target = path.Clean(target)
	default:
		target = path.Join(c.Cwd, target)
	}
	return plan("open", target, "", func(ctx context.Context) Result {
		s.Emit(&OpenEvent{Target: target})
		return ok("open", map[string]string{"target": target})
	})
}

func (s *Service) parseNotify(c *Call) (*Plan, *Result) {
	f := newFlags("den-notify")
	title := f.String("title", "title")
	args, bad := f.parse("notify", c.Args)
	if bad != nil {
		return nil, bad
	}
	if !f.set["title"] {
		*title = "den"
	}
	msg := strings.TrimSpace(strings.Join(args, " "))
	switch {
	case msg == "":
		return nil, invalid("notify", "no message")
	case hasControl(*title):
		return nil, invalid("notify", "the title holds control characters")
	}
	if bad := checkText("notify", "the title", *title, maxTitle); bad != nil {
		return nil, bad
	}
	if bad := checkText("notify", "the message", msg, maxText); bad != nil {
		return nil, bad
	}
	return plan("notify", "", "", func(ctx context.Context) Result {
		s.Emit(&NotifyEvent{Title: *title, Message: msg})
		desktop := false
		if os.Getenv("DISPLAY") != "" || os.Getenv("WAYLAND_DISPLAY") != "" {
			if p, err := s.lookPath("notify-send"); err == nil {
				ctx, cancel := context.WithTimeout(ctx, 3*time.Second)
				// "--" keeps a title or message that starts with "-"
				// from being read as an option.
				desktop = exec.CommandContext(ctx, p, "--app-name=den", "--", *title, msg).Run() == nil
				cancel()
			}
		}
		return ok("notify", map[string]any{"title": *title, "message": msg, "desktop": desktop})
	})
}

func (s *Service) parseAsk(c *Call) (*Plan, *Result) {
	f := newFlags("den-ask")
	choices := f.String("choices", "comma-separated choices")
	confirm := f.Bool("confirm", "a yes/no question")
	args, bad := f.parse("ask", c.Args)
	if bad != nil {
		return nil, bad
	}
	q := strings.TrimSpace(strings.Join(args, " "))
	if q == "" {
		return nil, invalid("ask", "no question")
	}
	if bad := checkText("ask", "the question", q, maxText); bad != nil {
		return nil, bad
	}
	if *confirm && *choices != "" {
		return nil, invalid("ask", "--choices and --confirm exclude each other")
	}
	var opts []string
	if *confirm {
		opts = []string{"yes", "no"}
	} else if *choices != "" {
		for _, o := range strings.Split(*choices, ",") {
			if o = strings.TrimSpace(o); o != "" {
				if len(o) > maxChoice || hasControl(o) {
					return nil, invalid("ask", "a choice is longer than %d bytes or holds control characters", maxChoice)
				}
				opts = append(opts, o)
			}
		}
		if len(opts) > maxChoices {
			return nil, invalid("ask", "%d choices: at most %d", len(opts), maxChoices)
		}
	}
	if s.Ask == nil {
		return nil, unavailable("ask", "no one can answer: den runs without a terminal or a connected face")
	}
	return plan("ask", "", "", func(ctx context.Context) Result {
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
	})
}

func (s *Service) parseClipboard(c *Call) (*Plan, *Result) {
	if len(c.Args) == 0 || (c.Args[0] != "read" && c.Args[0] != "write") {
		return nil, invalid("", "want read or write [TEXT]")
	}
	action := c.Args[0]
	args, bad := newFlags("den-clipboard "+action).parse(action, c.Args[1:])
	if bad != nil {
		return nil, bad
	}
	if action == "read" && len(args) > 0 {
		return nil, invalid(action, "read takes no arguments")
	}
	text := strings.Join(args, " ")
	if bad := checkText(action, "the text", text, maxStdin); bad != nil {
		return nil, bad
	}
	// The clipboard is the browser's where den's web face is open and
	// focused (a phone's), else the host's graphical session's.
	var read, write []string
	var noHost string
	switch {
	case os.Getenv("WAYLAND_DISPLAY") != "":
		read, write = []string{"wl-paste", "--no-newline"}, []string{"wl-copy"}
	case os.Getenv("DISPLAY") != "":
		read, write = []string{"xclip", "-selection", "clipboard", "-o"}, []string{"xclip", "-selection", "clipboard", "-i"}
	default:
		noHost = "the host has no graphical session, so no clipboard"
	}
	argv := read
	if action == "write" {
		argv = write
	}
	var bin string
	if noHost == "" {
		var err error
		if bin, err = s.lookPath(argv[0]); err != nil {
			noHost = fmt.Sprintf("%s is not installed on the host (wl-clipboard or xclip)", argv[0])
		}
	}
	if noHost != "" && s.Device == nil {
		return nil, unavailable(action, "%s", noHost)
	}
	return plan(action, "", "", func(ctx context.Context) Result {
		if action == "write" && len(args) == 0 {
			b, err := readAll(c.Stdin, maxStdin)
			if err != nil {
				return fail(action, CodeInvalidArgs, "reading the text: %v", err)
			}
			text = string(b)
		}
		if s.Device != nil {
			r, tried := s.browserClipboard(ctx, c.Session, action, text)
			switch {
			case tried && (r.Code == "" || noHost != ""):
				return r // the browser did it, or could not and the host has none
			case !tried && noHost != "":
				return fail(action, CodeNotAvailable, "no browser with den's web face is connected, and %s", noHost)
			}
			// No browser, or one that could not: the host's clipboard.
		}
		ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		defer cancel()
		cmd := exec.CommandContext(ctx, bin, argv[1:]...)
		if action == "write" {
			cmd.Stdin = strings.NewReader(text)
			if out, err := cmd.CombinedOutput(); err != nil {
				return fail(action, CodeInternal, "%s: %v: %s", argv[0], err, strings.TrimSpace(string(out)))
			}
			return ok(action, map[string]any{"written": true, "clipboard": "host"})
		}
		out, err := cmd.Output()
		if err != nil {
			return fail(action, CodeNoData, "%s: %v", argv[0], err)
		}
		return ok(action, map[string]string{"text": string(out), "clipboard": "host"})
	})
}

// browserClipboard reads or writes the clipboard of the connected
// browser; tried is false when none is connected.
func (s *Service) browserClipboard(ctx context.Context, session, action, text string) (r Result, tried bool) {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	args := map[string]string{"action": action}
	if action == "write" {
		args["text"] = text
	}
	raw, err := s.Device(ctx, session, "clipboard", args)
	switch {
	case errors.Is(err, ErrNoDevice):
		return Result{}, false
	case errors.Is(err, ErrDeviceRefused):
		return fail(action, CodeNotAvailable, "%v", err), true
	case errors.Is(err, context.DeadlineExceeded):
		return fail(action, CodeNotAvailable, "no browser answered: den's page must be open and in front"), true
	case err != nil:
		return fail(action, CodeInternal, "%v", err), true
	}
	if action == "write" {
		return ok(action, map[string]any{"written": true, "clipboard": "browser"}), true
	}
	var got struct {
		Text *string `json:"text"`
	}
	if json.Unmarshal(raw, &got) != nil || got.Text == nil {
		return fail(action, CodeInternal, "the browser's answer is not text"), true
	}
	if len(*got.Text) > maxStdin {
		return fail(action, CodeInternal, "the browser's clipboard holds %d bytes: the most den passes on is %d", len(*got.Text), maxStdin), true
	}
	return ok(action, map[string]string{"text": *got.Text, "clipboard": "browser"}), true
}
