package openaicompat

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"

	"den.dev/den/internal/config"
	"den.dev/den/internal/llm/llmtest"
	"den.dev/den/internal/session"
	"den.dev/den/internal/session/sessiontest"
	"den.dev/den/internal/store"
)

// harness is a real runtime on a fresh data dir, whose agents'
// computers are busybox ones under the real sandbox and whose model is
// a fake provider, with the handlers on a test server and the official
// OpenAI client pointed at it.
type harness struct {
	rt     *session.Runtime
	st     *store.Store
	fake   *llmtest.Server
	url    string // the test server's, ending in /v1/
	client openai.Client
}

// newHarness builds a harness whose model is fake (an Anthropic API).
func newHarness(t *testing.T, cfg *config.Config, fake *llmtest.Server) *harness {
	t.Helper()
	t.Setenv("ANTHROPIC_API_KEY", "sk-test")
	t.Setenv("ANTHROPIC_BASE_URL", fake.URL)
	se := sessiontest.New(t, cfg)
	rt, st := se.RT, se.Store
	srv := serve(&Handler{RT: rt})
	t.Cleanup(srv.Close)
	return &harness{rt: rt, st: st, fake: fake, url: srv.URL + "/v1/", client: client(srv.URL)}
}

// serve mounts h's routes on a test server, as the daemon does.
func serve(h *Handler) *httptest.Server {
	mux := http.NewServeMux()
	mux.HandleFunc("POST /v1/chat/completions", h.ChatCompletions)
	mux.HandleFunc("GET /v1/models", h.Models)
	return httptest.NewServer(mux)
}

// client is the official OpenAI client of the server at base.
func client(base string) openai.Client {
	return openai.NewClient(option.WithBaseURL(base+"/v1/"), option.WithAPIKey("x"))
}

// configOnly is a Runtime that has only a config: a call that gets past
// the checks to the runtime panics.
type configOnly struct {
	Runtime
	cfg *config.Config
}

func (c configOnly) Config() *config.Config { return c.cfg }

// user is a user message of the OpenAI client.
func user(text string) openai.ChatCompletionMessageParamUnion { return openai.UserMessage(text) }

// modelMessage is a message of a request den sent the fake model: its
// role, its text blocks and its tool results' text.
type modelMessage struct {
	Role        string
	Texts       []string
	ToolResults []string
}

// modelMessages reads the messages of the i-th request the fake got.
func (h *harness) modelMessages(t *testing.T, i int) []modelMessage {
	t.Helper()
	reqs := h.fake.Requests()
	if i >= len(reqs) {
		t.Fatalf("the model got %d requests, want at least %d", len(reqs), i+1)
	}
	var body struct {
		Messages []struct {
			Role    string          `json:"role"`
			Content json.RawMessage `json:"content"`
		} `json:"messages"`
	}
	if err := json.Unmarshal(reqs[i].Body, &body); err != nil {
		t.Fatalf("request %d: %v", i, err)
	}
	var out []modelMessage
	for _, m := range body.Messages {
		mm := modelMessage{Role: m.Role}
		var s string
		if json.Unmarshal(m.Content, &s) == nil {
			mm.Texts = []string{s}
			out = append(out, mm)
			continue
		}
		var blocks []struct {
			Type    string          `json:"type"`
			Text    string          `json:"text"`
			Content json.RawMessage `json:"content"`
		}
		if err := json.Unmarshal(m.Content, &blocks); err != nil {
			t.Fatalf("request %d: content %s: %v", i, m.Content, err)
		}
		for _, b := range blocks {
			switch b.Type {
			case "text":
				mm.Texts = append(mm.Texts, b.Text)
			case "tool_result":
				mm.ToolResults = append(mm.ToolResults, string(b.Content))
			}
		}
		out = append(out, mm)
	}
	return out
}

// waitEvent returns the first event of the session ("" for any) after
// the id after that match says is wanted, or fails after a minute.
func (h *harness) waitEvent(t *testing.T, sessionID string, after int64, match func(store.Event) bool) store.Event {
	t.Helper()
	sub := h.rt.Subscribe(sessionID, after, match)
	defer sub.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	e, err := sub.Next(ctx)
	if err != nil {
		t.Fatalf("waiting for an event of session %q: %v", sessionID, err)
	}
	return e
}

// events are the stored events of the session, every one published so
// far included.
func (h *harness) events(t *testing.T, sessionID string) []store.Event {
	t.Helper()
	h.rt.Sync()
	evs, err := h.st.Events(context.Background(), sessionID, 0, 10000)
	if err != nil {
		t.Fatal(err)
	}
	return evs
}

func field(e store.Event, name string) string {
	var m map[string]any
	json.Unmarshal(e.Data, &m)
	s, _ := m[name].(string)
	return s
}

func isType(typ string) func(store.Event) bool {
	return func(e store.Event) bool { return e.Type == typ }
}

func isStatus(status string) func(store.Event) bool {
	return func(e store.Event) bool { return e.Type == "status" && field(e, "status") == status }
}

// sseData are the data lines of an SSE body.
func sseData(body string) []string {
	var out []string
	for _, l := range strings.Split(body, "\n") {
		if d, ok := strings.CutPrefix(l, "data: "); ok {
			out = append(out, d)
		}
	}
	return out
}
