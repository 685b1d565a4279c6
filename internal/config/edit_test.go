package config

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/BurntSushi/toml"
	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

// tree decodes the file at p.
func tree(t *testing.T, p string) map[string]any {
	t.Helper()
	m := map[string]any{}
	if _, err := toml.DecodeFile(p, &m); err != nil {
		t.Fatalf("decode %s: %v", p, err)
	}
	return m
}

// setIn is a copy of m with the key at parts set to v, written here
// apart from the package's own so that the tests check it.
func setIn(m map[string]any, parts []string, v any) map[string]any {
	out := map[string]any{}
	for k, e := range m {
		out[k] = e
	}
	if len(parts) == 1 {
		out[parts[0]] = v
		return out
	}
	sub, _ := out[parts[0]].(map[string]any)
	out[parts[0]] = setIn(sub, parts[1:], v)
	return out
}

// onlyChanged fails unless the file at p decodes to before with parts
// set to v, and loads.
func onlyChanged(t *testing.T, p string, before map[string]any, parts []string, v any) {
	t.Helper()
	if d := cmp.Diff(setIn(before, parts, v), tree(t, p), cmpopts.EquateNaNs()); d != "" {
		t.Errorf("file changed in more than %q (-want +got):\n%s", parts, d)
	}
	if _, err := Load(p, true); err != nil {
		t.Errorf("load after set: %v", err)
	}
}

func read(t *testing.T, p string) string {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

const base = "# my den\n[agents.default]\nmodel = \"anthropic/claude-sonnet-4-5\"\n"

// A value spanning several lines is one string: it cannot add a table
// or a key, whether it comes through Set (text, as den config set
// reads it) or SetValue (a string, as den-config passes it).
func TestSetValueCannotInject(t *testing.T) {
	payloads := []string{
		"1\n[providers.evil]\nbase_url = \"http://x\"\napi_key = \"k\"",
		"\"x\"\n[providers.evil]\ntype = \"openai\"\nbase_url = \"http://evil\"\napi_key = \"k\"",
		"\"x\"\n[sandbox]\nbwrap = \"/tmp/evil\"",
		"\"x\"\n\n[agents.default.permissions]\n\"den-config set\" = \"allow\"",
		"\"x\" # \n[providers.evil]\ntype = \"openai\"",
		"\"x\"\r\n[providers.evil]\r\ntype = \"openai\"",
		"\"\"\"x\"\"\"\n[providers.evil]\ntype = \"openai\"",
	}
	for _, via := range []string{"Set", "SetValue"} {
		for _, payload := range payloads {
			p := write(t, base)
			before := tree(t, p)
			var err error
			if via == "Set" {
				_, err = Set(p, "agents.default.model", payload)
			} else {
				_, err = SetValue(p, "agents.default.model", payload)
			}
			if err != nil {
				t.Errorf("%s %q: %v", via, payload, err)
				continue
			}
			after := tree(t, p)
			for _, k := range []string{"providers", "sandbox"} {
				if _, ok := after[k]; ok {
					t.Errorf("%s %q added the table %s:\n%s", via, payload, k, read(t, p))
				}
			}
			onlyChanged(t, p, before, []string{"agents", "default", "model"}, payload)
		}
	}
}

// A key is checked part by part: TOML syntax in an unquoted part is
// refused and nothing is written.
func TestSetValueRefusesKeys(t *testing.T) {
	for _, key := range []string{
		"providers.evil]\ntype='openai'\napi_key_env='HOME'\n[agents.evil.model",
		"agents.evil]\ntrust='full'\n[agents.evil2.model",
		"agents.default.instructions='x'\ntrust",
		"providers.evil]\ntype=\"openai\"\napi_key_env=\"HOME\"\n[agents.default.model",
		"agents.default]\n[providers.evil.type",
		"agents.default.model]",
		"agents.default.mo\"del",
		"agents.default.mo\ndel",
		"agents.default.model=1",
		"agents.default.model = 1",
		"agents.default.x=1\ntrust",
		"agents..model",
		"agents.default.",
		".agents.default.model",
		"agents.\"default.model",
		"agents.\"de\nfault\".model",
		"agents.\"de\\\"fault\".model",
		"agents.\"\".model",
		"agents.\"default\"x.model",
		"agents.default.mödel",
		"model",
		"",
	} {
		p := write(t, base)
		if _, err := SetValue(p, key, "openai"); err == nil {
			t.Errorf("key %q accepted:\n%s", key, read(t, p))
		}
		if got := read(t, p); got != base {
			t.Errorf("key %q changed the file:\n%s", key, got)
		}
	}
}

func TestSetValueQuotedKey(t *testing.T) {
	p := write(t, base)
	c, err := SetValue(p, `agents.default.permissions."den-config set"`, "deny")
	if err != nil {
		t.Fatal(err)
	}
	if want := (Change{Key: `agents.default.permissions."den-config set"`, New: `"deny"`}); c != want {
		t.Errorf("change %+v, want %+v", c, want)
	}
	cfg, err := Load(p, true)
	if err != nil {
		t.Fatal(err)
	}
	if got := cfg.Agent("default").Permissions["den-config set"]; got != "deny" {
		t.Errorf("permissions %v:\n%s", cfg.Agent("default").Permissions, read(t, p))
	}
	if got, err := Get(p, `agents.default.permissions."den-config set"`); err != nil || got != `"deny"` {
		t.Errorf("get: %q %v", got, err)
	}
	// Again, now that the table exists: the line is replaced.
	if c, err := SetValue(p, `agents.default.permissions."den-config set"`, "ask"); err != nil || c.Old != `"deny"` || !c.OldSet {
		t.Errorf("second set: %+v %v", c, err)
	}
	if got := mustLoad(t, p).Agent("default").Permissions["den-config set"]; got != "ask" {
		t.Errorf("after second set: %q:\n%s", got, read(t, p))
	}
}

func mustLoad(t *testing.T, p string) *Config {
	t.Helper()
	c, err := Load(p, true)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// Strings reach the file escaped as TOML wants and come back the same.
func TestSetValueStringsRoundTrip(t *testing.T) {
	for _, s := range []string{
		"",
		`say "hi"`,
		`C:\path\to\`,
		"two\nlines\n",
		"crlf\r\nline",
		"\ttabbed",
		"é 日本語 🙂",
		"\x00\x01\x07\b\f\x1b\x1f\x7f",
		"\u0085\u2028\u202e\ufeff",
		`\u0041 \n \x41`,
		`'''`, `"""`, `"`, `\`,
		"1", "true", "[1, 2]", "{a = 1}", "1979-05-27",
		"# not a comment", "= x", "]",
	} {
		p := write(t, base)
		before := tree(t, p)
		if _, err := SetValue(p, "agents.default.instructions", s); err != nil {
			t.Errorf("%q: %v", s, err)
			continue
		}
		cfg, err := Load(p, true)
		if err != nil {
			t.Errorf("%q: load: %v\n%s", s, err, read(t, p))
			continue
		}
		if got := cfg.Agent("default").Instructions; got != s {
			t.Errorf("%q came back as %q:\n%s", s, got, read(t, p))
		}
		if n := strings.Count(read(t, p), "\n"); n != strings.Count(base, "\n")+1 {
			t.Errorf("%q: the file has %d lines, want one more than before:\n%s", s, n, read(t, p))
		}
		onlyChanged(t, p, before, []string{"agents", "default", "instructions"}, s)
	}
	p := write(t, base)
	if _, err := SetValue(p, "agents.default.instructions", "bad \xff utf-8"); err == nil {
		t.Error("invalid UTF-8 accepted")
	}
	if read(t, p) != base {
		t.Error("a refused set changed the file")
	}
}

// Only the key's line changes or is added; comments, spacing, other
// lines and line ends stay byte for byte.
func TestSetValueKeepsLayout(t *testing.T) {
	for _, c := range []struct {
		name, in, key string
		v             any
		want          string
	}{{
		name: "replace, keeping the key as written and a comment after the value",
		in:   "# my den\n\n[agents.default]  # main\n  model   =   \"a\"   # pick one\nrootfs = \"alpine\"\n",
		key:  "agents.default.model", v: "b",
		want: "# my den\n\n[agents.default]  # main\n  model   =   \"b\"   # pick one\nrootfs = \"alpine\"\n",
	}, {
		name: "a comment sign inside the old value",
		in:   "[agents.default]\nmodel = \"a#b\" # c\n",
		key:  "agents.default.model", v: "x",
		want: "[agents.default]\nmodel = \"x\" # c\n",
	}, {
		name: "add after the table's last key, not after comments before the next table",
		in:   "[agents.default]\nmodel = \"a\"\n\n# other agents\n[agents.other]\nmodel = \"b\"\n",
		key:  "agents.default.pids", v: int64(100),
		want: "[agents.default]\nmodel = \"a\"\npids = 100\n\n# other agents\n[agents.other]\nmodel = \"b\"\n",
	}, {
		name: "add under an empty table's header",
		in:   "[agents.default]\n# nothing yet\n",
		key:  "agents.default.pids", v: int64(7),
		want: "[agents.default]\npids = 7\n# nothing yet\n",
	}, {
		name: "a new table at the end",
		in:   "# my den\n[sandbox]\nbackend = \"bwrap\"",
		key:  "agents.default.network", v: "off",
		want: "# my den\n[sandbox]\nbackend = \"bwrap\"\n\n[agents.default]\nnetwork = \"off\"\n",
	}, {
		name: "a missing file",
		in:   "",
		key:  "agents.default.model", v: "a",
		want: "[agents.default]\nmodel = \"a\"\n",
	}, {
		name: "a multi-line array replaced whole",
		in:   "[agents.default]\nmounts = [\n  \"/a:/a\",  # first\n  \"/b:/b\",\n] # done\nmodel = \"m\"\n",
		key:  "agents.default.mounts", v: []string{"/c:/c"},
		want: "[agents.default]\nmounts = [\"/c:/c\"] # done\nmodel = \"m\"\n",
	}, {
		name: "text in a multi-line string that looks like the table is not the table",
		in:   "[agents.other]\ninstructions = \"\"\"\n[agents.default]\nmodel = \"fake\"\n\"\"\"\n\n[agents.default]\nmodel = \"real\"\n",
		key:  "agents.default.model", v: "new",
		want: "[agents.other]\ninstructions = \"\"\"\n[agents.default]\nmodel = \"fake\"\n\"\"\"\n\n[agents.default]\nmodel = \"new\"\n",
	}, {
		name: "dotted keys under a parent table",
		in:   "[agents]\n  default.model = \"a\" # m\n",
		key:  "agents.default.trust", v: "trusted",
		want: "[agents]\n  default.model = \"a\" # m\n  default.trust = \"trusted\"\n",
	}, {
		name: "a dotted key at the top",
		in:   "agents.default.model = \"a\"\n",
		key:  "agents.default.model", v: "b",
		want: "agents.default.model = \"b\"\n",
	}, {
		name: "a quoted table header",
		in:   "[agents.\"default\"]\nmodel = \"a\"\n",
		key:  "agents.default.model", v: "b",
		want: "[agents.\"default\"]\nmodel = \"b\"\n",
	}, {
		name: "CRLF line ends",
		in:   "# den\r\n[agents.default]\r\nmodel = \"a\" # m\r\nrootfs = \"alpine\"\r\n",
		key:  "agents.default.model", v: "b",
		want: "# den\r\n[agents.default]\r\nmodel = \"b\" # m\r\nrootfs = \"alpine\"\r\n",
	}} {
		t.Run(c.name, func(t *testing.T) {
			p := filepath.Join(t.TempDir(), "config.toml")
			if c.in != "" {
				p = write(t, c.in)
			}
			if _, err := SetValue(p, c.key, c.v); err != nil {
				t.Fatal(err)
			}
			if d := cmp.Diff(c.want, read(t, p)); d != "" {
				t.Errorf("file (-want +got):\n%s", d)
			}
		})
	}
}

// What cannot be edited one line at a time, or would not load, is
// refused and nothing is written.
func TestSetValueRefuses(t *testing.T) {
	const in = "[agents.default]\nmodel = \"a\"\npermissions = { \"den-config set\" = \"deny\" }\n"
	for _, c := range []struct {
		key  string
		v    any
		want error
	}{
		{"agents.default", "x", ErrBadKey},                                   // a table
		{"agents", "x", ErrBadKey},                                           // not inside a table
		{"agents.default.model.x", "x", ErrBadKey},                           // inside a string
		{"agents.default.permissions.x", "allow", ErrNotEditable},            // inside an inline table
		{"agents.default.colour", "red", ErrInvalid},                         // unknown: the file would not load
		{"agents.default.network", "sometimes", ErrInvalid},                  // invalid: the file would not load
		{"agents.default.pids", map[string]any{"a": 1}, ErrBadValue},         // a table value
		{"agents.default.mounts", []any{[]any{"a"}}, ErrBadValue},            // nested arrays
		{"agents.default.model", struct{}{}, ErrBadValue},                    // not a TOML value
		{"agents.default.model", int64(3), ErrInvalid},                       // a string field
		{"agents.default.mounts", []any{"a", map[string]any{}}, ErrBadValue}, // a table in an array
	} {
		p := write(t, in)
		ch, err := SetValue(p, c.key, c.v)
		switch {
		case err == nil:
			t.Errorf("%s = %#v accepted: %+v\n%s", c.key, c.v, ch, read(t, p))
		case !errors.Is(err, c.want):
			// The API maps these to its status codes.
			t.Errorf("%s = %#v: %v, want %v", c.key, c.v, err, c.want)
		}
		if got := read(t, p); got != in {
			t.Errorf("%s = %#v changed the file:\n%s", c.key, c.v, got)
		}
	}
}

func TestSetValueKeepsMode(t *testing.T) {
	p := write(t, base)
	if err := os.Chmod(p, 0o640); err != nil {
		t.Fatal(err)
	}
	if _, err := SetValue(p, "agents.default.model", "b"); err != nil {
		t.Fatal(err)
	}
	if st, err := os.Stat(p); err != nil || st.Mode().Perm() != 0o640 {
		t.Errorf("mode after set: %v %v", st.Mode(), err)
	}
	fresh := filepath.Join(t.TempDir(), "den", "config.toml")
	if _, err := SetValue(fresh, "agents.default.model", "b"); err != nil {
		t.Fatal(err)
	}
	if st, err := os.Stat(fresh); err != nil || st.Mode().Perm() != 0o600 {
		t.Errorf("mode of a new file: %v %v", st.Mode(), err)
	}
	if ents, _ := os.ReadDir(filepath.Dir(p)); len(ents) != 1 {
		t.Errorf("temporary files left: %v", ents)
	}
}

func TestPlanSetWritesNothing(t *testing.T) {
	p := write(t, base+"\n[providers.x]\ntype = \"openai\"\napi_key = \"sk-old\"\n")
	before := read(t, p)
	for _, c := range []struct {
		key  string
		v    any
		want Change
		line string
	}{
		{"agents.default.model", "openai/gpt-5-mini",
			Change{Key: "agents.default.model", Old: `"anthropic/claude-sonnet-4-5"`, New: `"openai/gpt-5-mini"`, OldSet: true},
			`agents.default.model: "anthropic/claude-sonnet-4-5" → "openai/gpt-5-mini"`},
		{"agents.default.instructions", "be\nbrief",
			Change{Key: "agents.default.instructions", New: `"be\nbrief"`},
			`agents.default.instructions: (unset) → "be\nbrief"`},
		{"providers.x.api_key", "sk-new",
			Change{Key: "providers.x.api_key", Old: `"********"`, New: `"********"`, OldSet: true},
			`providers.x.api_key: "********" → "********"`},
		{"agents.default.pids", 512,
			Change{Key: "agents.default.pids", New: "512"},
			`agents.default.pids: (unset) → 512`},
	} {
		got, err := PlanSet(p, c.key, c.v)
		if err != nil {
			t.Errorf("%s: %v", c.key, err)
			continue
		}
		if got != c.want || got.String() != c.line {
			t.Errorf("%s: %+v %q, want %+v %q", c.key, got, got.String(), c.want, c.line)
		}
	}
	if read(t, p) != before {
		t.Error("PlanSet wrote the file")
	}
	if _, err := PlanSet(p, "agents.default.network", "maybe"); err == nil {
		t.Error("PlanSet accepted what SetValue refuses")
	}
}

func TestSetValueIf(t *testing.T) {
	const key = "agents.default.model"
	for _, c := range []struct {
		name    string
		between func(p string) // a change while the person is asked
		changed bool
	}{
		{"unchanged", func(string) {}, false},
		{"another key changed", func(p string) { Set(p, "agents.default.pids", "5") }, false},
		{"the key changed", func(p string) { Set(p, key, "openai/gpt-5") }, true},
		{"the key was removed", func(p string) { os.WriteFile(p, []byte("# empty\n"), 0o600) }, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			p := write(t, base)
			plan, err := PlanSet(p, key, "gemini/gemini-2.5-pro")
			if err != nil {
				t.Fatal(err)
			}
			c.between(p)
			before := read(t, p)
			got, err := SetValueIf(p, key, "gemini/gemini-2.5-pro", plan)
			if c.changed {
				if !errors.Is(err, ErrChanged) {
					t.Errorf("SetValueIf: %+v %v, want ErrChanged", got, err)
				}
				if read(t, p) != before {
					t.Error("a refused SetValueIf wrote the file")
				}
				return
			}
			if err != nil || got != plan {
				t.Errorf("SetValueIf: %+v %v, want %+v", got, err, plan)
			}
			if m := mustLoad(t, p).Agent("default").Model; m != "gemini/gemini-2.5-pro" {
				t.Errorf("model %q", m)
			}
		})
	}
	// The value must be the one planned.
	p := write(t, base)
	plan, _ := PlanSet(p, key, "a")
	if _, err := SetValueIf(p, key, "b", plan); err == nil || read(t, p) != base {
		t.Errorf("SetValueIf with another value: %v", err)
	}
	// A key that was unset when planned and is set since.
	plan, _ = PlanSet(p, "agents.default.instructions", "x")
	Set(p, "agents.default.instructions", "y")
	if _, err := SetValueIf(p, "agents.default.instructions", "x", plan); !errors.Is(err, ErrChanged) {
		t.Errorf("set since planned: %v", err)
	}
}

func TestParseValue(t *testing.T) {
	for _, c := range []struct {
		raw  string
		want any
	}{
		{"100", int64(100)},
		{"-7", int64(-7)},
		{"0x10", int64(16)},
		{"1.5", 1.5},
		{"true", true},
		{`"100"`, "100"},
		{`'lit\'`, `lit\`},
		{`"a\nb"`, "a\nb"},
		{"abc", "abc"},
		{"openai/gpt-5-mini", "openai/gpt-5-mini"},
		{"", ""},
		{`["a", 1]`, []any{"a", int64(1)}},
		{"[\n1,\n2]", []any{int64(1), int64(2)}},
		{"[]", []any{}},
		{"[[1]]", "[[1]]"},
		{"{a = 1}", "{a = 1}"},
		{"1979-05-27", "1979-05-27"},
		{"1 # note", int64(1)},
		{"1\n[providers.evil]\ntype = \"openai\"", "1\n[providers.evil]\ntype = \"openai\""},
		{"\"a\"\ny = 2", "\"a\"\ny = 2"},
		{"1\nx = 2", "1\nx = 2"},
	} {
		got, err := ParseValue(c.raw)
		if err != nil || !cmp.Equal(got, c.want) {
			t.Errorf("ParseValue(%q) = %#v %v, want %#v", c.raw, got, err, c.want)
		}
	}
	if _, err := ParseValue("\xff"); err == nil {
		t.Error("invalid UTF-8 accepted")
	}
}

// Get writes keys and strings as TOML, so what it prints can be read
// back.
func TestGetRendersTOML(t *testing.T) {
	p := write(t, base)
	Set(p, `agents.default.permissions."den-config set"`, "deny")
	SetValue(p, "agents.default.instructions", "a\x07\"b\"")
	got, err := Get(p, "agents.default")
	if err != nil {
		t.Fatal(err)
	}
	want := "agents.default.instructions = \"a\\u0007\\\"b\\\"\"\n" +
		"agents.default.model = \"anthropic/claude-sonnet-4-5\"\n" +
		"agents.default.permissions.\"den-config set\" = \"deny\"\n"
	if got != want {
		t.Errorf("get (-want +got):\n%s", cmp.Diff(want, got))
	}
	var back map[string]any
	if _, err := toml.Decode(got, &back); err != nil {
		t.Errorf("Get's output is not TOML: %v", err)
	}
}

const fuzzSeed = `# den
[sandbox]
backend = "bwrap"

[agents.default]
model = "anthropic/claude-sonnet-4-5" # the model
mounts = [
  "/a:/a", # first
]
instructions = """
[providers.fake]
model = "x"
"""
permissions = { "den-notify" = "allow" }

[agents]
other.model = "openai/gpt-5"

[providers.local]
type = "openai"
base_url = "http://localhost:8080"
`

// FuzzSetValue: SetValue either fails and leaves the file as it was,
// or the file then decodes to what it did before with only the key
// changed, and loads.
func FuzzSetValue(f *testing.F) {
	for _, s := range [][2]string{
		{"agents.default.model", "1\n[providers.evil]\nbase_url = \"http://x\"\napi_key = \"k\""},
		{"agents.default.model", `"a"`},
		{"agents.default.instructions", "\x00\"\\\n\t\u202e"},
		{"agents.default.pids", "100"},
		{"agents.default.mounts", `["/b:/b", "/c:/c"]`},
		{"agents.other.trust", "full"},
		{"agents.new.network", "off"},
		{`agents.default.permissions."den-config set"`, "deny"},
		{"agents.default.permissions.x", "deny"},
		{"providers.local.headers.X-Key", "v"},
		{"providers.evil]\ntype='openai'\n[agents.new.model", "x"},
		{"agents.default.instructions='x'\ntrust", "full"},
		{"sandbox.bwrap", "/usr/bin/bwrap"},
		{"agents.\"a.b\".model", "m"},
		{"retry.delays", `["1s"]`},
		{"models.\"a/b\".price_input", "1.5"},
		{"models.\"a/b\".price_input", "nan"},
	} {
		f.Add(s[0], s[1])
	}
	f.Fuzz(func(t *testing.T, key, value string) {
		parsed, perr := ParseValue(value)
		for _, v := range []any{value, parsed} {
			if v == nil && perr != nil {
				continue
			}
			p := write(t, fuzzSeed)
			before := tree(t, p)
			_, err := SetValue(p, key, v)
			if err != nil {
				if got := read(t, p); got != fuzzSeed {
					t.Fatalf("SetValue(%q, %q) failed (%v) but changed the file:\n%s", key, v, err, got)
				}
				continue
			}
			parts, err := parseKey(key)
			if err != nil {
				t.Fatalf("SetValue accepted the key %q that parseKey refuses: %v", key, err)
			}
			onlyChanged(t, p, before, parts, v)
		}
	})
}
