package openaicompat

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/shared"

	"den.dev/den/internal/config"
	"den.dev/den/internal/event"
	"den.dev/den/internal/llm/llmtest"
)

// TestCompletion: a plain completion through the official client
// answers with the model's text, sums its usage (cache reads in the
// prompt tokens), names the new session in X-Den-Session, and sends
// the model the user's text as it is (no instructions, no transcript);
// the client's tools and sampling settings are accepted and ignored.
func TestCompletion(t *testing.T) {
	h := newHarness(t, nil, llmtest.NewAnthropic(t,
		llmtest.Turn{Text: "Four.", InputTokens: 12, OutputTokens: 3, CacheReadTokens: 5}))
	var resp *http.Response
	got, err := h.client.Chat.Completions.New(context.Background(), openai.ChatCompletionNewParams{
		Model:       "den/default",
		Messages:    []openai.ChatCompletionMessageParamUnion{user("What is 2+2?")},
		Temperature: openai.Float(0.2),
		Tools: []openai.ChatCompletionToolUnionParam{openai.ChatCompletionFunctionTool(shared.FunctionDefinitionParam{
			Name: "get_weather", Parameters: shared.FunctionParameters{"type": "object"}})},
	}, option.WithResponseInto(&resp))
	if err != nil {
		t.Fatal(err)
	}
	if len(got.Choices) != 1 || got.Choices[0].Message.Content != "Four." || got.Choices[0].FinishReason != "stop" ||
		got.Choices[0].Message.Role != "assistant" || len(got.Choices[0].Message.ToolCalls) != 0 {
		t.Errorf("choices %+v", got.Choices)
	}
	if got.Object != "chat.completion" || got.Model != "den/default" || !strings.HasPrefix(got.ID, "chatcmpl-") || got.Created == 0 {
		t.Errorf("completion %s %s %s %d", got.Object, got.Model, got.ID, got.Created)
	}
	if u := got.Usage; u.PromptTokens != 17 || u.CompletionTokens != 3 || u.TotalTokens != 20 || u.PromptTokensDetails.CachedTokens != 5 {
		t.Errorf("usage %+v", u)
	}
	id := resp.Header.Get(SessionHeader)
	sess, err := h.st.GetSession(context.Background(), id)
	if err != nil || sess.Agent != "default" {
		t.Fatalf("%s %q: %+v %v", SessionHeader, id, sess, err)
	}
	msgs := h.modelMessages(t, 0)
	if len(msgs) != 1 || msgs[0].Role != "user" || strings.Join(msgs[0].Texts, "") != "What is 2+2?" {
		t.Errorf("the model got %+v, want the user's text alone", msgs)
	}
	if reqs := h.fake.Requests(); len(reqs) != 1 || strings.Contains(string(reqs[0].Body), "get_weather") {
		t.Errorf("the client's tool reached the model (or %d requests)", len(reqs))
	}
}

// TestStream: a streamed completion, read with the client's stream and
// its accumulator, assembles the answer (longer than one chunk's piece,
// with multi-byte runes), starts with the assistant's role, ends with
// the finish reason and, asked for, a usage chunk without choices;
// on the wire every chunk but the last has usage null and the stream
// ends with [DONE].
func TestStream(t *testing.T) {
	answer := strings.Repeat("héllo wörld, ", 700) + "done."
	h := newHarness(t, nil, llmtest.NewAnthropic(t, llmtest.Turn{Text: answer, InputTokens: 40, OutputTokens: 900}))
	var resp *http.Response
	stream := h.client.Chat.Completions.NewStreaming(context.Background(), openai.ChatCompletionNewParams{
		Model:         "den/default",
		Messages:      []openai.ChatCompletionMessageParamUnion{user("Say hello a lot.")},
		StreamOptions: openai.ChatCompletionStreamOptionsParam{IncludeUsage: openai.Bool(true)},
	}, option.WithResponseInto(&resp))
	var acc openai.ChatCompletionAccumulator
	var chunks []openai.ChatCompletionChunk
	for stream.Next() {
		c := stream.Current()
		acc.AddChunk(c)
		chunks = append(chunks, c)
	}
	if err := stream.Err(); err != nil {
		t.Fatal(err)
	}
	if len(acc.Choices) != 1 || acc.Choices[0].Message.Content != answer || acc.Choices[0].FinishReason != "stop" {
		t.Fatalf("accumulated %+v, want the answer (%d bytes)", acc.Choices, len(answer))
	}
	if acc.Usage.PromptTokens != 40 || acc.Usage.CompletionTokens != 900 || acc.Usage.TotalTokens != 940 {
		t.Errorf("usage %+v", acc.Usage)
	}
	if len(chunks) < 5 {
		t.Fatalf("%d chunks, want the role, at least two pieces of text, the finish reason and usage", len(chunks))
	}
	if d := chunks[0].Choices[0].Delta; d.Role != "assistant" || d.Content != "" {
		t.Errorf("first chunk's delta %+v", d)
	}
	if last := chunks[len(chunks)-1]; len(last.Choices) != 0 || last.Usage.TotalTokens != 940 {
		t.Errorf("last chunk %+v, want usage and no choices", last)
	}
	for _, c := range chunks {
		if c.Object != "chat.completion.chunk" || c.Model != "den/default" || c.ID != chunks[0].ID || !strings.HasPrefix(c.ID, "chatcmpl-") {
			t.Errorf("chunk %s %s %s", c.Object, c.Model, c.ID)
		}
	}
	if ct := resp.Header.Get("Content-Type"); ct != "text/event-stream" || resp.Header.Get(SessionHeader) == "" {
		t.Errorf("headers %v", resp.Header)
	}

	// The wire, as a client without the SDK reads it.
	body := `{"model": "den/default", "stream": true, "stream_options": {"include_usage": true}, "messages": [{"role": "user", "content": "Again."}]}`
	raw, err := http.Post(h.url+"chat/completions", "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(raw.Body)
	raw.Body.Close()
	data := sseData(string(b))
	if len(data) < 4 || data[len(data)-1] != "[DONE]" {
		t.Fatalf("stream %q, want data lines ending with [DONE]", b)
	}
	for _, d := range data[:len(data)-2] {
		if !strings.HasSuffix(d, `"usage":null}`) {
			t.Errorf("chunk %s, want usage null", d)
		}
	}
	if u := data[len(data)-2]; !strings.Contains(u, `"choices":[]`) || !strings.Contains(u, `"total_tokens":940`) {
		t.Errorf("usage chunk %s", u)
	}
}

// TestToolCall: a run whose model calls the shell first really runs the
// command in the agent's computer (its output reaches the model), and
// the client, streaming or not, sees only the final answer, never the
// narration of the turn that called the tool, nor an OpenAI tool call;
// usage sums both model requests.
func TestToolCall(t *testing.T) {
	for _, stream := range []bool{false, true} {
		t.Run(fmt.Sprintf("stream=%v", stream), func(t *testing.T) {
			h := newHarness(t, nil, llmtest.NewAnthropic(t,
				llmtest.Turn{Text: "Let me check.", Calls: []llmtest.Call{{ID: "toolu_1", Name: "shell_execute",
					Input: `{"command":"echo den-ran-this | tr a-z A-Z"}`}}, InputTokens: 10, OutputTokens: 4},
				llmtest.Turn{Text: "The shell said DEN-RAN-THIS.", InputTokens: 30, OutputTokens: 6}))
			params := openai.ChatCompletionNewParams{Model: "den/default",
				Messages: []openai.ChatCompletionMessageParamUnion{user("Run the shell.")}}
			var content string
			var calls int
			var u openai.CompletionUsage
			if stream {
				params.StreamOptions = openai.ChatCompletionStreamOptionsParam{IncludeUsage: openai.Bool(true)}
				s := h.client.Chat.Completions.NewStreaming(context.Background(), params)
				var acc openai.ChatCompletionAccumulator
				for s.Next() {
					acc.AddChunk(s.Current())
				}
				if err := s.Err(); err != nil {
					t.Fatal(err)
				}
				content, calls, u = acc.Choices[0].Message.Content, len(acc.Choices[0].Message.ToolCalls), acc.Usage
			} else {
				got, err := h.client.Chat.Completions.New(context.Background(), params)
				if err != nil {
					t.Fatal(err)
				}
				content, calls, u = got.Choices[0].Message.Content, len(got.Choices[0].Message.ToolCalls), got.Usage
			}
			if content != "The shell said DEN-RAN-THIS." || calls != 0 {
				t.Errorf("content %q with %d tool calls, want the final answer alone", content, calls)
			}
			if u.PromptTokens != 40 || u.CompletionTokens != 10 || u.TotalTokens != 50 {
				t.Errorf("usage %+v, want both requests'", u)
			}
			msgs := h.modelMessages(t, 1)
			if len(msgs) != 3 || len(msgs[2].ToolResults) != 1 || !strings.Contains(msgs[2].ToolResults[0], "DEN-RAN-THIS") {
				t.Errorf("the model's second request %+v, want the command's output as a tool result", msgs)
			}
		})
	}
}

// TestContinue: X-Den-Session continues a session: the model gets den's
// own history of the first exchange and the one new user message (not
// the client's resent history, nor a transcript), and the answer names
// the same session. A session of another agent, or none, is not found.
func TestContinue(t *testing.T) {
	cfg := &config.Config{Agents: map[string]config.Agent{"other": {}}}
	h := newHarness(t, cfg, llmtest.NewAnthropic(t, llmtest.Turn{Text: "It is 4."}, llmtest.Turn{Text: "Times 3 is 12."}))
	ctx := context.Background()
	var first, second *http.Response
	if _, err := h.client.Chat.Completions.New(ctx, openai.ChatCompletionNewParams{Model: "den/default",
		Messages: []openai.ChatCompletionMessageParamUnion{user("What is 2+2?")}}, option.WithResponseInto(&first)); err != nil {
		t.Fatal(err)
	}
	id := first.Header.Get(SessionHeader)
	got, err := h.client.Chat.Completions.New(ctx, openai.ChatCompletionNewParams{Model: "den/default",
		Messages: []openai.ChatCompletionMessageParamUnion{
			openai.SystemMessage("Answer tersely."), user("What is 2+2?"), openai.AssistantMessage("It is 4."), user("And times 3?")}},
		option.WithHeader(SessionHeader, id), option.WithResponseInto(&second))
	if err != nil {
		t.Fatal(err)
	}
	if got.Choices[0].Message.Content != "Times 3 is 12." || second.Header.Get(SessionHeader) != id {
		t.Errorf("answer %q in session %q, want %q", got.Choices[0].Message.Content, second.Header.Get(SessionHeader), id)
	}
	var roles, texts []string
	for _, m := range h.modelMessages(t, 1) {
		roles = append(roles, m.Role)
		texts = append(texts, strings.Join(m.Texts, ""))
	}
	if diff := cmp.Diff([]string{"user", "assistant", "user"}, roles); diff != "" {
		t.Errorf("roles (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"What is 2+2?", "It is 4.", "And times 3?"}, texts); diff != "" {
		t.Errorf("the model's second request (-want +got):\n%s", diff)
	}

	for _, c := range []struct{ name, model, session string }{
		{"another agent's session", "den/other", id},
		{"no such session", "den/default", "nonexistent"},
	} {
		_, err := h.client.Chat.Completions.New(ctx, openai.ChatCompletionNewParams{Model: c.model,
			Messages: []openai.ChatCompletionMessageParamUnion{user("Hello?")}}, option.WithHeader(SessionHeader, c.session))
		var ae *openai.Error
		if !errors.As(err, &ae) || ae.StatusCode != http.StatusNotFound || ae.Code != "session_not_found" {
			t.Errorf("%s: %v, want 404 session_not_found", c.name, err)
		}
	}
	if n := len(h.fake.Requests()); n != 2 {
		t.Errorf("the model got %d requests, want 2", n)
	}
}

// TestNewSessionHistory: a new session gets the request's instructions
// and a transcript of its earlier turns in the one message the model
// sees, so that a stateless client's history is not lost.
func TestNewSessionHistory(t *testing.T) {
	h := newHarness(t, nil, llmtest.NewAnthropic(t, llmtest.Turn{Text: "Très bien."}))
	if _, err := h.client.Chat.Completions.New(context.Background(), openai.ChatCompletionNewParams{Model: "den/default",
		Messages: []openai.ChatCompletionMessageParamUnion{
			openai.SystemMessage("Answer in French."), user("Hi"), openai.AssistantMessage("Bonjour !"), user("How are you?")}}); err != nil {
		t.Fatal(err)
	}
	msgs := h.modelMessages(t, 0)
	want := "Answer in French.\n\nEarlier in this conversation:\nuser: Hi\nassistant: Bonjour !\n\nHow are you?"
	if len(msgs) != 1 || strings.Join(msgs[0].Texts, "") != want {
		t.Errorf("the model got %+v\nwant one user message:\n%s", msgs, want)
	}
}

// TestRetryVoidsText: when the model's stream breaks after some text and
// den retries, the streamed answer is the retry's text alone: what the
// failed attempt streamed (den's own events show it) never reaches the
// client.
func TestRetryVoidsText(t *testing.T) {
	fake := llmtest.NewServer(t, []llmtest.Turn{{Text: "The answer is forty", Stop: "broken"}, {Text: "The answer is 42."}},
		func(w http.ResponseWriter, r *http.Request, turn llmtest.Turn) {
			if turn.Stop != "broken" {
				llmtest.WriteAnthropic(w, r, turn)
				return
			}
			// A stream that breaks after its first text: no message_stop.
			w.Header().Set("Content-Type", "text/event-stream")
			llmtest.SSE(w, "message_start", `{"type": "message_start", "message": {"id": "msg_broken", "type": "message", "role": "assistant", "content": [], "model": "claude-fake-1", "stop_reason": null, "stop_sequence": null, "usage": {"input_tokens": 5, "output_tokens": 1}}}`)
			llmtest.SSE(w, "content_block_start", `{"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}}`)
			llmtest.SSE(w, "content_block_delta", `{"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "`+turn.Text+`"}}`)
		})
	h := newHarness(t, &config.Config{Retry: config.Retry{Delays: []string{"1ms"}}}, fake)
	var resp *http.Response
	s := h.client.Chat.Completions.NewStreaming(context.Background(), openai.ChatCompletionNewParams{Model: "den/default",
		Messages: []openai.ChatCompletionMessageParamUnion{user("What is the answer?")}}, option.WithResponseInto(&resp))
	var acc openai.ChatCompletionAccumulator
	for s.Next() {
		acc.AddChunk(s.Current())
	}
	if err := s.Err(); err != nil {
		t.Fatal(err)
	}
	if got := acc.Choices[0].Message.Content; got != "The answer is 42." {
		t.Errorf("streamed %q, want the retry's answer alone", got)
	}
	var types []string
	for _, e := range h.events(t, resp.Header.Get(SessionHeader)) {
		if e.Type == "text" || e.Type == "retry" {
			types = append(types, e.Type+":"+field(e, "text"))
		}
	}
	if want := []string{"text:The answer is forty", "retry:"}; len(types) < 2 || !cmp.Equal(types[:2], want) {
		t.Errorf("den's events %q, want the voided text then a retry first", types)
	}
}

// TestDisconnect: a client that goes away while the agent runs a tool,
// streaming or not, cancels the den turn: the session becomes
// interrupted (the tool would otherwise sleep for ten minutes).
func TestDisconnect(t *testing.T) {
	for _, stream := range []bool{false, true} {
		t.Run(fmt.Sprintf("stream=%v", stream), func(t *testing.T) {
			h := newHarness(t, nil, llmtest.NewAnthropic(t,
				llmtest.Turn{Text: "Sleeping.", Calls: []llmtest.Call{{ID: "toolu_1", Name: "shell_execute", Input: `{"command":"sleep 600"}`}}},
				llmtest.Turn{Text: "Woke up."}))
			after, err := h.rt.LastEventID(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			params := openai.ChatCompletionNewParams{Model: "den/default", Messages: []openai.ChatCompletionMessageParamUnion{user("Sleep.")}}
			done := make(chan error, 1)
			go func() {
				if !stream {
					_, err := h.client.Chat.Completions.New(ctx, params, option.WithMaxRetries(0))
					done <- err
					return
				}
				s := h.client.Chat.Completions.NewStreaming(ctx, params, option.WithMaxRetries(0))
				for s.Next() {
				}
				done <- s.Err()
			}()
			call := h.waitEvent(t, "", after, isType("tool_call"))
			cancel()
			select {
			case err := <-done:
				if err == nil {
					t.Error("the canceled request succeeded")
				}
			case <-time.After(time.Minute):
				t.Fatal("the canceled request did not return")
			}
			h.waitEvent(t, call.Session, call.ID, isStatus(event.Interrupted))
			if sess, err := h.st.GetSession(context.Background(), call.Session); err != nil || sess.Status != event.Interrupted {
				t.Errorf("session %+v %v, want interrupted", sess, err)
			}
		})
	}
}

// TestBusy: a message for a session that is running a turn is queued
// (once: the client's SDK is told not to retry) and answered 409.
func TestBusy(t *testing.T) {
	h := newHarness(t, nil, llmtest.NewAnthropic(t,
		llmtest.Turn{Text: "Sleeping.", Calls: []llmtest.Call{{ID: "toolu_1", Name: "shell_execute", Input: `{"command":"sleep 600"}`}}},
		llmtest.Turn{Text: "Woke up."}))
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan struct{})
	go func() {
		defer close(done)
		h.client.Chat.Completions.New(ctx, openai.ChatCompletionNewParams{Model: "den/default",
			Messages: []openai.ChatCompletionMessageParamUnion{user("Sleep.")}}, option.WithMaxRetries(0))
	}()
	call := h.waitEvent(t, "", 0, isType("tool_call"))
	var resp *http.Response
	_, err := h.client.Chat.Completions.New(context.Background(), openai.ChatCompletionNewParams{Model: "den/default",
		Messages: []openai.ChatCompletionMessageParamUnion{user("Are you there?")}},
		option.WithHeader(SessionHeader, call.Session), option.WithResponseInto(&resp))
	var ae *openai.Error
	if !errors.As(err, &ae) || ae.StatusCode != http.StatusConflict || ae.Code != "session_busy" {
		t.Fatalf("%v, want 409 session_busy", err)
	}
	q, err := h.st.QueuedMessages(context.Background(), call.Session)
	if err != nil || len(q) != 1 || q[0].Text != "Are you there?" {
		t.Errorf("queued %+v %v, want the message once", q, err)
	}
	cancel()
	<-done
}

// TestRequestErrors: what OpenAI's API refuses, den refuses the same
// way, before any session is made (the runtime here has only a config).
func TestRequestErrors(t *testing.T) {
	srv := serve(&Handler{RT: configOnly{cfg: &config.Config{}}})
	defer srv.Close()
	c := client(srv.URL)
	for _, tc := range []struct {
		name   string
		params openai.ChatCompletionNewParams
		status int
		param  string
		code   string
	}{
		{"unknown model", openai.ChatCompletionNewParams{Model: "gpt-4o", Messages: []openai.ChatCompletionMessageParamUnion{user("Hi")}},
			404, "model", "model_not_found"},
		{"unknown agent", openai.ChatCompletionNewParams{Model: "den/nobody", Messages: []openai.ChatCompletionMessageParamUnion{user("Hi")}},
			404, "model", "model_not_found"},
		{"last message not the user's", openai.ChatCompletionNewParams{Model: "den/default",
			Messages: []openai.ChatCompletionMessageParamUnion{user("Hi"), openai.AssistantMessage("Hello.")}},
			400, "messages[1].role", "invalid_value"},
		{"no messages", openai.ChatCompletionNewParams{Model: "den/default", Messages: []openai.ChatCompletionMessageParamUnion{}},
			400, "messages", "empty_array"},
		{"an image", openai.ChatCompletionNewParams{Model: "den/default", Messages: []openai.ChatCompletionMessageParamUnion{
			openai.UserMessage([]openai.ChatCompletionContentPartUnionParam{openai.TextContentPart("What is this?"),
				openai.ImageContentPart(openai.ChatCompletionContentPartImageImageURLParam{URL: "https://example.com/a.png"})})}},
			400, "messages[0].content[1].type", "unsupported_value"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := c.Chat.Completions.New(context.Background(), tc.params)
			var ae *openai.Error
			if !errors.As(err, &ae) {
				t.Fatalf("%v, want an *openai.Error", err)
			}
			if ae.StatusCode != tc.status || ae.Param != tc.param || ae.Code != tc.code || ae.Type != "invalid_request_error" || ae.Message == "" {
				t.Errorf("%d %q %q %q %q, want %d %q %q", ae.StatusCode, ae.Type, ae.Param, ae.Code, ae.Message, tc.status, tc.param, tc.code)
			}
		})
	}
}

// TestModels: the models are den/default and the config's agents.
func TestModels(t *testing.T) {
	srv := serve(&Handler{RT: configOnly{cfg: &config.Config{Agents: map[string]config.Agent{"writer": {}, "coder": {}}}}})
	defer srv.Close()
	c := client(srv.URL)
	page, err := c.Models.List(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, m := range page.Data {
		ids = append(ids, m.ID)
		if m.Object != "model" || m.OwnedBy != "den" || m.Created == 0 {
			t.Errorf("model %+v", m)
		}
	}
	if diff := cmp.Diff([]string{"den/default", "den/coder", "den/writer"}, ids); diff != "" {
		t.Errorf("models (-want +got):\n%s", diff)
	}
}
