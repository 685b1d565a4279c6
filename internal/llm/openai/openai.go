package openai

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"net"
	"net/http"
	"net/url"
	"strings"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"

	"den.dev/den/internal/llm"
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
	local, err := isLocal(p.BaseURL)
	if err != nil {
		return nil, fmt.Errorf("openai: provider %q: %w", p.Name, err)
	}
	if p.APIKey == "" && !local {
		return nil, fmt.Errorf("openai: provider %q: %w", p.Name, llm.ErrNoKey)
	}
	// The service, not openai.NewClient: a client would read OPENAI_*
	// variables from the environment, and den's configuration is explicit.
	opts := []option.RequestOption{
		option.WithMaxRetries(0),
		option.WithEnvironmentProduction(),
	}
	if p.BaseURL != "" {
		opts = append(opts, option.WithBaseURL(p.BaseURL))
	}
	if p.APIKey != "" {
		opts = append(opts, option.WithAPIKey(p.APIKey))
	}
	for k, v := range p.Headers {
		opts = append(opts, option.WithHeader(k, v))
	}
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
			yield(nil, streamError(ctx, resp, err))
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

// isLocal reports whether base names a server on this machine.
func isLocal(base string) (bool, error) {
	if base == "" {
		return false, nil
	}
	u, err := url.Parse(base)
	if err != nil {
		return false, fmt.Errorf("bad base URL: %w", err)
	}
	host := u.Hostname()
	if host == "localhost" || strings.HasSuffix(host, ".localhost") {
		return true, nil
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback(), nil
}

// isOfficial reports whether base is OpenAI's own API.
func isOfficial(base string) bool {
	if base == "" {
		return true
	}
	u, err := url.Parse(base)
	return err == nil && u.Hostname() == "api.openai.com"
}
