package anthropic

import (
	"cmp"
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/anthropics/anthropic-sdk-go/v2"

	"den.dev/den/internal/llm"
)

// maxErrorBody bounds how much of an error body that is not the API's
// JSON ends up in APIError.Message.
const maxErrorBody = 512

// apiError maps the SDK's error onto llm's. The SDK reports an SSE
// error event with the stream's own (2xx) status; that becomes Status 0.
func apiError(e *anthropic.Error) *llm.APIError {
	out := &llm.APIError{
		API:     api,
		Status:  e.StatusCode,
		Type:    string(e.Type()),
		Message: e.Message,
	}
	if out.Status >= 200 && out.Status < 300 {
		out.Status = 0
	}
	raw := e.RawJSON()
	if out.Type == "" || out.Message == "" {
		var body struct {
			Error struct {
				Type    string `json:"type"`
				Message string `json:"message"`
			} `json:"error"`
		}
		if json.Unmarshal([]byte(raw), &body) == nil {
			out.Type = cmp.Or(out.Type, body.Error.Type)
			out.Message = cmp.Or(out.Message, body.Error.Message)
		}
	}
	if out.Message == "" {
		// Not the API's JSON: a proxy's page, say.
		msg := strings.TrimSpace(raw)
		if len(msg) > maxErrorBody {
			msg = msg[:maxErrorBody] + "…"
		}
		out.Message = cmp.Or(msg, http.StatusText(out.Status))
	}
	if out.Status != 0 && e.Response != nil {
		out.RetryAfter = retryAfter(e.Response.Header, time.Now())
	}
	return out
}

// retryAfter reads the server's hint: retry-after-ms (milliseconds,
// Anthropic's), else retry-after (seconds or an HTTP date). It returns
// 0 when there is none or it makes no sense.
func retryAfter(h http.Header, now time.Time) time.Duration {
	if v := h.Get("Retry-After-Ms"); v != "" {
		if ms, err := strconv.ParseFloat(v, 64); err == nil && ms > 0 {
			return time.Duration(ms * float64(time.Millisecond))
		}
	}
	v := h.Get("Retry-After")
	if v == "" {
		return 0
	}
	if s, err := strconv.ParseFloat(v, 64); err == nil {
		if s <= 0 {
			return 0
		}
		return time.Duration(s * float64(time.Second))
	}
	if t, err := http.ParseTime(v); err == nil && t.After(now) {
		return t.Sub(now)
	}
	return 0
}
