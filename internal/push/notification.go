package push

import (
	"bytes"
	"encoding/json"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"den.dev/den/internal/webpush"
)

// Kinds of notification, as the payload's "kind" says.
const (
	KindNotify   = "notify"
	KindApproval = "approval"
	KindDone     = "done"
	KindError    = "error"
	KindTest     = "test"
	// KindSchedule is a scheduled job's message: its answer, its
	// failure, or its missed runs.
	KindSchedule = "schedule"
)

// Limits of a notification's texts, in characters, before the payload
// is fit to a push message.
const (
	maxTitle    = 120
	maxBody     = 1000
	maxDoneText = 200
)

// Notification is one notification for the subscribed browsers: what
// they show, and how the push services should deliver it.
type Notification struct {
	Title   string
	Body    string
	Tag     string // a notification with the same tag replaces this one on the device
	Session string // "" for none
	Kind    string

	Urgency webpush.Urgency
	TTL     time.Duration
	Topic   string // replaces an undelivered message with the same topic
}

// payload is the JSON the service worker reads.
type payload struct {
	Title   string `json:"title"`
	Body    string `json:"body"`
	Tag     string `json:"tag"`
	Session string `json:"session_id"`
	URL     string `json:"url"`
	Kind    string `json:"kind"`
}

// Payload is n as the JSON object the service worker reads, cut to fit
// webpush.MaxPayload: the body, then the title, are shortened (ending
// with "…") until it fits.
func (n Notification) Payload() []byte {
	p := payload{Title: cut(oneLine(n.Title), maxTitle), Body: cut(clean(n.Body), maxBody), Tag: n.Tag, Session: n.Session, URL: "/", Kind: n.Kind}
	if n.Session != "" {
		p.URL = "/#" + n.Session
	}
	for {
		b := marshal(p)
		if len(b) <= webpush.MaxPayload {
			return b
		}
		// Each pass cuts what is over, counted in bytes, from the body
		// (a character is at least one byte, and escaping only adds),
		// then from the title.
		over := len(b) - webpush.MaxPayload
		if n := utf8.RuneCountInString(p.Body); n > 1 {
			p.Body = cut(p.Body, max(n-over-1, 1))
			continue
		}
		p.Body = ""
		if utf8.RuneCountInString(p.Title) <= 1 {
			return b // only the tag and session are left, and they are short
		}
		p.Title = cut(p.Title, max(utf8.RuneCountInString(p.Title)-over-1, 1))
	}
}

func marshal(p payload) []byte {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false) // the page shows text, not HTML; escapes would only take room
	enc.Encode(p)
	return bytes.TrimSuffix(b.Bytes(), []byte("\n"))
}

// cut shortens s to at most n characters, ending with "…" when it cut.
func cut(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	if n <= 1 {
		return "…"
	}
	r := []rune(s)[:n-1]
	return strings.TrimRightFunc(string(r), unicode.IsSpace) + "…"
}

// oneLine is s with its runs of white space made one space, and
// without control characters.
func oneLine(s string) string {
	return strings.Join(strings.Fields(clean(s)), " ")
}

// clean is valid UTF-8 without control characters but newlines and
// tabs, trimmed.
func clean(s string) string {
	s = strings.ToValidUTF8(s, "�")
	s = strings.Map(func(r rune) rune {
		if r == '\n' || r == '\t' {
			return r
		}
		if unicode.IsControl(r) || unicode.Is(unicode.Cf, r) {
			return -1
		}
		return r
	}, s)
	return strings.TrimSpace(s)
}
