package anthropic

import (
	"cmp"
	"encoding/json"
	"net/http"
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
		out.RetryAfter = llm.RetryAfter(e.Response.Header, time.Now())
	}
	return out
}
