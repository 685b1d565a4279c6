package retry

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"strings"
	"syscall"

	"den.dev/den/internal/llm"
)

// Class is the kind of a model failure; it decides whether the same
// model is tried again, the next target answers instead, or the turn
// ends.
type Class string

// The classes.
const (
	RateLimit       Class = "rate_limit"       // HTTP 429, a rate-limit error type
	Overloaded      Class = "overloaded"       // HTTP 529, an "overloaded" error type or message
	Server          Class = "server"           // other 5xx, a server error type
	Network         Class = "network"          // refused or reset connection, DNS, a broken stream (llm.ErrStream)
	Stall           Class = "stall"            // no stream event within Policy.Stall (ErrStall)
	Empty           Class = "empty"            // a completion with nothing in it (llm.ErrEmpty)
	Auth            Class = "auth"             // HTTP 401/402/403, exhausted quota, llm.ErrNoKey
	Invalid         Class = "invalid"          // HTTP 400/404/422: the provider rejected the request
	ContextOverflow Class = "context_overflow" // the prompt does not fit the model's context window
	Refusal         Class = "refusal"          // a content-policy rejection
	Canceled        Class = "canceled"         // the caller's context ended
	Unknown         Class = "unknown"          // anything else
)

// Retryable reports whether the same target is worth trying again
// after a delay: rate_limit, overloaded, server, network, stall, empty.
func (c Class) Retryable() bool {
	switch c {
	case RateLimit, Overloaded, Server, Network, Stall, Empty:
		return true
	}
	return false
}

// Fallbackable reports whether the next target may answer after a
// failure of this class: at once for auth and invalid (the provider
// rejected the request or the key), and for the retryable classes once
// their retries are used up or the server asks for a wait longer than
// Policy.MaxRetryAfter.
func (c Class) Fallbackable() bool {
	return c == Auth || c == Invalid || c.Retryable()
}

// terminal reports whether a failure of class c ends the turn whatever
// the strategy: another model would not do better.
func (c Class) terminal() bool {
	return c == ContextOverflow || c == Refusal || c == Canceled
}

// Classify sorts err into a class; Classify(nil) is "". It looks
// through wrapping, so an error the Model returns classifies as the
// failure that caused it.
func Classify(err error) Class {
	if err == nil {
		return ""
	}
	var ex *ExhaustedError
	if errors.As(err, &ex) && len(ex.Failures) > 0 {
		return ex.Failures[len(ex.Failures)-1].Class
	}
	var re *Error
	if errors.As(err, &re) && re.Class != "" {
		return re.Class
	}
	var ae *llm.APIError
	switch {
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		return Canceled
	case errors.Is(err, ErrStall):
		return Stall
	case errors.Is(err, llm.ErrNoKey):
		return Auth
	case errors.Is(err, llm.ErrEmpty):
		return Empty
	case errors.As(err, &ae):
		return classifyAPI(ae)
	case errors.Is(err, llm.ErrStream):
		return Network
	case isNetwork(err):
		return Network
	}
	return Unknown
}

// isNetwork reports whether err is a transport failure.
func isNetwork(err error) bool {
	var (
		op  *net.OpError
		dns *net.DNSError
	)
	return errors.As(err, &op) || errors.As(err, &dns) ||
		errors.Is(err, syscall.ECONNREFUSED) || errors.Is(err, syscall.ECONNRESET) ||
		errors.Is(err, syscall.EPIPE) || errors.Is(err, io.ErrUnexpectedEOF) ||
		errors.Is(err, io.EOF) || errors.Is(err, net.ErrClosed)
}

// classifyAPI sorts a provider's error answer by its message and type
// first (an overflow or an overload says so in words whatever the
// status), then by its HTTP status.
func classifyAPI(e *llm.APIError) Class {
	text := strings.ToLower(e.Type + " " + e.Message)
	typ := strings.ToLower(e.Type)
	switch e.Status {
	case 0, http.StatusBadRequest, http.StatusRequestEntityTooLarge, http.StatusUnprocessableEntity:
		if isOverflow(text) {
			return ContextOverflow
		}
	}
	if containsAny(text, refusalMarks) {
		return Refusal
	}
	switch {
	case containsAny(typ, []string{"insufficient_quota", "billing"}):
		return Auth // retrying an empty account does not help
	case e.Status == 529 || strings.Contains(text, "overloaded"):
		return Overloaded
	case e.Status == http.StatusTooManyRequests:
		return RateLimit
	case e.Status == http.StatusUnauthorized, e.Status == http.StatusPaymentRequired, e.Status == http.StatusForbidden:
		return Auth
	case e.Status == http.StatusRequestTimeout:
		return Network
	case e.Status == http.StatusRequestEntityTooLarge:
		return ContextOverflow
	case e.Status >= 500:
		return Server
	case e.Status == http.StatusBadRequest, e.Status == http.StatusNotFound, e.Status == http.StatusUnprocessableEntity:
		return Invalid
	case e.Status == 0:
		return classifyType(typ)
	}
	return Unknown
}

// classifyType sorts an error that arrived inside a stream (no HTTP
// status) by the provider's error type.
func classifyType(typ string) Class {
	switch {
	case containsAny(typ, []string{"rate_limit", "resource_exhausted", "too_many"}):
		return RateLimit
	case containsAny(typ, []string{"authentication", "permission", "unauthenticated", "invalid_api_key"}):
		return Auth
	case containsAny(typ, []string{"invalid", "not_found"}):
		return Invalid
	case containsAny(typ, []string{"server", "api_error", "internal", "unavailable", "timeout", "deadline"}):
		return Server
	}
	return Unknown
}

// overflowMarks are how providers say the prompt is too long:
// Anthropic, OpenAI and compatible servers, Gemini, Mistral, Groq,
// llama.cpp, vLLM and Ollama.
var overflowMarks = []string{
	"prompt is too long",
	"context_length_exceeded",
	"maximum context length",
	"context length",
	"context window",
	"exceeds the maximum number of tokens",
	"input token count",
	"too many input tokens",
	"prompt too long",
	"input is too long",
	"request_too_large",
	"reduce the length of the messages",
	"exceed_context_size",
	"exceeds the context",
}

// refusalMarks are how providers say a request broke a content policy.
var refusalMarks = []string{
	"content_policy",
	"content_filter",
	"content management policy",
	"responsibleaipolicyviolation",
	"refusal",
	"prohibited_content",
}

func isOverflow(text string) bool {
	return containsAny(text, overflowMarks)
}

func containsAny(s string, subs []string) bool {
	for _, sub := range subs {
		if strings.Contains(s, sub) {
			return true
		}
	}
	return false
}
