package openaiapi

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/openai/openai-go/v3/packages/ssestream"

	"den.dev/den/internal/llm"
)

// StreamError turns what ended a stream early into den's errors: the
// context's error when it was cancelled, HTTPError for an HTTP error
// answer, an *llm.APIError with Status 0 for an error object inside the
// stream, and otherwise err wrapped with llm.ErrStream. api prefixes the
// message and names the adapter in an APIError.
func StreamError(ctx context.Context, api string, resp *http.Response, err error) error {
	if ctx.Err() != nil {
		return fmt.Errorf("%s: %w", api, ctx.Err())
	}
	if resp != nil && resp.StatusCode >= 400 {
		return HTTPError(api, resp)
	}
	var se *ssestream.StreamError
	if errors.As(err, &se) {
		e := errorBody(api, se.Event.Data)
		if e.Message == "" {
			e.Message = se.Message
		}
		return e
	}
	return fmt.Errorf("%s: %w: %w", api, llm.ErrStream, err)
}

// HTTPError reads an error answer, whose body the SDK leaves readable,
// into an *llm.APIError with the status and the Retry-After hint.
func HTTPError(api string, resp *http.Response) *llm.APIError {
	var body []byte
	if resp.Body != nil {
		body, _ = io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	}
	e := errorBody(api, body)
	e.Status = resp.StatusCode
	if e.Message == "" {
		e.Message = http.StatusText(resp.StatusCode)
	}
	e.RetryAfter = llm.RetryAfter(resp.Header, time.Now())
	return e
}

// errorBody parses the error shapes OpenAI and compatible servers send:
// {"error":{"message","type","code"}}, {"error":"text"}, {"message":...},
// or plain text. Type prefers a string code ("rate_limit_exceeded") over
// the type ("requests").
func errorBody(api string, body []byte) *llm.APIError {
	e := &llm.APIError{API: api}
	var wrap struct {
		Error   json.RawMessage `json:"error"`
		Message string          `json:"message"`
		Type    string          `json:"type"`
		Code    json.RawMessage `json:"code"`
	}
	if json.Unmarshal(body, &wrap) != nil {
		e.Message = strings.TrimSpace(string(body))
		return e
	}
	e.Message, e.Type = wrap.Message, pick(wrap.Code, wrap.Type)
	var text string
	if json.Unmarshal(wrap.Error, &text) == nil {
		e.Message = text
		return e
	}
	var obj struct {
		Message string          `json:"message"`
		Type    string          `json:"type"`
		Code    json.RawMessage `json:"code"`
	}
	if json.Unmarshal(wrap.Error, &obj) == nil && (obj.Message != "" || obj.Type != "") {
		e.Message, e.Type = obj.Message, pick(obj.Code, obj.Type)
	}
	return e
}

// pick returns code when it is a non-empty string, else typ.
func pick(code json.RawMessage, typ string) string {
	var s string
	if json.Unmarshal(code, &s) == nil && s != "" {
		return s
	}
	return typ
}
