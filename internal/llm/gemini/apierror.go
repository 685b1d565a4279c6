package gemini

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"time"

	"den.dev/den/internal/llm"
)

// errorBody is Google's error object: {"error": {code, message, status,
// details}}.
type errorBody struct {
	Code    int    `json:"code"`
	Message string `json:"message"`
	Status  string `json:"status"`
	Details []struct {
		Type       string `json:"@type"`
		RetryDelay string `json:"retryDelay"`
	} `json:"details"`
}

// apiError converts e; retryAfter, when positive, wins over the
// RetryInfo detail.
func (e *errorBody) apiError(status int, retryAfter time.Duration) *llm.APIError {
	ae := &llm.APIError{API: "gemini", Status: status, Type: e.Status, Message: e.Message, RetryAfter: retryAfter}
	if ae.RetryAfter <= 0 {
		ae.RetryAfter = 0
		for _, d := range e.Details {
			if strings.HasSuffix(d.Type, "google.rpc.RetryInfo") {
				if v, err := time.ParseDuration(d.RetryDelay); err == nil && v > 0 {
					ae.RetryAfter = v
				}
			}
		}
	}
	return ae
}

// maxErrorBody bounds how much of an error answer is read.
const maxErrorBody = 1 << 20

// readAPIError turns a non-2xx answer into an *llm.APIError.
func readAPIError(resp *http.Response) *llm.APIError {
	raw, _ := io.ReadAll(io.LimitReader(resp.Body, maxErrorBody))
	raw = bytes.TrimSpace(raw)
	retry := llm.RetryAfter(resp.Header, time.Now())
	var e struct {
		Error *errorBody `json:"error"`
	}
	if len(raw) > 0 && raw[0] == '[' { // some Google endpoints wrap errors in an array
		var list []json.RawMessage
		if json.Unmarshal(raw, &list) == nil && len(list) > 0 {
			raw = list[0]
		}
	}
	if json.Unmarshal(raw, &e) == nil && e.Error != nil {
		return e.Error.apiError(resp.StatusCode, retry)
	}
	msg := string(raw)
	if len(msg) > 500 {
		msg = strings.ToValidUTF8(msg[:500], "") + "…"
	}
	if msg == "" {
		msg = http.StatusText(resp.StatusCode)
	}
	return &llm.APIError{API: "gemini", Status: resp.StatusCode, Message: msg, RetryAfter: retry}
}
