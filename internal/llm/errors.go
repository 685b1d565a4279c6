package llm

import (
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"time"
)

// APIError is a provider's error answer, as adapters report it. Status
// is the HTTP status (0 when the stream itself failed); Type is the
// provider's error type when it gives one ("overloaded_error",
// "rate_limit_exceeded", ...). RetryAfter is the server's Retry-After
// (or retry-after-ms) hint, 0 when absent.
type APIError struct {
	API        string
	Status     int
	Type       string
	Message    string
	RetryAfter time.Duration
}

func (e *APIError) Error() string {
	if e.Status == 0 {
		return fmt.Sprintf("%s: %s: %s", e.API, e.Type, e.Message)
	}
	return fmt.Sprintf("%s: HTTP %d %s: %s", e.API, e.Status, e.Type, e.Message)
}

// Errors adapters wrap when the cause is not an API answer.
var (
	// ErrNoKey means the provider has no API key configured.
	ErrNoKey = errors.New("no API key")
	// ErrStream means the stream broke (a disconnect, malformed data).
	ErrStream = errors.New("broken stream")
	// ErrEmpty means a 200 answer carried no text, no tool call and no
	// stop reason.
	ErrEmpty = errors.New("empty completion")
)

// RetryAfter reads a provider's wait hint from response headers:
// retry-after-ms (milliseconds), else Retry-After (seconds or an HTTP
// date). It is 0 when there is none, or it is not in the future.
func RetryAfter(h http.Header, now time.Time) time.Duration {
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
