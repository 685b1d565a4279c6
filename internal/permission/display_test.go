package permission

import (
	"strings"
	"testing"
	"time"
	"unicode/utf8"
)

func TestPrintable(t *testing.T) {
	tests := []struct{ in, want string }{
		{"plain text", "plain text"},
		{"über 日本", "über 日本"},
		{"a\x1b[2K\rharmless", `a\x1b[2K\rharmless`},
		{"line\nnext", `line\nnext`},
		{"tab\there", `tab\there`},
		{"del\x7f", `del\x7f`},
		{"c1\u009b31m", `c1\u009b31m`},
		{"rtl \u202eevil", `rtl \u202eevil`},
		{"zero\u200bwidth", `zero\u200bwidth`},
		{"sep\u2028x", `sep\u2028x`},
		{"bad \xff byte", `bad \xff byte`},
		{`back\x1b`, `back\\x1b`},
	}
	for _, tt := range tests {
		if got := Printable(tt.in); got != tt.want {
			t.Errorf("Printable(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

// TestQuestionCannotBeRedrawn: what the computer puts in arguments can
// neither hide the real call behind a harmless-looking one nor cut it
// silently.
func TestQuestionCannotBeRedrawn(t *testing.T) {
	evil := "x\r\x1b[2Kagent \"default\" wants to run: den-notify hello"
	long := strings.Repeat("A", 5000)
	r := &ApprovalRequest{ID: "id1", Agent: "default", Command: "den-config", Action: "set",
		Args: []string{"set", "agents.default.trust", evil, long}, Detail: "agents.default.trust: \"trusted\" → \"full\"\x1b[8m", Expires: time.Now()}
	q := r.Question()
	for _, c := range q {
		if c < 0x20 || c == 0x7f || (c >= 0x80 && c < 0xa0) {
			t.Fatalf("question holds control character %U: %q", c, q)
		}
	}
	if !utf8.ValidString(q) {
		t.Fatalf("invalid UTF-8: %q", q)
	}
	if !strings.Contains(q, `'x\r\x1b[2Kagent "default" wants to run: den-notify hello'`) {
		t.Errorf("the hostile argument is not shown quoted and escaped: %s", q)
	}
	if !strings.Contains(q, "…[4800 more bytes]") {
		t.Errorf("a long argument was cut without saying how much: %s", q[len(q)-100:])
	}
	if !strings.Contains(q, `agents.default.trust: "trusted" → "full"\x1b[8m`) {
		t.Errorf("detail missing or raw: %s", q)
	}
}

func TestCallLineQuotes(t *testing.T) {
	got := CallLine("den-model", []string{"run", "--model", "a b", "", "it's"}, 0)
	want := `den-model run --model 'a b' '' 'it'\''s'`
	if got != want {
		t.Errorf("CallLine = %s, want %s", got, want)
	}
}

// TestMCPClientQuestion: an MCP client's call is asked as that client's,
// not as the agent's, with the client's hostile name escaped too.
func TestMCPClientQuestion(t *testing.T) {
	r := &ApprovalRequest{ID: "id1", Agent: "default", Command: CmdMCPClient, Action: "exec", Subject: "claude-code",
		Args: []string{"claude-code", "exec", "make test"}}
	if got, want := r.Question(), "MCP client claude-code wants, with agent default: exec 'make test'"; got != want {
		t.Errorf("question %q, want %q", got, want)
	}
	r.Args[0] = "x\x1b[2Kagent default wants to run: den-notify"
	if q := r.Question(); !strings.Contains(q, `'x\x1b[2Kagent default wants to run: den-notify'`) {
		t.Errorf("the client's name is not shown escaped: %s", q)
	}
}
