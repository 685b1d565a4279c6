package permission

import (
	"fmt"
	"strings"
	"time"
)

// Event is what the gate reports to the faces: *ApprovalRequest or
// *ApprovalResolved. On the wire they are "approval_request" and
// "approval_resolved" (see Type); the JSON tags give their data.
type Event interface {
	// Type is the event's name on the wire.
	Type() string
	isEvent()
}

// Scope is how far an answer to an approval reaches.
type Scope string

// The scopes.
const (
	Once    Scope = "once"    // this call only
	Session Scope = "session" // this command and action, for the rest of the session
	Always  Scope = "always"  // this command and action for the agent, in every session
)

// ParseScope parses "once", "session" or "always"; "" is Once.
func ParseScope(s string) (Scope, error) {
	switch sc := Scope(strings.ToLower(strings.TrimSpace(s))); sc {
	case "":
		return Once, nil
	case Once, Session, Always:
		return sc, nil
	}
	return "", fmt.Errorf("scope %q: want once, session or always", s)
}

// ApprovalRequest asks the faces for a person's answer. Any face may
// answer it, as may `den approve ID` or `den deny ID` from another
// process; the first answer counts.
type ApprovalRequest struct {
	ID      string    `json:"id"`
	Agent   string    `json:"agent"`
	Session string    `json:"session"`
	Command string    `json:"command"`
	Action  string    `json:"action,omitempty"`
	Subject string    `json:"subject,omitempty"` // model ref, URL, … (redacted)
	Args    []string  `json:"args"`              // secrets redacted
	Scopes  []Scope   `json:"scopes"`            // the scopes an answer may take
	Expires time.Time `json:"expires"`           // unanswered by then, the call is denied
}

// Question is the request in one line for a person, such as
// `agent "default" wants to run: den-config set model x`.
func (r *ApprovalRequest) Question() string {
	line := strings.TrimSpace(r.Command + " " + strings.Join(r.Args, " "))
	return fmt.Sprintf("agent %q wants to run: %s", r.Agent, line)
}

// ApprovalResolved says an approval request got its answer (from any
// face, another process, the timeout or a cancellation): faces still
// showing it should close it.
type ApprovalResolved struct {
	ID        string `json:"id"`
	Approved  bool   `json:"approved"`
	Scope     Scope  `json:"scope,omitempty"`
	DecidedBy By     `json:"decided_by"`
}

// Type implements Event.
func (*ApprovalRequest) Type() string { return "approval_request" }

// Type implements Event.
func (*ApprovalResolved) Type() string { return "approval_resolved" }

func (*ApprovalRequest) isEvent()  {}
func (*ApprovalResolved) isEvent() {}
