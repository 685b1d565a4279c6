package openaiapi

import (
	"errors"
	"net/http"
	"testing"
	"time"

	"den.dev/den/internal/llm"
)

func TestOptions(t *testing.T) {
	for _, tc := range []struct {
		base, key string
		want      error // nil: options, no error
	}{
		{"", "sk", nil},
		{"", "", llm.ErrNoKey},
		{"https://api.deepseek.com", "", llm.ErrNoKey},
		{"http://localhost:11434/v1", "", nil},
		{"http://ollama.localhost/v1", "", nil},
		{"http://127.0.0.1:8080", "", nil},
		{"http://[::1]:8000/v1", "", nil},
		{"http://10.0.0.2:8000/v1", "", llm.ErrNoKey},
	} {
		_, err := Options("openai", llm.Provider{Name: "p", BaseURL: tc.base, APIKey: tc.key})
		if !errors.Is(err, tc.want) || (tc.want == nil) != (err == nil) {
			t.Errorf("base %q, key %q: err = %v, want %v", tc.base, tc.key, err, tc.want)
		}
	}
	if _, err := Options("openai", llm.Provider{Name: "p", BaseURL: "http://bad host/"}); err == nil {
		t.Error("a base URL that does not parse: no error")
	}
}

func TestRetryAfter(t *testing.T) {
	for _, tc := range []struct {
		ms, s string
		want  time.Duration
	}{
		{"", "", 0},
		{"1500", "2", 1500 * time.Millisecond},
		{"", "7", 7 * time.Second},
		{"", "0.5", 500 * time.Millisecond},
		{"", "-3", 0},
		{"", "soon", 0},
		{"", "Mon, 02 Jan 2006 15:04:05 GMT", 0}, // in the past
	} {
		h := http.Header{}
		if tc.ms != "" {
			h.Set("Retry-After-Ms", tc.ms)
		}
		if tc.s != "" {
			h.Set("Retry-After", tc.s)
		}
		if got := llm.RetryAfter(h, time.Now()); got != tc.want {
			t.Errorf("retry-after-ms %q, retry-after %q: %v, want %v", tc.ms, tc.s, got, tc.want)
		}
	}
	future := time.Now().Add(time.Hour).UTC().Format(http.TimeFormat)
	if got := llm.RetryAfter(http.Header{"Retry-After": {future}}, time.Now()); got <= 0 || got > time.Hour {
		t.Errorf("retry-after %s: %v, want within the hour", future, got)
	}
}
