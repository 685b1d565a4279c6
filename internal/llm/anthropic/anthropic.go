package anthropic

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"maps"
	"net/http"
	"slices"

	"github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/anthropics/anthropic-sdk-go/v2/option"

	"den.dev/den/internal/llm"
)

// api names this adapter's wire format in llm.Thinking, llm.ToolCall
// and llm.APIError.
const api = "anthropic"

// Model streams turns from the Anthropic Messages API.
type Model struct {
	client anthropic.Client
}

var _ llm.Model = (*Model)(nil)

// New returns a Model that reaches the API as p says: p.APIKey is
// required (an error wrapping llm.ErrNoKey otherwise), p.BaseURL ""
// means the SDK's default (https://api.anthropic.com/), and p.Headers
// are added to every request. Nothing is read from the environment.
func New(p llm.Provider) (*Model, error) {
	if p.APIKey == "" {
		return nil, fmt.Errorf("anthropic: provider %q: %w", p.Name, llm.ErrNoKey)
	}
	opts := []option.RequestOption{
		option.WithoutEnvironmentDefaults(),
		option.WithAPIKey(p.APIKey),
		option.WithMaxRetries(0), // retries live above the adapters
	}
	if p.BaseURL != "" {
		opts = append(opts, option.WithBaseURL(p.BaseURL))
	}
	for _, k := range slices.Sorted(maps.Keys(p.Headers)) {
		opts = append(opts, option.WithHeader(k, p.Headers[k]))
	}
	return &Model{client: anthropic.NewClient(opts...)}, nil
}

// Stream sends req and yields the answer's events as they arrive. An
// error ends the stream; breaking out of the loop cancels the request.
func (m *Model) Stream(ctx context.Context, req *llm.Request) iter.Seq2[llm.Event, error] {
	return func(yield func(llm.Event, error) bool) {
		params, err := newParams(req)
		if err != nil {
			yield(nil, err)
			return
		}
		ctx, cancel := context.WithCancel(ctx)
		defer cancel()

		var resp *http.Response
		stream := m.client.Messages.NewStreaming(ctx, params, option.WithResponseInto(&resp))
		defer stream.Close()

		var d decoder
		for stream.Next() {
			evs, err := d.decode(stream.Current())
			if err != nil {
				yield(nil, err)
				return
			}
			for _, ev := range evs {
				if !yield(ev, nil) {
					return
				}
			}
			if d.done {
				return
			}
		}
		if err := stream.Err(); err != nil {
			yield(nil, streamError(ctx, resp, err))
			return
		}
		yield(nil, fmt.Errorf("anthropic: %w: stream ended before message_stop", llm.ErrStream))
	}
}

// streamError maps what ended a stream early onto llm's errors.
func streamError(ctx context.Context, resp *http.Response, err error) error {
	var aerr *anthropic.Error
	switch {
	case ctx.Err() != nil:
		return fmt.Errorf("anthropic: %w", context.Cause(ctx))
	case errors.As(err, &aerr):
		return apiError(aerr)
	case resp == nil:
		return fmt.Errorf("anthropic: send request: %w: %w", llm.ErrStream, err)
	default:
		return fmt.Errorf("anthropic: read stream: %w: %w", llm.ErrStream, err)
	}
}
