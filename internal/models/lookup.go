package models

import "strings"

// lookup finds the catalog entry for a model name as a user, a provider
// or a gateway writes it, and the entry's canonical (catalog) name. The
// rules are in the package doc: the name is normalized, then tried
// whole and again after each recognised suffix is dropped from its
// end, so the longest catalog name that fits wins and a name with an
// unrecognised tail ("gpt-5-codex") matches nothing. A ":free" variant
// (OpenRouter) keeps the entry's limits and costs nothing.
func lookup(model string) (Info, string, bool) {
	name, free := normalize(model)
	for {
		if key, ok := find(name); ok {
			i := catalog[key].info()
			if free {
				i.PriceInput, i.PriceOutput, i.PriceCacheRead, i.PriceCacheWrite = 0, 0, 0, 0
			}
			return i, key, true
		}
		shorter, ok := trim(name)
		if !ok {
			return Info{}, "", false
		}
		name = shorter
	}
}

// find returns the catalog name for a normalized name: an alias, or the
// catalog name that normalizes to it.
func find(name string) (string, bool) {
	if key, ok := aliases[name]; ok {
		return key, true
	}
	if _, ok := catalog[name]; ok {
		return name, true
	}
	for key := range catalog {
		if dashed(key) == name {
			return key, true
		}
	}
	return "", false
}

// normalize lowercases a model name, drops a gateway's "vendor/" prefix
// and any ":variant", "@version" or "[…]" tail, and reads dots as
// dashes: "anthropic/claude-sonnet-4.5:thinking" is "claude-sonnet-4-5".
// free reports an OpenRouter ":free" variant.
func normalize(model string) (name string, free bool) {
	name = strings.ToLower(strings.TrimSpace(model))
	name = name[strings.LastIndexByte(name, '/')+1:]
	if i := strings.IndexAny(name, ":@["); i >= 0 {
		free = strings.HasPrefix(name[i:], ":free")
		name = name[:i]
	}
	return dashed(name), free
}

func dashed(name string) string { return strings.ReplaceAll(name, ".", "-") }

// suffixWords are dash-separated words that name a variant of the same
// model: a moving alias, a preview or experimental release, the thinking
// mode of a model that has one, or Anthropic's "-0" for a ".0" release
// (claude-sonnet-4-0). Words that change the model or its price — mini,
// pro, fast, turbo, codex, chat — are not among them.
var suffixWords = map[string]bool{"latest": true, "preview": true, "exp": true, "thinking": true, "0": true}

// trim drops one recognised suffix from the end of a normalized name: a
// suffix word, a date (20250929; 2025-08-07; 05-20, month first; 09-2025)
// or a snapshot number of three or four digits (0709, 001). ok is false
// when the name ends in none, or is nothing but the suffix.
func trim(name string) (shorter string, ok bool) {
	toks := strings.Split(name, "-")
	n := len(toks)
	drop := 0
	switch last := toks[n-1]; {
	case suffixWords[last], digits(last, 8):
		drop = 1
	case n >= 3 && digits(toks[n-3], 4) && digits(toks[n-2], 2) && digits(last, 2):
		drop = 3
	case n >= 2 && month(toks[n-2]) && (digits(last, 2) || digits(last, 4)):
		drop = 2
	case digits(last, 3) || digits(last, 4):
		drop = 1
	}
	if drop == 0 || drop >= n {
		return name, false
	}
	return strings.Join(toks[:n-drop], "-"), true
}

// digits reports whether s is exactly n decimal digits.
func digits(s string, n int) bool {
	if len(s) != n {
		return false
	}
	for _, c := range s {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}

// month reports whether s is a two-digit month, 01 to 12.
func month(s string) bool { return digits(s, 2) && s >= "01" && s <= "12" }
