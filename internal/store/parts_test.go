package store

import (
	"context"
	"encoding/json"
	"testing"

	"den.dev/den/internal/llm"
	"github.com/google/go-cmp/cmp"
)

func TestPartsRoundTrip(t *testing.T) {
	png := []byte("\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\xff\xfe")
	tests := []struct {
		name string
		part llm.Part
	}{
		{"text", &llm.Text{Text: "hello, world"}},
		{"empty text", &llm.Text{}},
		{"text with html and separators", &llm.Text{Text: "<b>&amp;</b>\u2028\u2029\x00"}},
		{"text not utf-8", &llm.Text{Text: "caf\xe9 \xff"}},
		{"image", &llm.Image{MediaType: "image/png", Data: png}},
		{"image nil data", &llm.Image{MediaType: "image/jpeg"}},
		{"image empty data", &llm.Image{MediaType: "image/gif", Data: []byte{}}},
		{"thinking", &llm.Thinking{Text: "let me see", Signature: "sig==", API: "anthropic"}},
		{"thinking redacted", &llm.Thinking{Redacted: true, Opaque: json.RawMessage(`{"data":"ZW5j"}`), API: "anthropic"}},
		{"thinking opaque spaced", &llm.Thinking{Opaque: json.RawMessage(" {\n  \"id\": \"rs_1\",\n  \"encrypted_content\": \"x\"\n}\n"), API: "openai-responses"}},
		{"thinking opaque string", &llm.Thinking{Text: "r", Opaque: json.RawMessage(`"reasoning echo"`), API: "openai"}},
		{"tool call", &llm.ToolCall{ID: "call_1", Name: "shell", Input: json.RawMessage(`{"command":"ls -l","timeout":30}`), Signature: "thought-sig", API: "gemini"}},
		{"tool call invalid json", &llm.ToolCall{ID: "call_2", Name: "shell", Input: json.RawMessage(`{"command": "ls`)}},
		{"tool call spaced json", &llm.ToolCall{ID: "call_3", Name: "read", Input: json.RawMessage(`{ "path" : "a.txt" }`)}},
		{"tool call html json", &llm.ToolCall{ID: "call_4", Name: "web", Input: json.RawMessage(`{"q":"<a&b>"}`)}},
		{"tool call null", &llm.ToolCall{ID: "call_5", Name: "noop", Input: json.RawMessage(`null`)}},
		{"tool call empty input", &llm.ToolCall{ID: "call_6", Name: "noop", Input: json.RawMessage{}}},
		{"tool call nil input", &llm.ToolCall{ID: "call_7", Name: "noop"}},
		{"tool call not utf-8", &llm.ToolCall{ID: "call_8", Name: "write", Input: json.RawMessage("{\"s\":\"\xff\"}")}},
		{"tool result", &llm.ToolResult{CallID: "call_1", Name: "shell", Content: []llm.Part{
			&llm.Text{Text: "total 0\n"}, &llm.Image{MediaType: "image/png", Data: png}}}},
		{"tool result error", &llm.ToolResult{CallID: "call_2", Name: "shell", IsError: true,
			Content: []llm.Part{&llm.Text{Text: "invalid arguments"}}}},
		{"tool result nil content", &llm.ToolResult{CallID: "call_3", Name: "read"}},
		{"tool result empty content", &llm.ToolResult{CallID: "call_4", Content: []llm.Part{}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			enc, err := encodeParts([]llm.Part{tt.part})
			if err != nil {
				t.Fatal(err)
			}
			if !json.Valid([]byte(enc)) {
				t.Fatalf("encoding is not valid JSON: %s", enc)
			}
			got, err := decodeParts(enc)
			if err != nil {
				t.Fatalf("decode %s: %v", enc, err)
			}
			if diff := cmp.Diff([]llm.Part{tt.part}, got); diff != "" {
				t.Errorf("round trip through %s (-want +got):\n%s", enc, diff)
			}
		})
	}

	// And all of them in one message each through the database.
	s := openTemp(t)
	ctx := context.Background()
	sess := newSession(t, s, "a")
	var want []llm.Message
	for i, tt := range tests {
		role := llm.User
		if i%2 == 1 {
			role = llm.Assistant
		}
		want = append(want, llm.Message{Role: role, Parts: []llm.Part{tt.part}})
	}
	mustAppend(t, s, sess.ID, want...)
	got, err := s.History(ctx, sess.ID)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("History (-want +got):\n%s", diff)
	}
}

func TestValidInputIsQueryableJSON(t *testing.T) {
	s := openTemp(t)
	sess := newSession(t, s, "a")
	ids := mustAppend(t, s, sess.ID, llm.Message{Role: llm.Assistant, Parts: []llm.Part{
		&llm.ToolCall{ID: "c", Name: "shell", Input: json.RawMessage(`{"command":"ls"}`)},
		&llm.ToolCall{ID: "d", Name: "shell", Input: json.RawMessage(`{"command": "ls`)},
	}})
	var cmd, raw string
	err := s.db.QueryRow(`SELECT parts ->> '$[0].input.command', parts ->> '$[1].input_string' FROM messages WHERE id = ?`,
		ids[0]).Scan(&cmd, &raw)
	if err != nil {
		t.Fatal(err)
	}
	if cmd != "ls" || raw != `{"command": "ls` {
		t.Errorf("got command %q and raw input %q", cmd, raw)
	}
}

func TestEncodeRejectsNilPart(t *testing.T) {
	s := openTemp(t)
	sess := newSession(t, s, "a")
	for _, p := range []llm.Part{nil, (*llm.Text)(nil), (*llm.ToolResult)(nil)} {
		_, err := s.Append(context.Background(), sess.ID, llm.Message{Role: llm.User, Parts: []llm.Part{p}})
		if err == nil {
			t.Errorf("Append with part %#v: no error", p)
		}
	}
	if n := count(t, s, `SELECT count(*) FROM messages`); n != 0 {
		t.Errorf("%d messages stored", n)
	}
}
