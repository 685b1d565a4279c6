package config

import (
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"
)

// parseKey reads a dotted key as den's commands take it: parts joined
// by dots, each either bare (letters, digits, '_' and '-') or written
// in double quotes. A quoted part is taken as written: it may hold
// spaces and dots but no quote, backslash or control character. Every
// other key is an error, so a key can never carry TOML syntax (a ']',
// an '=', a newline) into the file.
func parseKey(key string) ([]string, error) {
	parts, err := splitKey(key)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrBadKey, err)
	}
	return parts, nil
}

func splitKey(key string) ([]string, error) {
	if key == "" {
		return nil, fmt.Errorf("empty key")
	}
	if !utf8.ValidString(key) {
		return nil, fmt.Errorf("key %q is not valid UTF-8", key)
	}
	var parts []string
	for rest := key; ; {
		var part string
		if strings.HasPrefix(rest, `"`) {
			end := strings.IndexByte(rest[1:], '"')
			if end < 0 {
				return nil, fmt.Errorf("key %q: a quote is not closed", key)
			}
			part, rest = rest[1:1+end], rest[2+end:]
			if part == "" {
				return nil, fmt.Errorf("key %q: an empty quoted part", key)
			}
			for _, r := range part {
				if r == '\\' || unicode.IsControl(r) {
					return nil, fmt.Errorf("key %q: quoted parts may not hold %q", key, r)
				}
			}
		} else {
			end := strings.IndexByte(rest, '.')
			if end < 0 {
				end = len(rest)
			}
			part, rest = rest[:end], rest[end:]
			if !bare(part) {
				return nil, fmt.Errorf("key %q: part %q: want letters, digits, '_' and '-', or a part in double quotes", key, part)
			}
		}
		parts = append(parts, part)
		if rest == "" {
			return parts, nil
		}
		if rest[0] != '.' || len(rest) == 1 {
			return nil, fmt.Errorf("key %q: want a '.' between parts", key)
		}
		rest = rest[1:]
	}
}

// bare reports whether s can be written as a bare TOML key.
func bare(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '_' || c == '-') {
			return false
		}
	}
	return true
}

// keyString writes parts as a TOML dotted key: bare parts as they are,
// the others as basic strings.
func keyString(parts []string) string {
	out := make([]string, len(parts))
	for i, p := range parts {
		if bare(p) {
			out[i] = p
		} else {
			out[i] = basicString(p)
		}
	}
	return strings.Join(out, ".")
}
