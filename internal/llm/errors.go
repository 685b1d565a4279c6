package llm

import (
	"errors"
	"fmt"
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
