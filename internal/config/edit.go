package config

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/BurntSushi/toml"
)

// Secret reports whether a key holds a secret that den never prints:
// API keys, and header values (they often carry tokens). A switch
// named after secrets (backup.with_secrets) is none.
func Secret(key string) bool {
	k := strings.ToLower(key)
	if strings.HasSuffix(k, "with_secrets") {
		return false
	}
	return strings.HasSuffix(k, "api_key") || strings.Contains(k, ".headers.") ||
		strings.Contains(k, "token") || strings.Contains(k, "secret") || strings.Contains(k, "password")
}

// masked is how a secret's value is shown.
const masked = `"********"`

// Get returns the value at a dotted key of the file at path (all of it
// for ""), rendered as TOML; secrets are masked.
func Get(path, key string) (string, error) {
	var tree map[string]any
	if _, err := toml.DecodeFile(path, &tree); err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return "", fmt.Errorf("%w: %s (there is no config file at %s)", ErrNoKey, key, path)
		}
		return "", fmt.Errorf("config: %w", err)
	}
	if key == "" {
		return render(nil, tree), nil
	}
	parts, err := parseKey(key)
	if err != nil {
		return "", err
	}
	var v any = tree
	for _, part := range parts {
		m, ok := v.(map[string]any)
		if !ok {
			return "", fmt.Errorf("%w: %s", ErrNoKey, key)
		}
		if v, ok = m[part]; !ok {
			return "", fmt.Errorf("%w: %s", ErrNoKey, key)
		}
	}
	return render(parts, v), nil
}

// render prints a value as TOML: a table as one "key = value" line per
// value under it, anything else as a value; secrets are masked at any
// depth.
func render(parts []string, v any) string {
	m, ok := v.(map[string]any)
	if !ok {
		if Secret(keyString(parts)) {
			return masked
		}
		return encode(v)
	}
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var b strings.Builder
	for _, k := range keys {
		full := append(parts[:len(parts):len(parts)], k)
		if _, ok := m[k].(map[string]any); ok {
			b.WriteString(render(full, m[k]))
			continue
		}
		fmt.Fprintf(&b, "%s = %s\n", keyString(full), render(full, m[k]))
	}
	return b.String()
}

// Change is what setting one key does, for showing a person: the key
// and its old and new values, written as TOML, secrets masked.
type Change struct {
	Key    string // as TOML: agents.default.permissions."den-config set"
	Old    string // "" when unset
	New    string
	OldSet bool // whether the file set the key before
}

// String is the change in one line:
// `agents.default.model: "a" → "b"`, or `… (unset) → "b"`.
func (c Change) String() string {
	old := c.Old
	if !c.OldSet {
		old = "(unset)"
	}
	return fmt.Sprintf("%s: %s → %s", c.Key, old, c.New)
}

// Set sets a dotted key to value, read as ParseValue reads it, in the
// file at path: SetValue(path, key, ParseValue(value)). It returns the
// old value as TOML ("" when unset; secrets masked).
func Set(path, key, value string) (old string, err error) {
	v, err := ParseValue(value)
	if err != nil {
		return "", err
	}
	c, err := SetValue(path, key, v)
	if err != nil {
		return "", err
	}
	return c.Old, nil
}

// SetValue sets a dotted key inside a table (agents.default.model, or
// with a quoted part: agents.default.permissions."den-config set") to
// v, a string, integer, float, boolean or an array of those, in the
// file at path; the file is created when missing.
//
// The file is edited line by line, so comments and layout stay; only
// the key's line changes, or one line (with its table's header, when
// the table is new) is added. Nothing the caller passes reaches the
// file as written: the key is checked part by part and rewritten, and v
// is encoded. Before writing, SetValue decodes the file before and
// after the edit and refuses, writing nothing, unless the only
// difference is the key now holding v, and unless the result loads.
// The file is replaced atomically and keeps its mode (0600 when new).
func SetValue(path, key string, v any) (Change, error) {
	p, err := plan(path, key, v)
	if err != nil {
		return Change{}, err
	}
	if err := replaceFile(p.path, p.data, p.mode); err != nil {
		return Change{}, err
	}
	return p.change, nil
}

// PlanSet is the Change SetValue would make, found the same way and
// refused for the same reasons, without writing; for an approval
// question.
func PlanSet(path, key string, v any) (Change, error) {
	p, err := plan(path, key, v)
	return p.change, err
}

// SetValueIf is SetValue when the key's value is still expectOld's Old
// (and OldSet), as PlanSet found it; otherwise it fails with ErrChanged
// and writes nothing. The file is checked when SetValueIf reads it, not
// locked: den is its only writer, and a person editing it by hand at
// that very moment can still race it. For a secret the masked values
// cannot tell a change apart.
func SetValueIf(path, key string, v any, expectOld Change) (Change, error) {
	p, err := plan(path, key, v)
	if err != nil {
		return Change{}, err
	}
	if p.change.Key != expectOld.Key || p.change.New != expectOld.New {
		return Change{}, fmt.Errorf("config: set %s to %s: the planned change was %s", p.change.Key, p.change.New, expectOld)
	}
	if p.change.OldSet != expectOld.OldSet || p.change.Old != expectOld.Old {
		return Change{}, fmt.Errorf("%w: %s is now %s", ErrChanged, p.change.Key, p.change)
	}
	if err := replaceFile(p.path, p.data, p.mode); err != nil {
		return Change{}, err
	}
	return p.change, nil
}

// planned is a checked edit, ready to write.
type planned struct {
	change Change
	path   string // the file to replace (symbolic links followed)
	data   []byte
	mode   fs.FileMode
}

// plan reads the file, edits it and checks the edit.
func plan(path, key string, v any) (planned, error) {
	parts, err := parseKey(key)
	if err != nil {
		return planned{}, err
	}
	if len(parts) < 2 {
		return planned{}, fmt.Errorf("%w: set %s: want a key inside a table, such as agents.default.model", ErrBadKey, key)
	}
	key = keyString(parts)
	if v, err = normalize(v); err != nil {
		return planned{}, fmt.Errorf("config: set %s: %w", key, err)
	}
	p := planned{path: path, mode: 0o600}
	if real, err := filepath.EvalSymlinks(path); err == nil {
		p.path = real
	}
	data, err := os.ReadFile(p.path)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return planned{}, fmt.Errorf("config: %w", err)
	}
	if st, err := os.Stat(p.path); err == nil {
		p.mode = st.Mode().Perm()
	}
	before, err := decodeTree(path, data)
	if err != nil {
		return planned{}, fmt.Errorf("config: set %s: %w", key, err)
	}
	old, oldSet, err := lookup(before, parts)
	if err != nil {
		return planned{}, fmt.Errorf("%w: set %s: %w", ErrBadKey, key, err)
	}
	if p.data, err = editLines(data, parts, encode(v)); err != nil {
		return planned{}, fmt.Errorf("config: set %s: %w: %w; change it with den config edit", key, ErrNotEditable, err)
	}
	after, err := decodeTree(path, p.data)
	if err != nil || !equal(after, with(before, parts, v)) {
		return planned{}, fmt.Errorf("config: set %s: %w: it would change more than %s; change it with den config edit", key, ErrNotEditable, key)
	}
	if _, err := parse(path, p.data); err != nil {
		return planned{}, fmt.Errorf("config: set %s: %w", key, err)
	}
	p.change = Change{Key: key, New: render(parts, v), OldSet: oldSet}
	if oldSet {
		p.change.Old = render(parts, old)
	}
	return p, nil
}

// decodeTree decodes data (no data: an empty table).
func decodeTree(path string, data []byte) (map[string]any, error) {
	tree := map[string]any{}
	if _, err := toml.Decode(string(data), &tree); err != nil {
		return nil, decodeError(path, err)
	}
	return tree, nil
}

// lookup finds the value at parts: ok false when it is unset, an error
// when a table on the way is a value or the key itself is a table.
func lookup(tree map[string]any, parts []string) (v any, ok bool, err error) {
	m := tree
	for i, part := range parts {
		v, ok = m[part]
		if !ok {
			return nil, false, nil
		}
		sub, table := v.(map[string]any)
		if i == len(parts)-1 {
			if table {
				return nil, false, fmt.Errorf("it is a table; set one of its keys")
			}
			return v, true, nil
		}
		if !table {
			return nil, false, fmt.Errorf("%s is not a table", keyString(parts[:i+1]))
		}
		m = sub
	}
	return nil, false, nil
}

// with returns a copy of tree with parts set to v; tree is unchanged.
func with(tree map[string]any, parts []string, v any) map[string]any {
	out := make(map[string]any, len(tree)+1)
	for k, e := range tree {
		out[k] = e
	}
	if len(parts) == 1 {
		out[parts[0]] = v
		return out
	}
	sub, _ := out[parts[0]].(map[string]any)
	out[parts[0]] = with(sub, parts[1:], v)
	return out
}

// replaceFile writes data to a temporary file next to path (mode, then
// synced) and renames it over path.
func replaceFile(path string, data []byte, mode fs.FileMode) error {
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("config: %w", err)
	}
	f, err := os.CreateTemp(dir, ".config-*.toml")
	if err != nil {
		return fmt.Errorf("config: %w", err)
	}
	tmp := f.Name()
	err = f.Chmod(mode)
	if err == nil {
		_, err = f.Write(data)
	}
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, path)
	}
	if err != nil {
		os.Remove(tmp)
		return fmt.Errorf("config: write %s: %w", path, err)
	}
	if d, err := os.Open(dir); err == nil {
		d.Sync() // the rename lasts; a failure here loses nothing written
		d.Close()
	}
	return nil
}
