package clitest

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"mime/multipart"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"

	"den.dev/den/internal/llm/llmtest"
)

// raw calls the daemon with the token and returns the answer as it is.
func (p *daemonProc) raw(t *testing.T, method, path, contentType string, body io.Reader) (*http.Response, []byte) {
	t.Helper()
	req, _ := http.NewRequest(method, p.url+path, body)
	req.Header.Set("Authorization", "Bearer "+serveToken)
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp, b
}

// TestServeFiles: a file uploaded into the workspace is there for the
// agent's shell, what the shell writes can be listed and downloaded, a
// symbolic link the computer planted is refused, and an attachment
// named in a message reaches the model with the message (an image as
// an image).
func TestServeFiles(t *testing.T) {
	d := newDen(t)
	serveConfig(t, d, "")
	fake := llmtest.NewAnthropic(t,
		llmtest.Turn{Text: "Reading.", Calls: []llmtest.Call{sh("toolu_1",
			"cat /workspace/notes/todo.txt; echo made > /workspace/out.txt; ln -s /etc/shadow /workspace/escape")}},
		llmtest.Turn{Text: "Done."},
		llmtest.Turn{Text: "A red square."})
	p := startServe(t, d, fake)
	id := p.api(t, "POST", "/api/v1/sessions", map[string]any{"agent": "default"}, http.StatusCreated)["id"].(string)
	base := "/api/v1/sessions/" + id

	if resp, b := p.raw(t, "PUT", base+"/files/notes/todo.txt", "text/plain", strings.NewReader("buy milk\n")); resp.StatusCode/100 != 2 {
		t.Fatalf("PUT: %d %s", resp.StatusCode, b)
	}
	sent := p.api(t, "POST", base+"/messages", map[string]any{"text": "read my notes"}, http.StatusAccepted)
	waitIdle(t, p, id, sent["message_id"].(string))
	if reqs := fake.Requests(); len(reqs) < 2 || !bytes.Contains(reqs[1].Body, []byte("buy milk")) {
		t.Errorf("the shell did not read the uploaded file: %d requests", len(reqs))
	}

	resp, b := p.raw(t, "GET", base+"/files/", "", nil)
	var list struct {
		Path    string
		Entries []struct{ Name, Type, Target string }
	}
	if err := json.Unmarshal(b, &list); err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("listing: %d %s", resp.StatusCode, b)
	}
	kinds := map[string]string{}
	for _, e := range list.Entries {
		kinds[e.Name] = e.Type
	}
	if list.Path != "/workspace" || kinds["out.txt"] != "file" || kinds["notes"] != "dir" || kinds["escape"] != "symlink" {
		t.Errorf("listing %s", b)
	}
	if resp, b := p.raw(t, "GET", base+"/files/out.txt", "", nil); resp.StatusCode != http.StatusOK || string(b) != "made\n" {
		t.Errorf("GET out.txt: %d %q", resp.StatusCode, b)
	}
	resp, b = p.raw(t, "GET", base+"/files/escape", "", nil)
	if resp.StatusCode != http.StatusForbidden || bytes.Contains(b, []byte("root:")) {
		t.Errorf("GET through a planted link: %d %s", resp.StatusCode, b)
	}
	if resp, b := p.raw(t, "GET", base+"/files/..%2f..%2fetc%2fpasswd", "", nil); resp.StatusCode != http.StatusBadRequest {
		t.Errorf("GET with ..: %d %s", resp.StatusCode, b)
	}

	// An attachment: uploaded, then named in a message.
	var body bytes.Buffer
	mw := multipart.NewWriter(&body)
	fw, _ := mw.CreateFormFile("file", "square.png")
	fw.Write(redSquarePNG)
	mw.Close()
	resp, b = p.raw(t, "POST", base+"/attachments", mw.FormDataContentType(), &body)
	var up struct {
		Attachments []struct{ Name, Path string }
	}
	if err := json.Unmarshal(b, &up); err != nil || resp.StatusCode != http.StatusCreated || len(up.Attachments) != 1 {
		t.Fatalf("attach: %d %s", resp.StatusCode, b)
	}
	if up.Attachments[0].Path != "/den/attachments/square.png" {
		t.Errorf("attachment %+v", up.Attachments[0])
	}
	sent = p.api(t, "POST", base+"/messages", map[string]any{"text": "what is this?", "attachments": []string{up.Attachments[0].Name}}, http.StatusAccepted)
	waitIdle(t, p, id, sent["message_id"].(string))
	last := fake.Requests()[len(fake.Requests())-1].Body
	if !bytes.Contains(last, []byte(`"type":"image"`)) || !bytes.Contains(last, []byte("[attached: /den/attachments/square.png (image/png")) {
		t.Errorf("the model did not get the attachment: %s", truncateBytes(last, 600))
	}
	p.api(t, "POST", base+"/messages", map[string]any{"text": "and this?", "attachments": []string{"../../etc/passwd"}}, http.StatusBadRequest)
	p.api(t, "POST", base+"/messages", map[string]any{"text": "and this?", "attachments": []string{"nosuch.png"}}, http.StatusBadRequest)

	// A deleted session is gone for every route, and says so.
	p.api(t, "DELETE", base, nil, http.StatusNoContent)
	p.api(t, "POST", base+"/messages", map[string]any{"text": "still there?"}, http.StatusNotFound)
	if resp, b := p.raw(t, "GET", base+"/files/out.txt", "", nil); resp.StatusCode != http.StatusNotFound || !bytes.Contains(b, []byte(`"not_found"`)) {
		t.Errorf("a file of a deleted session: %d %s", resp.StatusCode, b)
	}
}

// waitIdle waits until the session is idle with an answer to message
// messageID (the message itself is stored at once, before its turn
// starts).
func waitIdle(t *testing.T, p *daemonProc, id, messageID string) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for time.Now().Before(deadline) {
		s := p.api(t, "GET", "/api/v1/sessions/"+id, nil, http.StatusOK)
		msgs, _ := s["messages"].([]any)
		answered := false
		for i, m := range msgs {
			if m.(map[string]any)["id"] != messageID {
				continue
			}
			for _, later := range msgs[i+1:] {
				if later.(map[string]any)["role"] == "assistant" {
					answered = true
				}
			}
		}
		if s["status"] == "idle" && answered {
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("session %s did not become idle with an answer to message %s", id, messageID)
}

func mustJSON(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

func truncateBytes(b []byte, n int) []byte {
	if len(b) > n {
		return b[:n]
	}
	return b
}

// redSquarePNG is a 1x1 red PNG.
var redSquarePNG = []byte{
	0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 0x00, 0x00, 0x00, 0x0d, 0x49, 0x48, 0x44, 0x52,
	0x00, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00, 0x01, 0x08, 0x02, 0x00, 0x00, 0x00, 0x90, 0x77, 0x53,
	0xde, 0x00, 0x00, 0x00, 0x0c, 0x49, 0x44, 0x41, 0x54, 0x08, 0xd7, 0x63, 0xf8, 0xcf, 0xc0, 0x00,
	0x00, 0x03, 0x01, 0x01, 0x00, 0x18, 0xdd, 0x8d, 0xb0, 0x00, 0x00, 0x00, 0x00, 0x49, 0x45, 0x4e,
	0x44, 0xae, 0x42, 0x60, 0x82,
}

// TestServeTerminal: the terminal route is a shell in the session's
// computer over a WebSocket, authenticated by the token.
func TestServeTerminal(t *testing.T) {
	d := newDen(t)
	serveConfig(t, d, "")
	p := startServe(t, d, llmtest.NewAnthropic(t))
	id := p.api(t, "POST", "/api/v1/sessions", map[string]any{"agent": "default"}, http.StatusCreated)["id"].(string)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	url := "ws" + strings.TrimPrefix(p.url, "http") + "/api/v1/sessions/" + id + "/terminal"
	if _, resp, err := websocket.Dial(ctx, url, nil); err == nil || resp == nil || resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("terminal without the token: %v %v", err, resp)
	}
	c, _, err := websocket.Dial(ctx, url, &websocket.DialOptions{HTTPHeader: http.Header{"Authorization": {"Bearer " + serveToken}}})
	if err != nil {
		t.Fatal(err)
	}
	defer c.CloseNow()
	if err := c.Write(ctx, websocket.MessageBinary, []byte("echo $((6*7)) > /workspace/t; cat /workspace/t; exit 3\n")); err != nil {
		t.Fatal(err)
	}
	var out strings.Builder
	for {
		typ, b, err := c.Read(ctx)
		if err != nil {
			t.Fatalf("read: %v after %q", err, out.String())
		}
		if typ == websocket.MessageText {
			if !strings.Contains(string(b), `"exit"`) || !strings.Contains(string(b), `"code":3`) {
				t.Errorf("exit message %s", b)
			}
			break
		}
		out.Write(b)
	}
	if !strings.Contains(out.String(), "42") {
		t.Errorf("terminal output %q", out.String())
	}
	if resp, b := p.raw(t, "GET", "/api/v1/sessions/"+id+"/terminal", "", nil); resp.StatusCode != http.StatusUpgradeRequired {
		t.Errorf("plain GET of the terminal: %d %s", resp.StatusCode, b)
	}
}

// TestServeMetricsAndChat: an OpenAI client talks to a den agent with
// den's token as its key, and the turn shows in the metrics.
func TestServeMetricsAndChat(t *testing.T) {
	d := newDen(t)
	serveConfig(t, d, "")
	fake := llmtest.NewAnthropic(t,
		llmtest.Turn{Text: "Checking.", Calls: []llmtest.Call{sh("toolu_1", "echo 4")}, InputTokens: 10, OutputTokens: 2},
		llmtest.Turn{Text: "It is 4.", InputTokens: 20, OutputTokens: 3})
	p := startServe(t, d, fake)
	client := openai.NewClient(option.WithBaseURL(p.url+"/v1/"), option.WithAPIKey(serveToken), option.WithMaxRetries(0))
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	models, err := client.Models.List(ctx)
	if err != nil || len(models.Data) == 0 || models.Data[0].ID != "den/default" {
		t.Fatalf("models: %v %+v", err, models)
	}
	var resp *http.Response
	c, err := client.Chat.Completions.New(ctx, openai.ChatCompletionNewParams{
		Model:    "den/default",
		Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("what is 2+2?")},
	}, option.WithResponseInto(&resp))
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Choices) != 1 || c.Choices[0].Message.Content != "It is 4." || c.Usage.TotalTokens != 35 {
		t.Errorf("completion %+v", c)
	}
	id := resp.Header.Get("X-Den-Session")
	if s := p.api(t, "GET", "/api/v1/sessions/"+id, nil, http.StatusOK); s["agent"] != "default" {
		t.Errorf("the call's session %v", s)
	}
	bad := openai.NewClient(option.WithBaseURL(p.url+"/v1/"), option.WithAPIKey("not-the-token-at-all"), option.WithMaxRetries(0))
	if _, err := bad.Models.List(ctx); err == nil || !strings.Contains(err.Error(), "401") {
		t.Errorf("a wrong key: %v", err)
	}

	// The metrics count what the daemon's events told, which they
	// read as the events come.
	want := []string{"den_turns_total 1", `den_tool_calls_total{tool="shell_execute"} 1`,
		`den_tokens_total{model="anthropic/claude-sonnet-5-5",kind="output"} 5`, "den_active_sessions 0", "den_queue_depth 0", "den_sse_clients 0"}
	var text string
	for deadline := time.Now().Add(10 * time.Second); ; {
		r, b := p.raw(t, "GET", "/metrics", "", nil)
		text = string(b)
		if r.StatusCode != http.StatusOK || !strings.HasPrefix(r.Header.Get("Content-Type"), "text/plain") {
			t.Fatalf("metrics: %d %s", r.StatusCode, b)
		}
		missing := 0
		for _, w := range want {
			if !strings.Contains(text, w+"\n") {
				missing++
			}
		}
		if missing == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("metrics lack some of %q:\n%s", want, text)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
