package openairesponses

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"net/http"

	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/responses"

	"den.dev/den/internal/llm"
	"den.dev/den/internal/llm/internal/openaiapi"
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
	opts, err := openaiapi.Options(API, p)
	if err != nil {
		return nil, err
	}
	// A service, not openai.NewClient: see openaiapi.Options.
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
			yield(nil, openaiapi.StreamError(ctx, API, resp, err))
			return
		}
		yield(nil, st.end())
	}
}
