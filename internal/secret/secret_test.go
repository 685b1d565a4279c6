package secret

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestValidate(t *testing.T) {
	for _, tc := range []struct {
		s    Secret
		want string // "" valid
	}{
		{Secret{Name: "GH", Value: "v", Hosts: []string{"API.GitHub.com."}}, ""},
		{Secret{Name: "GH", Value: "v", Hosts: []string{"*.example.com"}, Basic: "x-access-token"}, ""},
		{Secret{Name: "GH", Value: "v", Hosts: []string{"q.example"}, Query: "key"}, ""},
		{Secret{Name: "gh", Value: "v", Hosts: []string{"a.b"}}, "capitals"},
		{Secret{Name: "1GH", Value: "v", Hosts: []string{"a.b"}}, "capitals"},
		{Secret{Name: "GH", Hosts: []string{"a.b"}}, "empty value"},
		{Secret{Name: "GH", Value: "a\nb", Hosts: []string{"a.b"}}, "line break"},
		{Secret{Name: "GH", Value: "v"}, "no host"},
		{Secret{Name: "GH", Value: "v", Hosts: []string{"a b"}}, "host"},
		{Secret{Name: "GH", Value: "v", Hosts: []string{"a.b"}, Header: "Authorization: Bearer x"}, "{{value}}"},
		{Secret{Name: "GH", Value: "v", Hosts: []string{"a.b"}, Query: "k", Basic: "u"}, "one of"},
		{Secret{Name: "GH", Value: "v", Hosts: []string{"a.b"}, Basic: "u:x"}, "colon"},
	} {
		err := tc.s.Validate()
		if tc.want == "" && err != nil || tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)) {
			t.Errorf("%+v: %v, want %q", tc.s, err, tc.want)
		}
	}
	s := Secret{Name: "GH", Value: "v", Hosts: []string{"API.GitHub.com."}}
	s.Validate()
	if s.Header != "Authorization: Bearer {{value}}" || s.Hosts[0] != "api.github.com" {
		t.Errorf("defaults: %+v", s)
	}
	if !s.Binds("api.github.com") || s.Binds("github.com") || s.Binds("evil-api.github.com") {
		t.Error("Binds")
	}
	w := Secret{Hosts: []string{"*.example.com"}}
	if !w.Binds("a.b.example.com") || w.Binds("example.com") || w.Binds("badexample.com") {
		t.Error("Binds with a wildcard")
	}
	if strings.Contains(s.String(), "v)") {
		t.Errorf("String shows the value: %s", s)
	}
}

// TestStore: secrets are kept in a 0600 file, replaced by name, listed
// by name, kept apart per agent, and removed.
func TestStore(t *testing.T) {
	dir := t.TempDir()
	st := Open(dir)
	if list, err := st.List(); err != nil || len(list) != 0 {
		t.Fatalf("empty store: %v %v", list, err)
	}
	for _, s := range []Secret{
		{Name: "B", Value: "1", Hosts: []string{"b.example"}},
		{Name: "A", Value: "2", Hosts: []string{"a.example"}, Agents: []string{"x"}},
		{Name: "B", Value: "3", Hosts: []string{"b.example"}},
	} {
		if err := st.Set(s); err != nil {
			t.Fatal(err)
		}
	}
	fi, err := os.Stat(filepath.Join(dir, "secrets.json"))
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("the file: %v %v", fi.Mode(), err)
	}
	list, _ := st.List()
	if len(list) != 2 || list[0].Name != "A" || list[1].Value != "3" {
		t.Errorf("list: %+v", list)
	}
	if y, _ := st.For("y"); len(y) != 1 || y[0].Name != "B" {
		t.Errorf("agent y's: %+v", y)
	}
	if x, _ := st.For("x"); len(x) != 2 {
		t.Errorf("agent x's: %+v", x)
	}
	if err := st.Remove("A"); err != nil {
		t.Fatal(err)
	}
	if err := st.Remove("A"); !errors.Is(err, ErrNotFound) {
		t.Errorf("removing it twice: %v", err)
	}
	os.Chmod(filepath.Join(dir, "secrets.json"), 0o644)
	if _, err := st.List(); err == nil {
		t.Error("a file others can read was used")
	}
}
