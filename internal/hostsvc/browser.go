package hostsvc

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// Browser is the session's web browser, as den-browser uses it: the
// same actions as the model's browser_use tool, given as flags.
type Browser interface {
	// Actions are the actions; Params their parameters, by JSON name,
	// with their kinds (see ParamKind).
	Actions() []BrowserAction
	Params() map[string]ParamKind
	// Positional is the parameter a lone argument gives for action
	// ("url" for navigate), "" when it takes none.
	Positional(action string) string
	// Site is what the permission gate decides an action on: the site
	// of the page it acts on.
	Site(action string, input json.RawMessage) string
	// Do runs one action. A failure the caller can act on (nothing
	// matched, a stale index, a timeout) is an error with its Code.
	Do(ctx context.Context, input json.RawMessage) (data any, err error)
}

// BrowserAction is one action for den-browser help.
type BrowserAction struct {
	Name    string   `json:"name"`
	Summary string   `json:"summary"`
	Params  []string `json:"params,omitempty"`
}

// ParamKind is how den-browser reads a flag's value.
type ParamKind int

// The kinds of parameters.
const (
	ParamString  ParamKind = iota
	ParamInt               // a whole number
	ParamNumber            // a number (seconds of a timeout)
	ParamBool              // --flag alone, or --flag=true|false
	ParamStrings           // repeated: --value a --value b
	ParamJSON              // a JSON value (cookies)
)

// BrowserError is a browser action that was not done, with the
// browser's code (not_found, stale, timeout, navigation_failed, ...)
// and its whole answer in words (a fresh snapshot for stale).
type BrowserError struct{ Code, Message string }

func (e *BrowserError) Error() string { return e.Message }

// maxBrowserInput bounds what den-browser passes on: a script or the
// text to type, read from standard input too.
const maxBrowserInput = 1 << 20

func (s *Service) parseBrowser(c *Call) (*Plan, *Result) {
	if s.Browser == nil {
		return nil, unavailable("", "the browser is not available here: it is off for this agent, or Chromium is not installed on the host")
	}
	var names []string
	for _, a := range s.Browser.Actions() {
		names = append(names, a.Name)
	}
	if len(c.Args) == 0 || strings.HasPrefix(c.Args[0], "-") {
		return nil, invalid("", "want an action (den-browser help describes them): %s", strings.Join(names, ", "))
	}
	action := c.Args[0]
	if action == "help" {
		return &Plan{Action: "help", Run: func(context.Context) Result { return ok("help", s.Browser.Actions()) }}, nil
	}
	if !slices.Contains(names, action) {
		return nil, invalid("", "unknown action %q: want help or one of %s", action, strings.Join(names, ", "))
	}
	input, bad := s.browserInput(action, c)
	if bad != nil {
		return nil, bad
	}
	raw, err := json.Marshal(input)
	if err != nil {
		return nil, invalid(action, "%v", err)
	}
	detail := ""
	if action == "execute_js" {
		script, _ := input["script"].(string)
		detail = "Run this script in the page:\n" + clipText(script, 2000)
	}
	return &Plan{Action: action, Subject: s.Browser.Site(action, raw), Detail: detail, Run: func(ctx context.Context) Result {
		data, err := s.Browser.Do(ctx, raw)
		if err != nil {
			if be, isBrowser := err.(*BrowserError); isBrowser {
				code := be.Code
				if code == "unavailable" {
					code = CodeNotAvailable
				}
				return fail(action, code, "%s", be.Message)
			}
			return fail(action, CodeInternal, "%v", err)
		}
		return ok(action, data)
	}}, nil
}

// browserInput reads den-browser's flags into the action's JSON
// object: --name VALUE (or --name=VALUE; dashes in a name are
// underscores), --json OBJECT for several at once, "-" as a value to
// read standard input, and one lone argument for the action's
// positional parameter.
func (s *Service) browserInput(action string, c *Call) (map[string]any, *Result) {
	params := s.Browser.Params()
	input := map[string]any{"action": action}
	stdinUsed := false
	value := func(name, v string) (string, *Result) {
		if v != "-" || params[name] == ParamBool {
			return v, nil
		}
		if stdinUsed || c.Stdin == nil {
			return "", invalid(action, "--%s -: standard input can give one value only", name)
		}
		stdinUsed = true
		b, err := readAll(c.Stdin, maxBrowserInput)
		if err != nil {
			return "", invalid(action, "%v", err)
		}
		return strings.TrimSuffix(string(b), "\n"), nil
	}
	set := func(name, v string) *Result {
		kind, known := params[name]
		if !known || name == "action" {
			return invalid(action, "unknown flag --%s", strings.ReplaceAll(name, "_", "-"))
		}
		if _, given := input[name]; given && kind != ParamStrings {
			return invalid(action, "--%s is given twice", strings.ReplaceAll(name, "_", "-"))
		}
		v, bad := value(name, v)
		if bad != nil {
			return bad
		}
		if strings.ContainsRune(v, 0) {
			return invalid(action, "--%s holds a NUL byte", name)
		}
		switch kind {
		case ParamString:
			input[name] = v
		case ParamInt:
			n, err := strconv.Atoi(v)
			if err != nil {
				return invalid(action, "--%s %q: want a whole number", name, v)
			}
			input[name] = n
		case ParamNumber:
			f, err := strconv.ParseFloat(v, 64)
			if err != nil {
				return invalid(action, "--%s %q: want a number", name, v)
			}
			input[name] = f
		case ParamBool:
			b, err := strconv.ParseBool(v)
			if err != nil {
				return invalid(action, "--%s=%q: want true or false", name, v)
			}
			input[name] = b
		case ParamStrings:
			list, _ := input[name].([]string)
			input[name] = append(list, v)
		case ParamJSON:
			var j any
			if err := json.Unmarshal([]byte(v), &j); err != nil {
				return invalid(action, "--%s: not JSON: %v", name, err)
			}
			input[name] = j
		}
		return nil
	}
	args := c.Args[1:]
	var lone []string
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == "--" {
			lone = append(lone, args[i+1:]...)
			break
		}
		if !strings.HasPrefix(a, "--") || a == "-" {
			lone = append(lone, a)
			continue
		}
		name, v, hasValue := strings.Cut(strings.TrimPrefix(a, "--"), "=")
		name = strings.ReplaceAll(name, "-", "_")
		if name == "json" {
			if !hasValue {
				if i+1 >= len(args) {
					return nil, invalid(action, "--json needs a JSON object")
				}
				i++
				v = args[i]
			}
			v, bad := value("json", v)
			if bad != nil {
				return nil, bad
			}
			var obj map[string]json.RawMessage
			if err := json.Unmarshal([]byte(v), &obj); err != nil || obj == nil {
				return nil, invalid(action, "--json: want one JSON object, such as '{\"index\": 3}'")
			}
			for k, raw := range obj {
				if _, known := params[k]; !known {
					return nil, invalid(action, "--json: unknown parameter %q", k)
				}
				if _, given := input[k]; given {
					return nil, invalid(action, "%s is given twice", k)
				}
				var j any
				json.Unmarshal(raw, &j)
				input[k] = j
			}
			continue
		}
		if params[name] == ParamBool && !hasValue {
			v = "true"
		} else if !hasValue {
			if i+1 >= len(args) {
				return nil, invalid(action, "--%s needs a value", strings.ReplaceAll(name, "_", "-"))
			}
			i++
			v = args[i]
		}
		if bad := set(name, v); bad != nil {
			return nil, bad
		}
	}
	switch pos := s.Browser.Positional(action); {
	case len(lone) == 0:
	case len(lone) > 1 || pos == "":
		return nil, invalid(action, "unexpected argument %q: give parameters as --name VALUE", lone[len(lone)-1])
	default:
		if bad := set(pos, lone[0]); bad != nil {
			return nil, bad
		}
	}
	return input, nil
}

func clipText(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return fmt.Sprintf("%s… (%d more bytes)", s[:n], len(s)-n)
}
