package config

import (
	"bytes"
	"fmt"
	"net/url"
	"sort"
	"strings"

	"github.com/BurntSushi/toml"
)

// Redact returns a config file's text with every secret's value
// replaced by "" (an api_key left empty makes den read the provider's
// key from the environment again), and a password in a URL
// (base_url = "https://user:pw@host") taken out of it; keys lists what
// was changed, as dotted keys. Comments and every other line stay as
// they were, unless a secret sits where den cannot change it line by
// line (an inline table): then the file is written anew from its
// values, without comments. The result is checked to decode to the
// same values but for the secrets, so a secret den missed can only be
// one that Secret does not name.
func Redact(data []byte) (out []byte, keys []string, err error) {
	tree, err := decodeTree("", data)
	if err != nil {
		return nil, nil, err
	}
	type change struct {
		parts []string
		v     any
	}
	var changes []change
	var inArray []string // secrets in arrays of tables
	var walk func(parts []string, v any, array bool)
	walk = func(parts []string, v any, array bool) {
		switch v := v.(type) {
		case map[string]any:
			names := make([]string, 0, len(v))
			for k := range v {
				names = append(names, k)
			}
			sort.Strings(names)
			for _, k := range names {
				walk(append(parts[:len(parts):len(parts)], k), v[k], array)
			}
			return
		case []map[string]any:
			// No setting of den's is an array of tables.
			for _, m := range v {
				walk(parts, m, true)
			}
			return
		}
		if array {
			if Secret(keyString(parts)) {
				inArray = append(inArray, keyString(parts))
			}
			return
		}
		// A secret is a string; den's settings of other kinds are none.
		s, ok := v.(string)
		switch {
		case !ok:
		case Secret(keyString(parts)):
			if s != "" {
				changes = append(changes, change{parts, ""})
			}
		default:
			if clean, ok := withoutPassword(s); ok {
				changes = append(changes, change{parts, clean})
			}
		}
	}
	walk(nil, tree, false)
	if len(inArray) > 0 {
		return nil, nil, fmt.Errorf("config: redact: %s in an array of tables, which den cannot leave out: remove it from the file", strings.Join(inArray, ", "))
	}
	if len(changes) == 0 {
		return data, nil, nil
	}
	want := tree
	out = data
	lineByLine := true
	for _, c := range changes {
		keys = append(keys, keyString(c.parts))
		want = with(want, c.parts, c.v)
		if lineByLine {
			if out, err = editLines(out, c.parts, encode(c.v)); err != nil {
				lineByLine = false
			}
		}
	}
	if lineByLine {
		if got, err := decodeTree("", out); err == nil && equal(got, want) {
			return out, keys, nil
		}
	}
	// Written anew from the values, which loses the comments.
	var b bytes.Buffer
	b.WriteString("# Written by den backup from the config's values, with its secrets left out.\n")
	if err := toml.NewEncoder(&b).Encode(want); err != nil {
		return nil, nil, fmt.Errorf("config: redact: %w", err)
	}
	got, err := decodeTree("", b.Bytes())
	if err != nil || !equal(got, want) {
		return nil, nil, fmt.Errorf("config: redact: the file cannot be written without its secrets")
	}
	return b.Bytes(), keys, nil
}

// withoutPassword returns a URL with a password with the password
// taken out; ok is false for anything else.
func withoutPassword(s string) (string, bool) {
	if !strings.Contains(s, "@") || !strings.Contains(s, "://") {
		return "", false
	}
	u, err := url.Parse(s)
	if err != nil || u.User == nil {
		return "", false
	}
	if _, set := u.User.Password(); !set {
		return "", false
	}
	u.User = url.User(u.User.Username())
	return u.String(), true
}
