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
	Session Scope = "session" // this command, action and subject, for the rest of the session
	Always  Scope = "always"  // this command, action and subject for the agent, in every session
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
	Subject string    `json:"subject,omitempty"` // what the call acts on: model ref, URL, key, … (redacted)
	Detail  string    `json:"detail,omitempty"`  // the exact effect, such as `agents.default.model: "a" → "b"` (redacted)
	Args    []string  `json:"args"`              // secrets redacted, whole
	Scopes  []Scope   `json:"scopes"`            // the scopes an answer may take
	Covers  string    `json:"covers"`            // what an answer with scope session or always covers, in words
	Expires time.Time `json:"expires"`           // unanswered by then, the call is denied
}

// Question is the request in one line for a person, such as
// `agent "default" wants to run: den-config set agents.default.model x
// (agents.default.model: "a" → "x")`, or, for a call of an MCP client,
// `MCP client claude-code wants, with agent default: exec 'make test'`. Every character that could change
// how the line shows is escaped, and long arguments are cut saying how
// much is left (den approvals show ID prints all of it).
func (r *ApprovalRequest) Question() string {
	var q string
	if r.Command == CmdEgress && len(r.Args) == 1 {
		return fmt.Sprintf("agent %s wants to connect to %s", ShowArg(r.Agent, 0), ShowArg(r.Args[0], MaxShownArg))
	}
	if r.Command == CmdMCPClient && len(r.Args) >= 2 {
		// Not the agent: another program, through den's MCP server. Its
		// args are the client, the tool, then the tool's own.
		q = fmt.Sprintf("MCP client %s wants, with agent %s: %s", ShowArg(r.Args[0], MaxShownArg), ShowArg(r.Agent, 0), CallLine(r.Args[1], r.Args[2:], MaxShownArg))
	} else {
		q = fmt.Sprintf("agent %s wants to run: %s", ShowArg(r.Agent, 0), CallLine(r.Command, r.Args, MaxShownArg))
	}
	if r.Detail != "" {
		q += " (" + Printable(r.Detail) + ")"
	}
	return q
}

// covers says what a session or always answer to r will cover.
func (r *ApprovalRequest) covers() string {
	if r.Command == CmdEgress {
		return Printable("connections to " + ShowArg(r.Subject, MaxShownArg) + " (any port)")
	}
	what := r.Command
	if r.Action != "" {
		what += " " + r.Action
	}
	if r.Subject != "" {
		what += " of " + ShowArg(r.Subject, MaxShownArg)
	} else {
		what += " (any arguments)"
	}
	return Printable(what)
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
