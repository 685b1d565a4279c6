package config

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
)

// Unset removes a dotted key from the file at path: one value
// (agents.default.model) or a whole table with everything in it
// (groups.fast, agents.default.permissions, providers.local). It
// returns what was removed as Get shows it (a table as its lines),
// secrets masked.
//
// The key must name a setting or table of Config (another key fails
// with ErrBadKey, as an unreadable one does) and the file must set it
// (otherwise ErrNoKey). As SetValue does, Unset edits the file line by
// line, so comments and layout stay: the key's lines go, or the table's
// header and its keys (with the comments among them; a comment after its
// last key, which may belong to what follows, stays). Before writing,
// it decodes the file before and after the edit and refuses, writing
// nothing, unless the only difference is the key gone (with the tables
// above it that held nothing else), and unless the result loads. The
// file is replaced atomically and keeps its mode.
func Unset(path, key string) (old string, err error) {
	parts, err := parseKey(key)
	if err != nil {
		return "", err
	}
	key = keyString(parts)
	if len(parts) < 2 {
		return "", fmt.Errorf("%w: unset %s: want a key inside a table, such as agents.default.model", ErrBadKey, key)
	}
	if !known(parts) {
		return "", fmt.Errorf("%w: unset %s: den has no such setting", ErrBadKey, key)
	}
	real := path
	if p, err := filepath.EvalSymlinks(path); err == nil {
		real = p
	}
	data, err := os.ReadFile(real)
	if errors.Is(err, fs.ErrNotExist) {
		return "", fmt.Errorf("config: unset %s: %w (there is no config file at %s)", key, ErrNoKey, path)
	}
	if err != nil {
		return "", fmt.Errorf("config: %w", err)
	}
	st, err := os.Stat(real)
	if err != nil {
		return "", fmt.Errorf("config: %w", err)
	}
	before, err := decodeTree(path, data)
	if err != nil {
		return "", fmt.Errorf("config: unset %s: %w", key, err)
	}
	v, ok, err := find(before, parts)
	if err != nil {
		return "", fmt.Errorf("%w: unset %s: %w", ErrBadKey, key, err)
	}
	if !ok {
		return "", fmt.Errorf("config: unset %s: %w: the file does not set it", key, ErrNoKey)
	}
	edited, err := removeLines(data, parts)
	if err != nil {
		return "", fmt.Errorf("config: unset %s: %w: %w; change it with den config edit", key, ErrNotEditable, err)
	}
	after, err := decodeTree(path, edited)
	if err != nil || !equal(after, settle(without(before, parts), after, parts[:len(parts)-1])) {
		return "", fmt.Errorf("config: unset %s: %w: it would change more than %s; change it with den config edit", key, ErrNotEditable, key)
	}
	if _, err := parse(path, edited); err != nil {
		return "", fmt.Errorf("config: unset %s: %w", key, err)
	}
	if err := replaceFile(real, edited, st.Mode().Perm()); err != nil {
		return "", err
	}
	return render(parts, v), nil
}

// known reports whether parts name a field of Config, or a table or
// value below one: a field at each struct (by its toml tag), any name
// below a map.
func known(parts []string) bool {
	t := reflect.TypeFor[Config]()
	for _, p := range parts {
		for t.Kind() == reflect.Pointer {
			t = t.Elem()
		}
		switch t.Kind() {
		case reflect.Struct:
			f, ok := fieldOf(t, p)
			if !ok {
				return false
			}
			t = f.Type
		case reflect.Map:
			t = t.Elem()
		default:
			return false
		}
	}
	return true
}

// fieldOf is t's exported field whose toml tag is name.
func fieldOf(t reflect.Type, name string) (reflect.StructField, bool) {
	for i := range t.NumField() {
		f := t.Field(i)
		tag, _, _ := strings.Cut(f.Tag.Get("toml"), ",")
		if f.IsExported() && tag == name {
			return f, true
		}
	}
	return reflect.StructField{}, false
}

// find is the value at parts, a table or not: ok false when it is
// unset, an error when something on the way is not a table.
func find(tree map[string]any, parts []string) (v any, ok bool, err error) {
	v = tree
	for i, part := range parts {
		m, table := v.(map[string]any)
		if !table {
			return nil, false, fmt.Errorf("%s is not a table", keyString(parts[:i]))
		}
		if v, ok = m[part]; !ok {
			return nil, false, nil
		}
	}
	return v, true, nil
}

// without returns a copy of tree without the key at parts; tree is
// unchanged.
func without(tree map[string]any, parts []string) map[string]any {
	out := make(map[string]any, len(tree))
	for k, e := range tree {
		out[k] = e
	}
	if len(parts) == 1 {
		delete(out, parts[0])
		return out
	}
	if sub, ok := out[parts[0]].(map[string]any); ok {
		out[parts[0]] = without(sub, parts[1:])
	}
	return out
}

// settle returns want without the tables along path that are empty in
// it and absent from got, deepest first: a table whose only key was
// removed is gone from the file when the file set that key as a dotted
// key (permissions.x = "allow") rather than under the table's header.
func settle(want, got map[string]any, path []string) map[string]any {
	if len(path) == 0 {
		return want
	}
	sub, ok := want[path[0]].(map[string]any)
	if !ok {
		return want
	}
	gotSub, gotOK := got[path[0]].(map[string]any)
	out := make(map[string]any, len(want))
	for k, e := range want {
		out[k] = e
	}
	if sub = settle(sub, gotSub, path[1:]); len(sub) == 0 && !gotOK {
		delete(out, path[0])
	} else {
		out[path[0]] = sub
	}
	return out
}

// removeLines returns data without the key at parts. It walks the
// file's headers and key lines as editLines does, and drops:
//   - each key line (with the further lines of its value) whose key is
//     parts or below it;
//   - each table whose header is parts or below it: the header, its
//     keys and the comments and blank lines among them, but not the
//     comments and blank lines after its last key; and one blank line
//     less when the table stood between two.
//
// A key written as an inline table or a value that holds parts, or an
// array of tables at or below parts, cannot be edited this way: an
// error. Unset checks what removeLines returns in any case.
func removeLines(data []byte, parts []string) ([]byte, error) {
	lines := strings.Split(string(data), "\n")
	drop := make([]bool, len(lines))
	table := []string(nil)
	inArray, inRemoved := false, false
	pending := []int(nil) // comment and blank lines in a removed table, not yet followed by a key
	var blocks [][2]int   // removed tables, first and last line
	under := func(p []string) bool { return len(p) >= len(parts) && slices.Equal(p[:len(parts)], parts) }
	for i := 0; i < len(lines); i++ {
		line := strings.TrimSpace(lines[i])
		if line == "" || line[0] == '#' {
			if inRemoved {
				pending = append(pending, i)
			}
			continue
		}
		if line[0] == '[' {
			path, array, ok := headerPath(line)
			if !ok {
				return nil, fmt.Errorf("cannot read the table header on line %d", i+1)
			}
			if array && (under(path) || slices.Equal(path, parts[:min(len(path), len(parts))])) {
				return nil, fmt.Errorf("%s is an array of tables, on line %d", keyString(path), i+1)
			}
			table, inArray, inRemoved, pending = path, array, !array && under(path), nil
			if inRemoved {
				drop[i] = true
				blocks = append(blocks, [2]int{i, i})
			}
			continue
		}
		path, _, end, err := readKeyLine(lines, i)
		if err != nil {
			return nil, err
		}
		full := append(table[:len(table):len(table)], path...)
		switch {
		case inArray:
		case inRemoved:
			for _, j := range pending {
				drop[j] = true
			}
			pending = nil
			blocks[len(blocks)-1][1] = end
			fallthrough
		case under(full):
			for j := i; j <= end; j++ {
				drop[j] = true
			}
		case slices.Equal(full, parts[:min(len(full), len(parts))]):
			return nil, fmt.Errorf("%s is written as a value or an inline table on line %d", keyString(full), i+1)
		}
		i = end
	}
	keepOneBlank(lines, drop, blocks)
	kept := lines[:0:0]
	for i, l := range lines {
		if !drop[i] {
			kept = append(kept, l)
		}
	}
	return []byte(strings.Join(kept, "\n")), nil
}

// keepOneBlank marks one more line of lines to drop for each removed
// table (blocks: first and last line) that stood between blank lines,
// or at the start of the file before one, so that one blank line is
// left: the one before it goes, as the one after may be the end of the
// file.
func keepOneBlank(lines []string, drop []bool, blocks [][2]int) {
	blank := func(i int) bool { return strings.TrimSpace(lines[i]) == "" && !drop[i] }
	for _, b := range blocks {
		prev := b[0] - 1
		for prev >= 0 && drop[prev] {
			prev--
		}
		next := b[1] + 1
		switch {
		case next >= len(lines) || !blank(next):
		case prev >= 0 && blank(prev):
			drop[prev] = true
		case prev < 0 && next < len(lines)-1:
			drop[next] = true
		}
	}
}
