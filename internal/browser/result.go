package browser

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
)

// Code says how an action went. The model sees every outcome in
// Result.Text; Code lets den-browser choose its exit code and faces
// their colour.
type Code string

const (
	Done        Code = ""
	Invalid     Code = "invalid_args" // the parameters are wrong
	NotFound    Code = "not_found"    // nothing matched the index or selector
	Stale       Code = "stale"        // the element changed since the snapshot; Snapshot is fresh
	Timeout     Code = "timeout"      // the action ran out of time
	NavFailed   Code = "navigation_failed"
	ScriptError Code = "script_error"
	Unavailable Code = "unavailable"  // the browser cannot run
	UserControl Code = "user_control" // the user controls, or operated, the browser; the action was not done
	Failed      Code = "failed"       // anything else the action could not do
)

// Result is what an action did, or why not.
type Result struct {
	Action string
	Code   Code
	// Message says what happened, in words for the model.
	Message string
	// Notes are other things that happened since the session's last
	// action: a restarted tab or browser, a dialog den answered, a tab
	// closed for being idle, the user's operating the page.
	Notes []string

	URL, Title string
	Tab        int // the current tab

	Snapshot  *Snapshot
	Tabs      []TabInfo
	Items     []string // scroll_and_collect
	Readable  string   // get_readable: Markdown
	Value     string   // execute_js: the JSON value returned
	Image     []byte   // screenshot: PNG
	File      string   // screenshot, pdf: guest path of the saved file
	Downloads []Download

	// Cookies are get_cookies's, values included, for the caller to
	// write to an env file; Text names them without values. Never put
	// them in the model's context.
	Cookies []Cookie `json:"-"`
}

// OK reports whether the action was done.
func (r *Result) OK() bool { return r.Code == Done }

// Snapshot is a page described for a model.
type Snapshot struct {
	URL   string `json:"url"`
	Title string `json:"title"`
	// Page of Pages: long pages are cut at line boundaries near
	// Options.SnapshotSize characters.
	Page  int `json:"page"`
	Pages int `json:"pages"`
	// Elements is the number of indexed elements in the whole
	// snapshot.
	Elements int `json:"elements"`
	// Text holds this page's lines.
	Text string `json:"text"`
}

// TabInfo is one of a session's tabs.
type TabInfo struct {
	ID      int    `json:"id"`
	URL     string `json:"url"`
	Title   string `json:"title"`
	Current bool   `json:"current"`
}

// Download is a file the page downloaded, now in the session's
// workspace.
type Download struct {
	Name  string `json:"name"` // as saved
	Path  string `json:"path"` // guest path: /workspace/downloads/NAME
	URL   string `json:"url"`
	Bytes int64  `json:"bytes"`
}

// Cookie is a browser cookie. Its JSON form also accepts the names
// browser exports use (httpOnly, sameSite, expirationDate).
type Cookie struct {
	Name     string  `json:"name"`
	Value    string  `json:"value"`
	Domain   string  `json:"domain,omitempty"`
	Path     string  `json:"path,omitempty"`
	Secure   bool    `json:"secure,omitempty"`
	HTTPOnly bool    `json:"http_only,omitempty"`
	SameSite string  `json:"same_site,omitempty"` // Strict, Lax or None
	Expires  float64 `json:"expires,omitempty"`   // Unix seconds; 0: a session cookie
}

// UnmarshalJSON reads a cookie in den's form or a browser export's.
func (c *Cookie) UnmarshalJSON(b []byte) error {
	type plain Cookie
	var v struct {
		plain
		HTTPOnly2       *bool    `json:"httpOnly"`
		SameSite2       string   `json:"sameSite"`
		ExpirationDate  *float64 `json:"expirationDate"`
		ExpiresEncoding *float64 `json:"expiry"`
	}
	if err := json.Unmarshal(b, &v); err != nil {
		return err
	}
	*c = Cookie(v.plain)
	if v.HTTPOnly2 != nil {
		c.HTTPOnly = *v.HTTPOnly2
	}
	if c.SameSite == "" {
		c.SameSite = v.SameSite2
	}
	if c.Expires == 0 && v.ExpirationDate != nil {
		c.Expires = *v.ExpirationDate
	}
	if c.Expires == 0 && v.ExpiresEncoding != nil {
		c.Expires = *v.ExpiresEncoding
	}
	return nil
}

// CookieEnv renders cookies as a shell env file: one COOKIE_NAME=value
// line each (names upper-cased, other characters than letters and
// digits as _) and COOKIE_HEADER with all of them for a Cookie header.
// Values are single-quoted.
func CookieEnv(cookies []Cookie) []byte {
	var b strings.Builder
	var header []string
	seen := map[string]bool{}
	for _, c := range cookies {
		name := envName(c.Name)
		if !seen[name] {
			seen[name] = true
			fmt.Fprintf(&b, "export COOKIE_%s=%s\n", name, shellQuote(c.Value))
		}
		header = append(header, c.Name+"="+c.Value)
	}
	fmt.Fprintf(&b, "export COOKIE_HEADER=%s\n", shellQuote(strings.Join(header, "; ")))
	return []byte(b.String())
}

func envName(s string) string {
	var b strings.Builder
	for _, r := range strings.ToUpper(s) {
		if (r >= 'A' && r <= 'Z') || (r >= '0' && r <= '9') {
			b.WriteRune(r)
		} else {
			b.WriteByte('_')
		}
	}
	return b.String()
}

func shellQuote(s string) string {
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// Text renders the result for the model: what happened, the notes, and
// what the action returned (a snapshot, items, Markdown, a value).
// Cookie values and image bytes are never in it.
func (r *Result) Text() string {
	var b strings.Builder
	line := func(s string) {
		if s == "" {
			return
		}
		b.WriteString(s)
		if !strings.HasSuffix(s, "\n") {
			b.WriteByte('\n')
		}
	}
	for _, n := range r.Notes {
		line("Note: " + n)
	}
	line(r.Message)
	if r.Snapshot == nil && r.URL != "" {
		line("Page: " + pageLine(r.Title, r.URL))
	}
	for _, t := range r.Tabs {
		cur := " "
		if t.Current {
			cur = "*"
		}
		line(fmt.Sprintf("%s tab %d: %s", cur, t.ID, pageLine(t.Title, t.URL)))
	}
	if len(r.Items) > 0 {
		for i, it := range r.Items {
			line(strconv.Itoa(i+1) + ". " + it)
		}
	}
	if r.Value != "" {
		line(r.Value)
	}
	if r.Readable != "" {
		line(r.Readable)
	}
	if len(r.Cookies) > 0 {
		var names []string
		for _, c := range r.Cookies {
			names = append(names, fmt.Sprintf("%s (%s%s)", c.Name, c.Domain, c.Path))
		}
		line("Cookies: " + strings.Join(names, ", "))
	}
	for _, d := range r.Downloads {
		line(fmt.Sprintf("Downloaded %s (%s) to %s: it is saved, do not download it again.", d.URL, sizeText(d.Bytes), d.Path))
	}
	if s := r.Snapshot; s != nil {
		line("Page: " + pageLine(s.Title, s.URL))
		line(s.Text)
		if s.Pages > 1 {
			more := ""
			if s.Page < s.Pages {
				more = fmt.Sprintf("; snapshot with page=%d shows more", s.Page+1)
			}
			line(fmt.Sprintf("(page %d of %d of the snapshot, %d elements in all%s)", s.Page, s.Pages, s.Elements, more))
		}
	}
	return strings.TrimRight(b.String(), "\n")
}

func pageLine(title, url string) string {
	if title == "" {
		return url
	}
	return strconv.Quote(title) + " " + url
}

func sizeText(n int64) string {
	switch {
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MB", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%.1f KB", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%d bytes", n)
}
