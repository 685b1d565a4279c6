package config

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

func TestUnsetKeepsLayout(t *testing.T) {
	for _, c := range []struct {
		name, in, key string
		want, old     string
	}{{
		name: "a value, the comments around it kept",
		in:   "# my den\n[agents.default]  # main\nmodel = \"a\" # pick one\n# the rootfs\nrootfs = \"alpine\"\n",
		key:  "agents.default.model",
		want: "# my den\n[agents.default]  # main\n# the rootfs\nrootfs = \"alpine\"\n",
		old:  `"a"`,
	}, {
		name: "a multi-line array",
		in:   "[agents.default]\nmounts = [\n  \"/a:/a\",  # first\n  \"/b:/b\",\n] # done\nmodel = \"m\"\n",
		key:  "agents.default.mounts",
		want: "[agents.default]\nmodel = \"m\"\n",
		old:  `["/a:/a", "/b:/b"]`,
	}, {
		name: "a table between two: its comments go, the next one's stay, one blank line is left",
		in:   "[agents.default]\nmodel = \"a\"\n\n[groups.fast]\n# fast ones\nmembers = [\"a/b\"]\n\nstrategy = \"always\"\n\n# slow ones\n[groups.slow]\nmembers = [\"c/d\"]\n",
		key:  "groups.fast",
		want: "[agents.default]\nmodel = \"a\"\n\n# slow ones\n[groups.slow]\nmembers = [\"c/d\"]\n",
		old:  "groups.fast.members = [\"a/b\"]\ngroups.fast.strategy = \"always\"\n",
	}, {
		name: "a table at the end",
		in:   "[agents.default]\nmodel = \"a\"\n\n[groups.fast]\nmembers = [\"a/b\"]\n",
		key:  "groups.fast",
		want: "[agents.default]\nmodel = \"a\"\n",
		old:  "groups.fast.members = [\"a/b\"]\n",
	}, {
		name: "the only table",
		in:   "[groups.fast]\nmembers = [\"a/b\"]\n",
		key:  "groups.fast",
		want: "",
		old:  "groups.fast.members = [\"a/b\"]\n",
	}, {
		name: "a table with the tables below it",
		in:   "[agents.x]\nmodel = \"a\"\n[agents.x.permissions]\nden-notify = \"allow\"\n[agents.y]\nmodel = \"b\"\n",
		key:  "agents.x",
		want: "[agents.y]\nmodel = \"b\"\n",
		old:  "agents.x.model = \"a\"\nagents.x.permissions.den-notify = \"allow\"\n",
	}, {
		name: "dotted keys under a parent table",
		in:   "[agents]\n  default.model = \"a\"\n  default.trust = \"full\"\n  other.model = \"b\"\n",
		key:  "agents.default",
		want: "[agents]\n  other.model = \"b\"\n",
		old:  "agents.default.model = \"a\"\nagents.default.trust = \"full\"\n",
	}, {
		name: "the only key of a table written as a dotted key",
		in:   "[agents.default]\nmodel = \"a\"\npermissions.den-notify = \"allow\"\n",
		key:  "agents.default.permissions.den-notify",
		want: "[agents.default]\nmodel = \"a\"\n",
		old:  `"allow"`,
	}, {
		name: "a quoted key; the table's header stays",
		in:   "[agents.default.permissions]\n\"den-config set\" = \"deny\"\n",
		key:  `agents.default.permissions."den-config set"`,
		want: "[agents.default.permissions]\n",
		old:  `"deny"`,
	}, {
		name: "a dotted key at the top",
		in:   "agents.default.model = \"a\"\nagents.default.trust = \"full\"\n",
		key:  "agents.default.model",
		want: "agents.default.trust = \"full\"\n",
		old:  `"a"`,
	}, {
		name: "a provider, its key masked",
		in:   "[providers.local]\ntype = \"openai\"\napi_key = \"sk-secret\"\nheaders = { X-Token = \"t-secret\" }\n",
		key:  "providers.local",
		want: "",
		old:  "providers.local.api_key = \"********\"\nproviders.local.headers.X-Token = \"********\"\nproviders.local.type = \"openai\"\n",
	}, {
		name: "a secret",
		in:   "[providers.local]\ntype = \"openai\"\napi_key = \"sk-secret\"\n",
		key:  "providers.local.api_key",
		want: "[providers.local]\ntype = \"openai\"\n",
		old:  `"********"`,
	}, {
		name: "CRLF line ends",
		in:   "# den\r\n[agents.default]\r\nmodel = \"a\" # m\r\nrootfs = \"alpine\"\r\n\r\n[groups.g]\r\nmembers = [\"a/b\"]\r\n",
		key:  "groups.g",
		want: "# den\r\n[agents.default]\r\nmodel = \"a\" # m\r\nrootfs = \"alpine\"\r\n",
		old:  "groups.g.members = [\"a/b\"]\n",
	}, {
		name: "text in a multi-line string that looks like the table is not the table",
		in:   "[agents.other]\ninstructions = \"\"\"\n[groups.g]\nmembers = []\n\"\"\"\n\n[groups.g]\nmembers = [\"a/b\"]\n",
		key:  "groups.g",
		want: "[agents.other]\ninstructions = \"\"\"\n[groups.g]\nmembers = []\n\"\"\"\n",
		old:  "groups.g.members = [\"a/b\"]\n",
	}} {
		t.Run(c.name, func(t *testing.T) {
			p := write(t, c.in)
			before := tree(t, p)
			old, err := Unset(p, c.key)
			if err != nil {
				t.Fatal(err)
			}
			if d := cmp.Diff(c.want, read(t, p)); d != "" {
				t.Errorf("file (-want +got):\n%s", d)
			}
			if old != c.old {
				t.Errorf("old = %q, want %q", old, c.old)
			}
			parts, _ := parseKey(c.key)
			onlyRemoved(t, p, before, parts)
		})
	}
}

// onlyRemoved fails unless the file at p decodes to before without the
// key at parts (and without tables left empty on the way), and loads.
func onlyRemoved(t *testing.T, p string, before map[string]any, parts []string) {
	t.Helper()
	want := deleteIn(before, parts)
	got := tree(t, p)
	// A table emptied by the removal may stay (its header does) or go
	// (it was written as dotted keys): both leave the same settings.
	opts := []cmp.Option{cmpopts.EquateNaNs(), cmpopts.EquateEmpty()}
	if d := cmp.Diff(dropEmpty(want), dropEmpty(got), opts...); d != "" {
		t.Errorf("file changed in more than %q (-want +got):\n%s", parts, d)
	}
	if _, err := Load(p, true); err != nil {
		t.Errorf("load after unset: %v", err)
	}
}

// deleteIn is a copy of m without the key at parts, written here apart
// from the package's own so that the tests check it.
func deleteIn(m map[string]any, parts []string) map[string]any {
	out := map[string]any{}
	for k, e := range m {
		out[k] = e
	}
	if len(parts) == 1 {
		delete(out, parts[0])
		return out
	}
	if sub, ok := out[parts[0]].(map[string]any); ok {
		out[parts[0]] = deleteIn(sub, parts[1:])
	}
	return out
}

// dropEmpty is m without tables that hold nothing, at any depth.
func dropEmpty(m map[string]any) map[string]any {
	out := map[string]any{}
	for k, e := range m {
		if sub, ok := e.(map[string]any); ok {
			if sub = dropEmpty(sub); len(sub) == 0 {
				continue
			}
			e = sub
		}
		out[k] = e
	}
	return out
}

// What Unset cannot do is refused with the right error, and nothing is
// written.
func TestUnsetRefuses(t *testing.T) {
	const in = "[agents.default]\nmodel = \"a\"\npermissions = { \"den-config set\" = \"deny\" }\n\n[providers.local]\ntype = \"openai\"\n"
	for _, c := range []struct {
		key  string
		want error
	}{
		{"agents.default.colour", ErrBadKey},                            // no such setting
		{"colours.default", ErrBadKey},                                  // no such table
		{"agents.default.model.x", ErrBadKey},                           // inside a string
		{"agents", ErrBadKey},                                           // a top-level table
		{"agents..model", ErrBadKey},                                    // unreadable
		{"agents.default]\n[x", ErrBadKey},                              // TOML syntax in a key
		{"agents.default.rootfs", ErrNoKey},                             // not set
		{"agents.nobody", ErrNoKey},                                     // not set
		{"groups.fast.members", ErrNoKey},                               // not set, nor its table
		{"providers.local.type", ErrInvalid},                            // the file would not load
		{"agents.default.permissions.x", ErrNoKey},                      // not set in the inline table
		{`agents.default.permissions."den-config set"`, ErrNotEditable}, // inside an inline table
	} {
		p := write(t, in)
		_, err := Unset(p, c.key)
		switch {
		case err == nil:
			t.Errorf("unset %q accepted:\n%s", c.key, read(t, p))
		case !errors.Is(err, c.want):
			t.Errorf("unset %q: %v, want %v", c.key, err, c.want)
		}
		if got := read(t, p); got != in {
			t.Errorf("unset %q changed the file:\n%s", c.key, got)
		}
	}
	if _, err := Unset(filepath.Join(t.TempDir(), "none.toml"), "agents.default.model"); !errors.Is(err, ErrNoKey) {
		t.Errorf("unset in a missing file: %v, want ErrNoKey", err)
	}
}

func TestUnsetKeepsMode(t *testing.T) {
	p := write(t, base+"rootfs = \"alpine\"\n")
	if err := os.Chmod(p, 0o640); err != nil {
		t.Fatal(err)
	}
	if _, err := Unset(p, "agents.default.rootfs"); err != nil {
		t.Fatal(err)
	}
	if st, err := os.Stat(p); err != nil || st.Mode().Perm() != 0o640 {
		t.Errorf("mode after unset: %v %v", st.Mode(), err)
	}
	if ents, _ := os.ReadDir(filepath.Dir(p)); len(ents) != 1 {
		t.Errorf("temporary files left: %v", ents)
	}
	if got := read(t, p); got != base {
		t.Errorf("file after unset:\n%s", got)
	}
}

// FuzzUnset: Unset either fails and leaves the file as it was, or the
// file then decodes to what it did before without the key, and loads.
func FuzzUnset(f *testing.F) {
	for _, k := range []string{
		"agents.default.model", "agents.default", "agents.other", "agents", "agents.default.mounts",
		"agents.default.instructions", "agents.default.permissions", "agents.default.permissions.den-notify",
		"providers.local", "providers.local.type", "providers.local.base_url", "providers.fake", "sandbox",
		"sandbox.backend", "agents.default]\n[x", `agents."default"`, "retry.delays",
	} {
		f.Add(k)
	}
	f.Fuzz(func(t *testing.T, key string) {
		p := write(t, fuzzSeed)
		before := tree(t, p)
		if _, err := Unset(p, key); err != nil {
			if got := read(t, p); got != fuzzSeed {
				t.Fatalf("Unset(%q) failed (%v) but changed the file:\n%s", key, err, got)
			}
			return
		}
		parts, err := parseKey(key)
		if err != nil {
			t.Fatalf("Unset accepted the key %q that parseKey refuses: %v", key, err)
		}
		if strings.Contains(read(t, p), "\n\n\n") {
			t.Errorf("Unset(%q) left two blank lines in a row:\n%s", key, read(t, p))
		}
		onlyRemoved(t, p, before, parts)
	})
}
