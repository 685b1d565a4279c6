package openairesponses

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"net"
	"net/http"
	"net/url"
	"strings"

	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/responses"

	"den.dev/den/internal/llm"
)

// API names this adapter in errors and on the parts it makes.
const API = "openai-responses"

// Model streams turns from a Responses API endpoint.
type Model struct {
	responses responses.ResponseService
}

var _ llm.Model = (*Model)(nil)

// New returns a Model for p. It fails with an error wrapping llm.ErrNoKey
// when p has no API key, unless p.BaseURL names a server on this machine.
func New(p llm.Provider) (*Model, error) {
	local, err := isLocal(p.BaseURL)
	if err != nil {
		return nil, fmt.Errorf("openai-responses: provider %q: %w", p.Name, err)
	}
	if p.APIKey == "" && !local {
		return nil, fmt.Errorf("openai-responses: provider %q: %w", p.Name, llm.ErrNoKey)
	}
	// The service, not openai.NewClient, which would read OPENAI_*
	// variables from the environment.
	opts := []option.RequestOption{option.WithMaxRetries(0), option.WithEnvironmentProduction()}
	if p.BaseURL != "" {
		opts = append(opts, option.WithBaseURL(p.BaseURL))
	}
	if p.APIKey != "" {
		opts = append(opts, option.WithAPIKey(p.APIKey))
	}
	for k, v := range p.Headers {
		opts = append(opts, option.WithHeader(k, v))
	}
	return &Model{responses: responses.NewResponseService(opts...)}, nil
}

// Stream sends req and streams the answer. Breaking out of the loop
// cancels the request.
func (m *Model) Stream(ctx context.Context, req *llm.Request) iter.Seq2[llm.Event, error] {
	return func(yield func(llm.Event, error) bool) {
		if req == nil {
			yield(nil, errors.New("openai-responses: nil request"))
			return
		}
		params, err := params(req)
		if err != nil {
			yield(nil, fmt.Errorf("openai-responses: build request: %w", err))
			return
		}
		ctx, cancel := context.WithCancel(ctx)
		defer cancel()
		var resp *http.Response
		stream := m.responses.NewStreaming(ctx, params, option.WithResponseInto(&resp))
		defer stream.Close()

		st := state{model: req.Model}
		for stream.Next() {
			ev := stream.Current()
			evs, err := st.event(&ev)
			for _, e := range evs {
				if !yield(e, nil) {
					return
				}
			}
			if err != nil {
				yield(nil, err)
				return
			}
			if st.done {
				return
			}
		}
		if err := stream.Err(); err != nil {
			yield(nil, streamError(ctx, resp, err))
			return
		}
		yield(nil, st.end())
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
