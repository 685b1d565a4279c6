package llm

import "testing"

func TestGeneration(t *testing.T) {
	for _, tc := range []struct {
		model, family string
		want          int
	}{
		{"gemini-3.8-flash", "gemini-", 3},
		{"gemini-2.5-pro", "gemini-", 2},
		{"gemini-exp-1206", "gemini-", 0},
		{"gpt-6.2-sol", "gpt-", 6},
		{"gpt-10", "gpt-", 10},
		{"gpt-", "gpt-", 0},
		{"chatgpt-4o", "gpt-", 0},
		{"gpt-99999999999999999999", "gpt-", 9_999_999},
	} {
		if got := Generation(tc.model, tc.family); got != tc.want {
			t.Errorf("Generation(%q, %q) = %d, want %d", tc.model, tc.family, got, tc.want)
		}
	}
}
