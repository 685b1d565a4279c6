package push

import (
	"context"
	"encoding/json"
	"strconv"
	"time"

	"den.dev/den/internal/store"
	"den.dev/den/internal/webpush"
)

// Event types push reads.
const (
	typeNotify   = "notify"
	typeApproval = "approval_request"
	typeDone     = "done"
	typeStatus   = "status"
)

// Wanted reports whether Handle does anything with e: a filter for the
// subscription that feeds it.
func Wanted(e store.Event) bool {
	switch e.Type {
	case typeNotify, typeApproval, typeDone, typeStatus:
		return true
	}
	return false
}

const (
	// notifyTTL is how long a push service keeps a notification for a
	// device that is offline.
	notifyTTL = 24 * time.Hour
	// approvalTTL bounds an approval's: it is kept until the approval
	// expires, and no longer than this.
	approvalTTL = 24 * time.Hour
	// maxPendingDone bounds the done events remembered until their
	// session's status comes.
	maxPendingDone = 1000
)

// Handle turns e into a notification, if it is one, and queues it for
// every subscription, unless the user is using den in a browser right
// now. It does not wait for any push service.
func (s *Service) Handle(e store.Event) {
	n, ok := s.notification(e)
	if !ok {
		return
	}
	if s.o.InUse != nil && s.o.InUse() {
		s.o.Log.Debug("push: not sent, den is in use in a browser", "kind", n.Kind)
		return
	}
	s.Queue(n)
}

// notification is the notification e makes, if any; done events are
// kept until their session's status says how the turn ended.
func (s *Service) notification(e store.Event) (Notification, bool) {
	switch e.Type {
	case typeNotify:
		var d struct{ Title, Message string }
		if json.Unmarshal(e.Data, &d) != nil {
			return Notification{}, false
		}
		title := d.Title
		if title == "" {
			title = "den"
		}
		return Notification{Title: title, Body: d.Message, Tag: "notify-" + strconv.FormatInt(e.ID, 10), Session: e.Session,
			Kind: KindNotify, Urgency: webpush.Normal, TTL: notifyTTL}, true
	case typeApproval:
		var d struct {
			ID, Command, Question, Session string
			Expires                        time.Time
		}
		if json.Unmarshal(e.Data, &d) != nil || d.ID == "" {
			return Notification{}, false
		}
		body := d.Question
		if body == "" {
			body = d.Command
		}
		session := d.Session
		if session == "" {
			session = e.Session
		}
		ttl := approvalTTL
		if !d.Expires.IsZero() {
			ttl = min(max(time.Until(d.Expires), time.Minute), approvalTTL)
		}
		return Notification{Title: "den needs your approval", Body: body, Tag: "approval-" + d.ID, Session: session,
			Kind: KindApproval, Urgency: webpush.High, TTL: ttl}, true
	case typeDone:
		var d struct {
			StopReason string `json:"stop_reason"`
			Text       string `json:"text"`
		}
		if e.Session == "" || json.Unmarshal(e.Data, &d) != nil {
			return Notification{}, false
		}
		s.mu.Lock()
		if len(s.pendingDone) >= maxPendingDone {
			clear(s.pendingDone)
		}
		s.pendingDone[e.Session] = d.Text
		s.mu.Unlock()
		return Notification{}, false
	case typeStatus:
		var d struct{ Status, Detail string }
		if e.Session == "" || json.Unmarshal(e.Data, &d) != nil {
			return Notification{}, false
		}
		s.mu.Lock()
		text, ended := s.pendingDone[e.Session]
		switch d.Status {
		case "idle", "error", "interrupted":
			delete(s.pendingDone, e.Session)
		}
		s.mu.Unlock()
		n := Notification{Tag: "done-" + e.Session, Topic: topic("done-" + e.Session), Session: e.Session, Urgency: webpush.Normal, TTL: notifyTTL}
		switch {
		case d.Status == "idle" && ended:
			n.Kind, n.Title, n.Body = KindDone, s.sessionTitle(e.Session), cut(clean(text), maxDoneText)
			if n.Body == "" {
				n.Body = "The turn is over."
			}
			return n, true
		case d.Status == "error":
			n.Kind, n.Title, n.Body = KindError, "den stopped with an error", d.Detail
			return n, true
		}
	}
	return Notification{}, false
}

// sessionTitle is the session's title, or "den is done" when it has
// none (or it cannot be read).
func (s *Service) sessionTitle(id string) string {
	ctx, cancel := context.WithTimeout(s.ctx, 5*time.Second)
	defer cancel()
	sess, err := s.o.Store.GetSession(ctx, id)
	if err != nil || oneLine(sess.Title) == "" {
		return "den is done"
	}
	return sess.Title
}

// topic is t if it can be a Topic header (up to 32 base64url
// characters), else "" (no topic).
func topic(t string) string {
	if len(t) > 32 {
		return ""
	}
	for _, r := range t {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_') {
			return ""
		}
	}
	return t
}
