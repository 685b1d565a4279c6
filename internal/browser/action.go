package browser

import (
	"encoding/json"
	"fmt"
	"strings"
	"time"
)

// Action is one thing to do in a session's browser. Name says which;
// the other fields are its parameters (see Actions for which apply).
// The JSON form is what the model's tool and den-browser send.
type Action struct {
	Name string `json:"action"`

	// Target of click, type, select, hover, press, scroll, upload,
	// wait_for and screenshot: Index (N of the latest snapshot) or
	// Selector (CSS; searched in the page, then in open shadow roots
	// and same-origin frames). At most one.
	Index    int    `json:"index,omitempty"`
	Selector string `json:"selector,omitempty"`

	URL   string   `json:"url,omitempty"`   // navigate, open_tab
	Text  string   `json:"text,omitempty"`  // type; wait_for (text to appear)
	Key   string   `json:"key,omitempty"`   // press: "Enter", "Control+A", "a"
	Value []string `json:"value,omitempty"` // select: option values or labels

	// Submit presses Enter after type.
	Submit bool `json:"submit,omitempty"`
	// Append keeps the field's text (type replaces it by default).
	Append bool `json:"append,omitempty"`

	Direction string `json:"direction,omitempty"` // scroll: up, down, left, right
	Amount    int    `json:"amount,omitempty"`    // scroll: CSS pixels (default: most of the viewport)

	ItemSelector string `json:"item_selector,omitempty"` // scroll_and_collect
	MaxScrolls   int    `json:"max_scrolls,omitempty"`   // scroll_and_collect: default 10, at most 20
	MaxItems     int    `json:"max_items,omitempty"`     // scroll_and_collect: default 200

	Gone    bool `json:"gone,omitempty"`    // wait_for: wait until the text or element is gone
	Settled bool `json:"settled,omitempty"` // wait_for: wait until the page settles

	Page   int `json:"page,omitempty"`   // snapshot: page of the latest snapshot (1 is fresh)
	Offset int `json:"offset,omitempty"` // get_readable: characters to skip

	FullPage bool `json:"full_page,omitempty"` // screenshot

	Tab int `json:"tab,omitempty"` // switch_tab, close_tab

	// Path is upload's file: its path in the computer when Env.Open is
	// set, else a host path the caller checked.
	Path string `json:"path,omitempty"`

	Cookies  []Cookie `json:"cookies,omitempty"`  // set_cookies
	Keywords []string `json:"keywords,omitempty"` // get_cookies: names containing any of them
	All      bool     `json:"all,omitempty"`      // get_cookies: every site's, not the page's

	Script string `json:"script,omitempty"` // execute_js: body of an async function

	Width  int  `json:"width,omitempty"`  // set_viewport
	Height int  `json:"height,omitempty"` // set_viewport
	Mobile bool `json:"mobile,omitempty"` // set_viewport
	Reset  bool `json:"reset,omitempty"`  // set_viewport: back to the default

	// Dialog answers the confirm and prompt dialogs the page shows
	// during the action: "accept", or "dismiss" (the default). Alerts
	// are always accepted.
	Dialog     string `json:"dialog,omitempty"`
	PromptText string `json:"prompt_text,omitempty"`

	// Timeout bounds the action (default Options.Timeout, at most
	// MaxTimeout). In JSON, seconds.
	Timeout time.Duration `json:"-"`
}

// UnmarshalJSON reads an Action, with timeout in seconds.
func (a *Action) UnmarshalJSON(b []byte) error {
	type plain Action
	var v struct {
		plain
		Timeout float64 `json:"timeout,omitempty"`
	}
	if err := json.Unmarshal(b, &v); err != nil {
		return err
	}
	*a = Action(v.plain)
	a.Timeout = time.Duration(v.Timeout * float64(time.Second))
	return nil
}

// MarshalJSON writes an Action, with timeout in seconds.
func (a Action) MarshalJSON() ([]byte, error) {
	type plain Action
	return json.Marshal(struct {
		plain
		Timeout float64 `json:"timeout,omitempty"`
	}{plain(a), a.Timeout.Seconds()})
}

// ActionInfo describes an action for the model's tool and den-browser's
// help.
type ActionInfo struct {
	Name    string
	Summary string
	// Params names the Action fields (by their JSON names) the action
	// reads; Required those it needs.
	Params, Required []string
}

// Actions lists every action, in the order a help text shows them.
func Actions() []ActionInfo {
	target := []string{"index", "selector"}
	return []ActionInfo{
		{"navigate", "open a URL (http, https, data or den://) in the current tab; returns its title, URL and a snapshot", []string{"url", "timeout"}, []string{"url"}},
		{"snapshot", "describe the page: interactive elements as [N] role \"name\" with their state, and the text around them; page 2 and on page through the latest snapshot", []string{"page"}, nil},
		{"click", "click an element", append(target, "timeout"), nil},
		{"type", "type text into an element (replacing its text unless append), optionally pressing Enter after", append(target, "text", "append", "submit", "timeout"), []string{"text"}},
		{"select", "choose options of a <select> by value or label", append(target, "value"), []string{"value"}},
		{"hover", "move the mouse over an element", target, nil},
		{"press", "press a key or a combination (Enter, Escape, Tab, ArrowDown, Control+A) on the focused element, or on the target", append(target, "key"), []string{"key"}},
		{"scroll", "scroll the page (or the element under the target) up, down, left or right by amount pixels, or scroll the target into view", append(target, "direction", "amount"), nil},
		{"scroll_and_collect", "scroll an infinite feed and gather its unique items (item_selector, or the page's repeated items)", []string{"item_selector", "max_scrolls", "max_items", "timeout"}, nil},
		{"wait_for", "wait until text or an element appears (or is gone), or the page settles", append(target, "text", "gone", "settled", "timeout"), nil},
		{"screenshot", "capture the visible page, the full page, or an element, as PNG", append(target, "full_page"), nil},
		{"get_readable", "the page's main content as Markdown", []string{"offset"}, nil},
		{"back", "go back in the tab's history", []string{"timeout"}, nil},
		{"forward", "go forward in the tab's history", []string{"timeout"}, nil},
		{"reload", "reload the page", []string{"timeout"}, nil},
		{"tabs", "list the session's tabs", nil, nil},
		{"open_tab", "open a new tab, optionally at a URL, and make it current", []string{"url", "timeout"}, nil},
		{"switch_tab", "make a tab current", []string{"tab"}, []string{"tab"}},
		{"close_tab", "close a tab (the current one by default)", []string{"tab"}, nil},
		{"upload", "give a file to a file input (or to the file chooser the target opens)", append(target, "path"), []string{"path"}},
		{"get_cookies", "the names of the page's cookies (or every site's); their values go to the caller, never in the text", []string{"keywords", "all"}, nil},
		{"set_cookies", "set cookies (domain defaults to the page's host, path to /)", []string{"cookies"}, []string{"cookies"}},
		{"execute_js", "run JavaScript in the page (the body of an async function; return a JSON value)", []string{"script", "timeout"}, []string{"script"}},
		{"set_viewport", "set the current tab's viewport size (or reset it)", []string{"width", "height", "mobile", "reset"}, nil},
		{"pdf", "print the page to PDF", nil, nil},
	}
}

func actionInfo(name string) (ActionInfo, bool) {
	for _, a := range Actions() {
		if a.Name == name {
			return a, true
		}
	}
	return ActionInfo{}, false
}

// check reports what is wrong with a, in words for the model.
func (a *Action) check() string {
	info, ok := actionInfo(a.Name)
	if !ok {
		var names []string
		for _, a := range Actions() {
			names = append(names, a.Name)
		}
		return fmt.Sprintf("unknown action %q: use one of %s", a.Name, strings.Join(names, ", "))
	}
	has := map[string]bool{
		"url": a.URL != "", "text": a.Text != "", "key": a.Key != "", "value": len(a.Value) > 0,
		"path": a.Path != "", "cookies": len(a.Cookies) > 0, "script": a.Script != "", "tab": a.Tab != 0,
	}
	for _, r := range info.Required {
		if present, known := has[r]; known && !present {
			return fmt.Sprintf("%s needs %s", a.Name, r)
		}
	}
	if a.Index != 0 && a.Selector != "" {
		return "give index or selector, not both"
	}
	if a.Index < 0 {
		return "index must be positive"
	}
	if a.Timeout < 0 {
		return "timeout must be positive"
	}
	if a.Dialog != "" && a.Dialog != "accept" && a.Dialog != "dismiss" {
		return "dialog must be accept or dismiss"
	}
	switch a.Name {
	case "scroll":
		switch a.Direction {
		case "", "up", "down", "left", "right":
		default:
			return fmt.Sprintf("direction %q: use up, down, left or right", a.Direction)
		}
		if a.Amount < 0 {
			return "amount must be positive"
		}
	case "scroll_and_collect":
		if a.MaxScrolls < 0 || a.MaxScrolls > 20 {
			return "max_scrolls must be between 1 and 20"
		}
	case "wait_for":
		n := 0
		for _, b := range []bool{a.Text != "", a.Index != 0 || a.Selector != "", a.Settled} {
			if b {
				n++
			}
		}
		if n != 1 {
			return "wait_for needs one of text, index, selector or settled"
		}
	case "set_viewport":
		if !a.Reset && (a.Width < 100 || a.Width > 4096 || a.Height < 100 || a.Height > 8192) {
			return "set_viewport needs width (100-4096) and height (100-8192), or reset"
		}
	case "snapshot":
		if a.Page < 0 {
			return "page must be positive"
		}
	case "get_readable":
		if a.Offset < 0 {
			return "offset must be positive"
		}
	}
	return ""
}
