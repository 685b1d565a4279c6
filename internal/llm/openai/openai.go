package openai

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"net/http"
	"net/url"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"

	"den.dev/den/internal/llm"
	"den.dev/den/internal/llm/internal/openaiapi"
)

// API names this adapter in errors and on the Thinking parts it makes.
const API = "openai"

// Model streams turns from a Chat Completions endpoint.
type Model struct {
	chat     openai.ChatCompletionService
	official bool // OpenAI itself, not a compatible server
}

var _ llm.Model = (*Model)(nil)

// New returns a Model for p. It fails with an error wrapping llm.ErrNoKey
// when p has no API key, unless p.BaseURL names a server on this machine
// (localhost, a loopback address), as Ollama and llama.cpp need none.
func New(p llm.Provider) (*Model, error) {
	opts, err := openaiapi.Options(API, p)
	if err != nil {
		return nil, err
	}
	// A service, not openai.NewClient: see openaiapi.Options.
	return &Model{
		chat:     openai.NewChatCompletionService(opts...),
		official: isOfficial(p.BaseURL),
	}, nil
}

// Stream sends req and streams the answer. Breaking out of the loop
// cancels the request.
func (m *Model) Stream(ctx context.Context, req *llm.Request) iter.Seq2[llm.Event, error] {
	return func(yield func(llm.Event, error) bool) {
		if req == nil {
			yield(nil, errors.New("openai: nil request"))
			return
		}
		params, err := m.params(req)
		if err != nil {
			yield(nil, fmt.Errorf("openai: build request: %w", err))
			return
		}
		ctx, cancel := context.WithCancel(ctx)
		defer cancel()
		var resp *http.Response
		stream := m.chat.NewStreaming(ctx, params, option.WithResponseInto(&resp))
		defer stream.Close()

		var st state
		for stream.Next() {
			chunk := stream.Current()
			for _, ev := range st.chunk(&chunk) {
				if !yield(ev, nil) {
					return
				}
			}
		}
		if err := stream.Err(); err != nil {
			yield(nil, openaiapi.StreamError(ctx, API, resp, err))
			return
		}
		evs, err := st.end()
		for _, ev := range evs {
			if !yield(ev, nil) {
				return
			}
		}
		if err != nil {
			yield(nil, err)
		}
	}
}

// isOfficial reports whether base is OpenAI's own API.
func isOfficial(base string) bool {
	if base == "" {
		return true
	}
	u, err := url.Parse(base)
	return err == nil && u.Hostname() == "api.openai.com"
}
