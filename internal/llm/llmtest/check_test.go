package llmtest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// The request checks, tested through the fakes: for each rule, a valid
// request edited to break it is refused with the API's status and error
// body, its reason recorded; the valid request itself is answered.

// fakeAPI is one fake as its tests drive it.
type fakeAPI struct {
	name  string
	start func(testing.TB, ...Turn) *Server
	// post sends body for model the way the adapter does (path, key).
	post func(t *testing.T, s *Server, model string, header http.Header, body []byte) *http.Response
	// errorMessage reads the API's error body and checks its shape.
	errorMessage func(t *testing.T, body []byte) string
}

func post(t *testing.T, url string, header http.Header, body []byte) *http.Response {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header = header.Clone()
	if req.Header == nil {
		req.Header = http.Header{}
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	return resp
}

var (
	anthropicAPI = fakeAPI{
		name: "anthropic", start: NewAnthropic,
		post: func(t *testing.T, s *Server, _ string, h http.Header, body []byte) *http.Response {
			h = h.Clone()
			if h == nil {
				h = http.Header{}
			}
			h.Set("X-Api-Key", "sk-test")
			return post(t, s.URL+"/v1/messages", h, body)
		},
		errorMessage: func(t *testing.T, body []byte) string {
			var e struct {
				Type  string `json:"type"`
				Error struct{ Type, Message string }
			}
			if err := json.Unmarshal(body, &e); err != nil || e.Type != "error" || e.Error.Type != "invalid_request_error" {
				t.Errorf("error body %s (%v), want {type: error, error: {type: invalid_request_error, message}}", body, err)
			}
			return e.Error.Message
		},
	}
	openAIErrorMessage = func(t *testing.T, body []byte) string {
		var e struct {
			Error struct {
				Message string
				Type    string
				Param   *string
				Code    *string
			} `json:"error"`
		}
		if err := json.Unmarshal(body, &e); err != nil || e.Error.Type != "invalid_request_error" || e.Error.Message == "" {
			t.Errorf("error body %s (%v), want {error: {message, type: invalid_request_error, param, code}}", body, err)
		}
		if !bytes.Contains(body, []byte(`"param":`)) || !bytes.Contains(body, []byte(`"code":`)) {
			t.Errorf("error body %s lacks param or code", body)
		}
		return e.Error.Message
	}
	openAIAPI = fakeAPI{
		name: "openai", start: NewOpenAI, errorMessage: openAIErrorMessage,
		post: func(t *testing.T, s *Server, _ string, h http.Header, body []byte) *http.Response {
			return post(t, s.URL+"/v1/chat/completions", h, body)
		},
	}
	responsesAPI = fakeAPI{
		name: "openai-responses", start: NewResponses, errorMessage: openAIErrorMessage,
		post: func(t *testing.T, s *Server, _ string, h http.Header, body []byte) *http.Response {
			return post(t, s.URL+"/v1/responses", h, body)
		},
	}
	geminiAPI = fakeAPI{
		name: "gemini", start: NewGemini,
		post: func(t *testing.T, s *Server, model string, h http.Header, body []byte) *http.Response {
			h = h.Clone()
			if h == nil {
				h = http.Header{}
			}
			h.Set("X-Goog-Api-Key", "test")
			return post(t, s.URL+"/v1beta/models/"+model+":streamGenerateContent?alt=sse", h, body)
		},
		errorMessage: func(t *testing.T, body []byte) string {
			var e struct {
				Error struct {
					Code    int
					Message string
					Status  string
				} `json:"error"`
			}
			if err := json.Unmarshal(body, &e); err != nil || e.Error.Code != 400 || e.Error.Status != "INVALID_ARGUMENT" {
				t.Errorf("error body %s (%v), want {error: {code: 400, message, status: INVALID_ARGUMENT}}", body, err)
			}
			return e.Error.Message
		},
	}
)

// ruleCase is a valid request edited to break one rule.
type ruleCase struct {
	name   string
	model  string // Gemini's model, from the path; "" for the default
	header http.Header
	edit   func(r map[string]any)
	want   string // in the error message; "" for a request that passes
}

// runRules sends base, then base edited by each case, to a fresh fake.
func runRules(t *testing.T, api fakeAPI, base string, cases []ruleCase) {
	t.Helper()
	cases = append([]ruleCase{{name: "the valid request"}}, cases...)
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var r map[string]any
			if err := json.Unmarshal([]byte(base), &r); err != nil {
				t.Fatalf("base request: %v", err)
			}
			if tc.edit != nil {
				tc.edit(r)
			}
			body, _ := json.Marshal(r)
			model := tc.model
			if model == "" {
				model = "gemini-2.5-flash"
			}
			s := api.start(t, Turn{Text: "ok"})
			s.ExpectInvalid()
			resp := api.post(t, s, model, tc.header, body)
			got, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if tc.want == "" {
				if resp.StatusCode != http.StatusOK || len(s.Rejected()) != 0 {
					t.Fatalf("HTTP %d %s, rejections %v; want the request taken", resp.StatusCode, got, s.Rejected())
				}
				if ct := resp.Header.Get("Content-Type"); !strings.HasPrefix(ct, "text/event-stream") {
					t.Errorf("Content-Type %q, want the turn streamed as text/event-stream", ct)
				}
				return
			}
			if resp.StatusCode != http.StatusBadRequest {
				t.Fatalf("HTTP %d %s; want 400 mentioning %q", resp.StatusCode, got, tc.want)
			}
			if ct := resp.Header.Get("Content-Type"); !strings.HasPrefix(ct, "application/json") {
				t.Errorf("Content-Type %q, want application/json", ct)
			}
			if msg := api.errorMessage(t, got); !strings.Contains(msg, tc.want) {
				t.Errorf("error message %q, want one mentioning %q", msg, tc.want)
			}
			rej := s.Rejected()
			if len(rej) != 1 || rej[0].Index != 0 || rej[0].Status != http.StatusBadRequest || !strings.Contains(rej[0].Reason, tc.want) {
				t.Errorf("Rejected() = %+v, want request 0 refused with 400 for %q", rej, tc.want)
			}
		})
	}
}

// Helpers to edit decoded JSON: a path is object keys and array indexes.

func walk(v any, path []any) any {
	for _, p := range path {
		switch k := p.(type) {
		case string:
			v = v.(map[string]any)[k]
		case int:
			v = v.([]any)[k]
		}
	}
	return v
}

// set puts val at path.
func set(r map[string]any, val any, path ...any) {
	parent := walk(r, path[:len(path)-1])
	switch k := path[len(path)-1].(type) {
	case string:
		parent.(map[string]any)[k] = val
	case int:
		parent.([]any)[k] = val
	}
}

// del removes the key or array element at path.
func del(r map[string]any, path ...any) {
	parentPath := path[:len(path)-1]
	parent := walk(r, parentPath)
	switch k := path[len(path)-1].(type) {
	case string:
		delete(parent.(map[string]any), k)
	case int:
		a := parent.([]any)
		set(r, append(append([]any(nil), a[:k]...), a[k+1:]...), parentPath...)
	}
}

// ins inserts val into the array at path's parent, at path's index.
func ins(r map[string]any, val any, path ...any) {
	parentPath := path[:len(path)-1]
	a := walk(r, parentPath).([]any)
	k := path[len(path)-1].(int)
	set(r, append(append(append([]any(nil), a[:k]...), val), a[k:]...), parentPath...)
}

// obj decodes a JSON object literal for an edit.
func obj(s string) map[string]any {
	var o map[string]any
	if err := json.Unmarshal([]byte(s), &o); err != nil {
		panic(err)
	}
	return o
}

// TestGoldenRequestsPass runs the checks on the request bodies the
// adapters' golden files pin: den's own requests are ones the APIs take.
func TestGoldenRequestsPass(t *testing.T) {
	checks := map[string]func([]byte) error{
		"anthropic":       func(b []byte) error { return CheckAnthropic(http.Header{}, b) },
		"openai":          CheckOpenAI,
		"openairesponses": CheckResponses,
		"gemini":          func(b []byte) error { return CheckGemini("gemini-2.5-pro", b) },
	}
	for dir, check := range checks {
		files, err := filepath.Glob(filepath.Join("..", dir, "testdata", "request*.golden"))
		if err != nil || len(files) == 0 {
			t.Fatalf("%s: no golden request files (%v)", dir, err)
		}
		for _, f := range files {
			b, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			if dir == "openai" && !bytes.Contains(b, []byte(`"stream":`)) {
				// A body built without sending it (openai.OfficialBody)
				// lacks the "stream": true the SDK adds when it sends.
				var r map[string]any
				if err := json.Unmarshal(b, &r); err != nil {
					t.Fatalf("%s: %v", f, err)
				}
				r["stream"] = true
				b, _ = json.Marshal(r)
			}
			if err := check(b); err != nil {
				t.Errorf("%s: den's golden request is one the API refuses: %v", f, err)
			}
		}
	}
}

// recorder is a testing.TB that keeps the errors reported to it.
type recorder struct {
	testing.TB
	mu   sync.Mutex
	errs []string
}

func (r *recorder) Errorf(format string, args ...any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.errs = append(r.errs, fmt.Sprintf(format, args...))
}

func (r *recorder) errors() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.errs...)
}

// TestInvalidRequestFailsTheTest checks that a refused request fails
// the test that started the fake, with the reason and den's body, that
// it uses up no turn of the script, and that ExpectInvalid turns the
// failure off.
func TestInvalidRequestFailsTheTest(t *testing.T) {
	bad := []byte(`{"model": "claude-test", "messages": [{"role": "user", "content": "hi"}]}`)
	good := []byte(`{"model": "claude-test", "max_tokens": 10, "messages": [{"role": "user", "content": "hi"}]}`)

	rec := &recorder{TB: t}
	s := NewAnthropic(rec, Turn{Text: "first turn"}, Turn{Text: "second turn"})
	resp := anthropicAPI.post(t, s, "", nil, bad)
	resp.Body.Close()
	if resp.StatusCode != http.StatusBadRequest {
		t.Fatalf("HTTP %d for an invalid request, want 400", resp.StatusCode)
	}
	errs := rec.errors()
	if len(errs) != 1 || !strings.Contains(errs[0], "max_tokens: Field required") || !strings.Contains(errs[0], `"model": "claude-test"`) {
		t.Errorf("the test was told %q; want one failure with the reason and the body", errs)
	}
	resp = anthropicAPI.post(t, s, "", nil, good)
	got, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if !bytes.Contains(got, []byte(`"firs`)) || bytes.Contains(got, []byte(`"seco`)) {
		t.Errorf("after a refused request the fake answered %q, want the first turn", got)
	}
	if n := len(rec.errors()); n != 1 {
		t.Errorf("a valid request failed the test too (%d failures)", n)
	}
	if r := s.Rejected(); len(r) != 1 || r[0].Index != 0 || len(s.Requests()) != 2 {
		t.Errorf("Rejected() = %+v with %d requests, want request 0 of 2", r, len(s.Requests()))
	}

	quiet := &recorder{TB: t}
	s = NewAnthropic(quiet, Turn{Text: "ok"})
	s.ExpectInvalid()
	resp = anthropicAPI.post(t, s, "", nil, bad)
	resp.Body.Close()
	if resp.StatusCode != http.StatusBadRequest || len(quiet.errors()) != 0 || len(s.Rejected()) != 1 {
		t.Errorf("with ExpectInvalid: HTTP %d, failures %q, rejections %v; want 400, none, one", resp.StatusCode, quiet.errors(), s.Rejected())
	}
}

// TestOnlyAPIRequestsAreChecked leaves requests the fakes answer
// otherwise (a wrong path, no credential) to them, as the APIs check
// those first.
func TestOnlyAPIRequestsAreChecked(t *testing.T) {
	s := NewAnthropic(t, Turn{Text: "ok"})
	resp := post(t, s.URL+"/v1/messages", nil, []byte(`{}`)) // no key
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("no key: HTTP %d, want 401", resp.StatusCode)
	}
	resp = post(t, s.URL+"/v1/complete", http.Header{"X-Api-Key": {"k"}}, []byte(`{}`))
	resp.Body.Close()
	if resp.StatusCode != http.StatusNotFound {
		t.Errorf("wrong path: HTTP %d, want 404", resp.StatusCode)
	}
	g := NewGemini(t, Turn{Text: "ok"})
	resp = post(t, g.URL+"/v1beta/models/gemini-2.5-flash:streamGenerateContent?alt=sse", nil, []byte(`{}`))
	resp.Body.Close()
	if resp.StatusCode != http.StatusForbidden {
		t.Errorf("gemini without key: HTTP %d, want 403", resp.StatusCode)
	}
	if len(s.Rejected())+len(g.Rejected()) != 0 {
		t.Errorf("rejections %v %v, want none", s.Rejected(), g.Rejected())
	}
}
