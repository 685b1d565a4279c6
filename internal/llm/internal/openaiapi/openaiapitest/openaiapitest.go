// Package openaiapitest holds the test helpers den's two OpenAI adapters
// share: a Model pointed at a fake provider server, a recorder that sums
// up what a stream amounted to, a golden-file check for request bodies
// and a streaming benchmark. The fake servers themselves are in
// package llmtest.
package openaiapitest

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"den.dev/den/internal/llm"
	"den.dev/den/internal/llm/llmtest"
)

// New returns the Model that newModel makes for a provider of type typ
// at srv, with a test key and an X-Den-Test: yes header. It fails the
// test when newModel fails.
func New[M any](t testing.TB, newModel func(llm.Provider) (M, error), typ string, srv *llmtest.Server) M {
	t.Helper()
	m, err := newModel(llm.Provider{
		Name: "test", Type: typ, BaseURL: srv.URL + "/v1", APIKey: "sk-test",
		Headers: map[string]string{"X-Den-Test": "yes"},
	})
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// Turn is what a stream amounted to.
type Turn struct {
	Text     string
	Thinking []llm.Thinking
	Starts   []llm.ToolCallStart
	Args     map[int]string // ToolCallDelta pieces joined
	Calls    []llm.ToolCall
	Usage    *llm.Usage
	Stop     llm.StopReason
	Dones    int
}

// Run streams req from m and records the turn. It returns the first
// error the stream yields, with the turn so far; it reports an event
// after Done, an event of an unknown type, and a clean stream without
// exactly one Done as test errors.
func Run(t testing.TB, m llm.Model, req *llm.Request) (Turn, error) {
	t.Helper()
	var got Turn
	for ev, err := range m.Stream(context.Background(), req) {
		if err != nil {
			return got, err
		}
		if got.Dones > 0 {
			t.Errorf("event %T after Done", ev)
		}
		switch ev := ev.(type) {
		case *llm.TextDelta:
			got.Text += ev.Text
		case *llm.ThinkingDelta:
		case *llm.ThinkingDone:
			got.Thinking = append(got.Thinking, ev.Thinking)
		case *llm.ToolCallStart:
			got.Starts = append(got.Starts, *ev)
		case *llm.ToolCallDelta:
			if got.Args == nil {
				got.Args = map[int]string{}
			}
			got.Args[ev.Index] += ev.JSON
		case *llm.ToolCallDone:
			got.Calls = append(got.Calls, ev.Call)
		case *llm.Usage:
			got.Usage = ev
		case *llm.Done:
			got.Stop = ev.Stop
			got.Dones++
		default:
			t.Errorf("unexpected event %T", ev)
		}
	}
	if got.Dones != 1 {
		t.Errorf("%d Done events, want 1", got.Dones)
	}
	return got, nil
}

// Message is the assistant message den would store for got: thinking,
// then text, then the tool calls.
func (got Turn) Message() llm.Message {
	msg := llm.Message{Role: llm.Assistant}
	for i := range got.Thinking {
		msg.Parts = append(msg.Parts, &got.Thinking[i])
	}
	if got.Text != "" {
		msg.Parts = append(msg.Parts, &llm.Text{Text: got.Text})
	}
	for i := range got.Calls {
		msg.Parts = append(msg.Parts, &got.Calls[i])
	}
	return msg
}

// User is a user message of one text part.
func User(text string) llm.Message {
	return llm.Message{Role: llm.User, Parts: []llm.Part{&llm.Text{Text: text}}}
}

// Golden compares the JSON body, indented, with the golden file at
// path; with update set it first rewrites the file from body.
func Golden(t testing.TB, path string, body []byte, update bool) {
	t.Helper()
	var got bytes.Buffer
	if err := json.Indent(&got, body, "", "  "); err != nil {
		t.Fatal(err)
	}
	got.WriteString("\n")
	if update {
		if err := os.WriteFile(path, got.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -update to create it)", err)
	}
	if diff := cmp.Diff(string(want), got.String()); diff != "" {
		t.Errorf("request body (-want +got):\n%s", diff)
	}
}

// BenchmarkStream measures streaming a 1 MB answer from the Model that
// newModel makes for a server scripted with turn, and reports the cost
// per TextDelta and the deltas per stream.
func BenchmarkStream(b *testing.B, newModel func(turn llmtest.Turn) llm.Model) {
	text := strings.Repeat("0123456789", 100_000) // 1 MB
	m := newModel(llmtest.Turn{Text: text, InputTokens: 10, OutputTokens: 250_000})
	req := &llm.Request{Model: "m", Messages: []llm.Message{User("write")}}
	b.SetBytes(int64(len(text)))
	deltas := 0
	for b.Loop() {
		n := 0
		for ev, err := range m.Stream(context.Background(), req) {
			if err != nil {
				b.Fatal(err)
			}
			if d, ok := ev.(*llm.TextDelta); ok {
				n += len(d.Text)
				deltas++
			}
		}
		if n != len(text) {
			b.Fatalf("got %d bytes, want %d", n, len(text))
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(deltas), "ns/delta")
	b.ReportMetric(float64(deltas)/float64(b.N), "deltas/op")
}
