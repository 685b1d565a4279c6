package server

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"

	"den.dev/den/internal/computer"
	"den.dev/den/internal/config"
	"den.dev/den/internal/llm"
	"den.dev/den/internal/session"
	"den.dev/den/internal/store"
)

// FuzzDecoders sends every JSON route arbitrary bodies: den answers each
// with a status below 500 and a JSON body (an error object for every
// status from 400), and never panics.
func FuzzDecoders(f *testing.F) {
	dir := f.TempDir()
	st, err := store.Open(filepath.Join(dir, "den.db"))
	if err != nil {
		f.Fatal(err)
	}
	defer st.Close()
	rt, err := session.New(session.Options{Store: st, DataDir: dir, Config: &config.Config{}, Holder: "fuzz",
		Computer: func(context.Context, string) (*computer.Computer, computer.SessionOptions, error) {
			return nil, computer.SessionOptions{}, errors.New("no computers while fuzzing")
		}})
	if err != nil {
		f.Fatal(err)
	}
	defer rt.Close()
	ctx := context.Background()
	if err := st.EnsureAgent(ctx, "default"); err != nil {
		f.Fatal(err)
	}
	sess, err := st.CreateSession(ctx, "default", "anthropic/claude-sonnet-5-5")
	if err != nil {
		f.Fatal(err)
	}
	ids, err := st.Append(ctx, sess.ID, userMsg("hello"))
	if err != nil {
		f.Fatal(err)
	}
	h := New(Options{Runtime: rt, Store: st, ConfigPath: filepath.Join(dir, "config.toml")}).Handler()
	routes := []string{
		"POST /api/v1/sessions",
		"POST /api/v1/sessions/" + sess.ID + "/messages",
		"POST /api/v1/sessions/" + sess.ID + "/messages/" + ids[0] + "/edit",
		"POST /api/v1/sessions/" + sess.ID + "/branch",
		"POST /api/v1/approvals/nosuch",
		"PATCH /api/v1/config",
		"DELETE /api/v1/rules",
	}
	for _, seed := range []string{`{}`, `{"agent":"default"}`, `{"text":"hi","model":"x/y"}`, `{"decision":"allow","scope":"always"}`,
		`{"set":{"agents.default.model":"a/b"}}`, `{"unset":["agents.default.model"]}`, `{"unset":["groups"],"set":{"groups.g.members":["a/b"]}}`,
		`{"agent":"default","command":"den-open","action":"","subject":"x"}`, `{"text":`, `[]`, `null`, `{"text":"hi"} {"x":1}`, "\x00\xff", `{"message_id":"` + ids[0] + `"}`} {
		for i := range routes {
			f.Add(i, seed)
		}
	}
	f.Fuzz(func(t *testing.T, route int, body string) {
		if route < 0 {
			route = -route
		}
		method, path, _ := strings.Cut(routes[route%len(routes)], " ")
		req := httptest.NewRequest(method, path, strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		w := httptest.NewRecorder()
		h.ServeHTTP(w, req)
		if w.Code >= 500 {
			t.Fatalf("%s %s %q: %d %s", method, path, body, w.Code, w.Body)
		}
		var v map[string]any
		if err := json.Unmarshal(w.Body.Bytes(), &v); err != nil {
			t.Fatalf("%s %s %q: not JSON: %s", method, path, body, w.Body)
		}
		if w.Code >= 400 {
			e, ok := v["error"].(map[string]any)
			if !ok || e["code"] == "" || e["message"] == "" {
				t.Fatalf("%s %s %q: %d without an error object: %s", method, path, body, w.Code, w.Body)
			}
		}
		if w.Code == http.StatusAccepted {
			rt.Cancel(sess.ID)
		}
	})
}

func userMsg(text string) llm.Message {
	return llm.Message{Role: llm.User, Parts: []llm.Part{&llm.Text{Text: text}}}
}
