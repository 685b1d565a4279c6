package browser

import (
	"regexp"
	"strconv"
	"strings"
	"unicode/utf8"
)

// clip cuts s to at most n runes, marking the cut with an ellipsis.
func clip(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	r := []rune(s)
	return string(r[:max(0, n-1)]) + "…"
}

// oneSpace folds runs of white space to one space.
func oneSpace(s string) string { return strings.Join(strings.Fields(s), " ") }

// quote writes s in double quotes, escaping what a model could misread.
func quote(s string) string {
	return `"` + strings.NewReplacer(`\`, `\\`, `"`, `\"`, "\n", `\n`).Replace(s) + `"`
}

// quoteOpt is quote, or nothing for an empty string.
func quoteOpt(s string) string {
	if s == "" {
		return ""
	}
	return quote(clip(oneSpace(s), 100))
}

// cardLike finds runs of 13 to 19 digits, spaced or dashed.
var cardLike = regexp.MustCompile(`\b\d(?:[ -]?\d){12,18}\b`)

// looksLikeCard reports whether s is a payment card number: 13 to 19
// digits (spaces and dashes aside) that pass the Luhn check.
func looksLikeCard(s string) bool {
	s = strings.TrimSpace(s)
	return cardLike.FindString(s) == s && s != "" && luhn(s)
}

// maskCards hides the card numbers in s but for their last four digits.
func maskCards(s string) string {
	if !strings.ContainsAny(s, "0123456789") {
		return s
	}
	return cardLike.ReplaceAllStringFunc(s, func(m string) string {
		if !luhn(m) {
			return m
		}
		digits := strings.NewReplacer(" ", "", "-", "").Replace(m)
		return "•••• " + digits[len(digits)-4:] + " (card number hidden)"
	})
}

func luhn(s string) bool {
	sum, n := 0, 0
	for i := len(s) - 1; i >= 0; i-- {
		c := s[i]
		if c == ' ' || c == '-' {
			continue
		}
		d, err := strconv.Atoi(string(c))
		if err != nil {
			return false
		}
		if n%2 == 1 {
			d *= 2
			if d > 9 {
				d -= 9
			}
		}
		sum += d
		n++
	}
	return n >= 13 && n <= 19 && sum%10 == 0
}
