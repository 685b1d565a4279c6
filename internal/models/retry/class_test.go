package retry

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"syscall"
	"testing"
	"time"

	"den.dev/den/internal/llm"
)

func TestClassify(t *testing.T) {
	api := func(status int, typ, msg string) error {
		return &llm.APIError{API: "test", Status: status, Type: typ, Message: msg}
	}
	tests := []struct {
		name string
		err  error
		want Class
	}{
		{"nil", nil, ""},
		// Rate limits.
		{"429", api(429, "rate_limit_error", "Number of requests exceeded"), RateLimit},
		{"429 openai", api(429, "rate_limit_exceeded", "Rate limit reached for gpt-5 on tokens per min (TPM): Limit 30000, Requested 50000."), RateLimit},
		{"429 gemini", api(429, "RESOURCE_EXHAUSTED", "Resource has been exhausted (e.g. check quota)."), RateLimit},
		{"stream rate limit", api(0, "rate_limit_exceeded", "Slow down."), RateLimit},
		{"quota used up", api(429, "insufficient_quota", "You exceeded your current quota"), Auth},
		// Overload and server errors.
		{"529", api(529, "overloaded_error", "Overloaded"), Overloaded},
		{"503 overloaded", api(503, "UNAVAILABLE", "The model is overloaded. Please try again later."), Overloaded},
		{"stream overloaded", api(0, "overloaded_error", "Overloaded"), Overloaded},
		{"500", api(500, "api_error", "Internal server error"), Server},
		{"502 proxy page", api(502, "", "<html>Bad Gateway</html>"), Server},
		{"504", api(504, "DEADLINE_EXCEEDED", "Deadline expired"), Server},
		{"stream api_error", api(0, "api_error", "Internal server error"), Server},
		{"responses failed", api(0, "server_error", "The model failed to answer."), Server},
		// Network.
		{"broken stream", fmt.Errorf("anthropic: read stream: %w: %w", llm.ErrStream, io.ErrUnexpectedEOF), Network},
		{"refused", fmt.Errorf("gemini: send: %w", &net.OpError{Op: "dial", Net: "tcp", Err: os.NewSyscallError("connect", syscall.ECONNREFUSED)}), Network},
		{"reset", fmt.Errorf("x: %w", syscall.ECONNRESET), Network},
		{"dns", fmt.Errorf("x: %w", &net.DNSError{Err: "no such host", Name: "api.example.invalid"}), Network},
		{"eof", fmt.Errorf("x: %w", io.EOF), Network},
		{"408", api(408, "", "Request Timeout"), Network},
		// Stall and empty.
		{"stall", fmt.Errorf("a/b: %w: no event for 2m0s", ErrStall), Stall},
		{"empty", fmt.Errorf("openai: %w: no text, tool call or finish reason", llm.ErrEmpty), Empty},
		// Auth.
		{"401", api(401, "authentication_error", "invalid x-api-key"), Auth},
		{"403", api(403, "PERMISSION_DENIED", "Method doesn't allow unregistered callers."), Auth},
		{"402", api(402, "", "Insufficient credits"), Auth},
		{"no key", fmt.Errorf("anthropic: provider %q: %w", "x", llm.ErrNoKey), Auth},
		// Invalid requests.
		{"400", api(400, "invalid_request_error", "messages.1.content: Field required"), Invalid},
		{"400 max_tokens", api(400, "invalid_request_error", "max_tokens: 100000 > 64000, which is the maximum allowed number of output tokens for claude-sonnet-4-5"), Invalid},
		{"404 model", api(404, "not_found_error", "model: claude-nope"), Invalid},
		{"422", api(422, "", "Unprocessable Entity"), Invalid},
		{"stream invalid", api(0, "invalid_request_error", "bad tool"), Invalid},
		// Context overflow.
		{"anthropic overflow", api(400, "invalid_request_error", "prompt is too long: 215000 tokens > 200000 maximum"), ContextOverflow},
		{"openai overflow", api(400, "context_length_exceeded", "This model's maximum context length is 128000 tokens. However, your messages resulted in 150000 tokens."), ContextOverflow},
		{"gemini overflow", api(400, "INVALID_ARGUMENT", "The input token count (1200000) exceeds the maximum number of tokens allowed (1048576)."), ContextOverflow},
		{"llama.cpp overflow", api(400, "exceed_context_size_error", "the request exceeds the available context size"), ContextOverflow},
		{"groq overflow", api(400, "invalid_request_error", "Please reduce the length of the messages or completion."), ContextOverflow},
		{"413", api(413, "request_too_large", "Request exceeds the maximum allowed number of bytes."), ContextOverflow},
		{"stream overflow", api(0, "invalid_request_error", "prompt is too long: 210000 tokens > 200000 maximum"), ContextOverflow},
		// Refusal.
		{"content policy", api(400, "content_policy_violation", "Your request was rejected as a result of our safety system."), Refusal},
		{"azure filter", api(400, "content_filter", "The response was filtered due to the prompt triggering Azure OpenAI's content management policy."), Refusal},
		// Cancellation.
		{"canceled", fmt.Errorf("anthropic: %w", context.Canceled), Canceled},
		{"deadline", fmt.Errorf("openai: %w", context.DeadlineExceeded), Canceled},
		// This package's own errors.
		{"Error", &Error{Ref: "a/b", Class: Refusal, Err: errors.New("x")}, Refusal},
		{"wrapped Error", fmt.Errorf("agent: %w", &Error{Ref: "a/b", Class: Server, Err: errors.New("x")}), Server},
		{"exhausted", &ExhaustedError{Failures: []*Error{{Ref: "a", Class: Auth, Err: llm.ErrNoKey}, {Ref: "b", Class: RateLimit, Attempts: 1, Err: errors.New("x")}}}, RateLimit},
		// Unknown.
		{"other", errors.New("something else"), Unknown},
		{"418", api(418, "", "I'm a teapot"), Unknown},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Classify(tt.err); got != tt.want {
				t.Errorf("Classify(%v) = %q, want %q", tt.err, got, tt.want)
			}
		})
	}
}

func TestClassRules(t *testing.T) {
	tests := []struct {
		c                       Class
		retryable, fallbackable bool
	}{
		{RateLimit, true, true},
		{Overloaded, true, true},
		{Server, true, true},
		{Network, true, true},
		{Stall, true, true},
		{Empty, true, true},
		{Auth, false, true},
		{Invalid, false, true},
		{ContextOverflow, false, false},
		{Refusal, false, false},
		{Canceled, false, false},
		{Unknown, false, false},
	}
	for _, tt := range tests {
		if got := tt.c.Retryable(); got != tt.retryable {
			t.Errorf("%s.Retryable() = %v", tt.c, got)
		}
		if got := tt.c.Fallbackable(); got != tt.fallbackable {
			t.Errorf("%s.Fallbackable() = %v", tt.c, got)
		}
	}
}

func TestPolicyDefaults(t *testing.T) {
	p := Policy{}.withDefaults()
	if len(p.Delays) != 5 || p.Stall != DefaultStall || p.MaxRetryAfter != DefaultMaxRetryAfter {
		t.Errorf("defaults = %+v", p)
	}
	if p := (Policy{Delays: []time.Duration{}}).withDefaults(); len(p.Delays) != 0 {
		t.Errorf("an empty Delays became %v, want no retries", p.Delays)
	}
}

func TestIsLocal(t *testing.T) {
	for base, want := range map[string]bool{
		"":                          false,
		"http://localhost:11434/v1": true,
		"http://127.0.0.1:8080":     true,
		"http://[::1]:8080/v1":      true,
		"http://ollama.localhost":   true,
		"https://api.openai.com/v1": false,
		"http://192.168.1.10:11434": false,
	} {
		if got := isLocal(base); got != want {
			t.Errorf("isLocal(%q) = %v, want %v", base, got, want)
		}
	}
}
