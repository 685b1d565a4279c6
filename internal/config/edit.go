package config

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"github.com/BurntSushi/toml"
)

// ErrNoKey is a key the file does not set.
var ErrNoKey = errors.New("no such key")

// Secret reports whether a key holds a secret that den never prints:
// API keys, and header values (they often carry tokens).
func Secret(key string) bool {
	k := strings.ToLower(key)
	return strings.HasSuffix(k, "api_key") || strings.Contains(k, ".headers.") ||
		strings.Contains(k, "token") || strings.Contains(k, "secret") || strings.Contains(k, "password")
}

// Get returns the value at a dotted key of the file at path, rendered
// as TOML; secrets are masked.
func Get(path, key string) (string, error) {
	var tree map[string]any
	if _, err := toml.DecodeFile(path, &tree); err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return "", fmt.Errorf("%w: %s (there is no config file at %s)", ErrNoKey, key, path)
		}
		return "", fmt.Errorf("config: %w", err)
	}
	var v any = tree
	if key != "" {
		for _, part := range splitKey(key) {
			m, ok := v.(map[string]any)
			if !ok {
				return "", fmt.Errorf("%w: %s", ErrNoKey, key)
			}
			if v, ok = m[part]; !ok {
				return "", fmt.Errorf("%w: %s", ErrNoKey, key)
			}
		}
	}
	return render(key, v), nil
}

// render prints a value as TOML, masking secrets at any depth.
func render(key string, v any) string {
	switch v := v.(type) {
	case map[string]any:
		keys := make([]string, 0, len(v))
		for k := range v {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		var b strings.Builder
		for _, k := range keys {
			full := k
			if key != "" {
				full = key + "." + k
			}
			if sub, ok := v[k].(map[string]any); ok {
				b.WriteString(render(full, sub))
				continue
			}
			fmt.Fprintf(&b, "%s = %s\n", full, render(full, v[k]))
		}
		return b.String()
	}
	if Secret(key) {
		return `"********"`
	}
	switch v := v.(type) {
	case string:
		return strconv.Quote(v)
	case []any:
		parts := make([]string, len(v))
		for i, e := range v {
			parts[i] = render(key, e)
		}
		return "[" + strings.Join(parts, ", ") + "]"
	}
	return fmt.Sprint(v)
}

// splitKey splits a dotted key, keeping quoted parts whole.
func splitKey(key string) []string {
	var parts []string
	var cur strings.Builder
	quoted := false
	for _, r := range key {
		switch {
		case r == '"':
			quoted = !quoted
		case r == '.' && !quoted:
			parts = append(parts, cur.String())
			cur.Reset()
		default:
			cur.WriteRune(r)
		}
	}
	return append(parts, cur.String())
}

// Set sets a dotted key (table.key) to value in the file at path,
// editing the file line by line so that comments and layout stay; the
// file is created when missing. value is TOML when it parses as a TOML
// value (a number, true, an array, a quoted string), else a string.
// The result must load: otherwise nothing is written.
func Set(path, key, value string) (old string, err error) {
	parts := splitKey(key)
	if len(parts) < 2 {
		return "", fmt.Errorf("config: set %s: want a key inside a table, such as agents.default.model", key)
	}
	table := strings.Join(quoteParts(parts[:len(parts)-1]), ".")
	name := parts[len(parts)-1]
	lit := tomlValue(value)
	data, err := os.ReadFile(path)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return "", fmt.Errorf("config: %w", err)
	}
	lines := strings.Split(string(data), "\n")
	if len(lines) > 0 && lines[len(lines)-1] == "" {
		lines = lines[:len(lines)-1]
	}
	in, header, done := "", -1, false
	for i, raw := range lines {
		line := strings.TrimSpace(raw)
		if strings.HasPrefix(line, "[") && !strings.HasPrefix(line, "[[") {
			if end := strings.Index(line, "]"); end > 0 {
				in = normKey(line[1:end])
				if in == normKey(table) {
					header = i
				}
			}
			continue
		}
		if in != normKey(table) {
			continue
		}
		if eq := strings.Index(line, "="); eq > 0 && normKey(line[:eq]) == name {
			old = strings.TrimSpace(line[eq+1:])
			lines[i] = name + " = " + lit
			done = true
			break
		}
	}
	if !done {
		if header >= 0 {
			lines = append(lines[:header+1], append([]string{name + " = " + lit}, lines[header+1:]...)...)
		} else {
			if len(lines) > 0 {
				lines = append(lines, "")
			}
			lines = append(lines, "["+table+"]", name+" = "+lit)
		}
	}
	out := strings.Join(lines, "\n") + "\n"
	tmp, err := writeTemp(path, out)
	if err != nil {
		return "", err
	}
	defer os.Remove(tmp)
	if _, err := Load(tmp, true); err != nil {
		return "", fmt.Errorf("config: set %s: %w", key, err)
	}
	if err := os.Rename(tmp, path); err != nil {
		return "", fmt.Errorf("config: %w", err)
	}
	if Secret(key) && old != "" {
		old = `"********"`
	}
	return old, nil
}

func quoteParts(parts []string) []string {
	out := make([]string, len(parts))
	for i, p := range parts {
		if strings.ContainsAny(p, ". /") {
			out[i] = strconv.Quote(p)
		} else {
			out[i] = p
		}
	}
	return out
}

// tomlValue keeps value when it is a TOML literal, else quotes it.
func tomlValue(v string) string {
	var probe map[string]any
	if _, err := toml.Decode("x = "+v, &probe); err == nil {
		return v
	}
	return strconv.Quote(v)
}

func writeTemp(path, data string) (string, error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return "", fmt.Errorf("config: %w", err)
	}
	f, err := os.CreateTemp(filepath.Dir(path), ".config-*.toml")
	if err != nil {
		return "", fmt.Errorf("config: %w", err)
	}
	if _, err := f.WriteString(data); err != nil {
		f.Close()
		os.Remove(f.Name())
		return "", fmt.Errorf("config: %w", err)
	}
	if err := f.Close(); err != nil {
		os.Remove(f.Name())
		return "", fmt.Errorf("config: %w", err)
	}
	os.Chmod(f.Name(), 0o600)
	return f.Name(), nil
}
