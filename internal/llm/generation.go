package llm

import "strings"

// Generation is N of a model named family followed by N (a number) and
// anything else: Generation("gemini-3.8-flash", "gemini-") is 3 and
// Generation("gpt-6.2-sol", "gpt-") is 6. It is 0 for a name that does
// not start with family and a number. Adapters use it to choose the
// request parameters a model generation takes.
func Generation(model, family string) int {
	rest, ok := strings.CutPrefix(model, family)
	if !ok {
		return 0
	}
	n := 0
	for i := 0; i < len(rest) && rest[i] >= '0' && rest[i] <= '9' && n < 1_000_000; i++ {
		n = n*10 + int(rest[i]-'0')
	}
	return n
}
