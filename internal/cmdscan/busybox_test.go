package cmdscan

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"den.dev/den/internal/sandbox/sandboxtest"
)

// TestAgainstBusyBox checks the ash column of the rules against the real
// BusyBox shell: a snippet NeedsBash passes for ash must print what bash
// prints, and one it refuses must not.
func TestAgainstBusyBox(t *testing.T) {
	bb := sandboxtest.Need(t, "busybox", "busybox-static")
	bash := sandboxtest.Need(t, "bash", "bash")
	snippets := []string{
		`[[ -n x ]] && echo ok`,
		`[[ -n a && -n b ]] && echo both`,
		`[[ -z a || -n b ]] && echo either`,
		`[[ abc =~ ^a.c$ ]] && echo match`,
		`x=hello; echo ${x:1:2}`,
		`x=hello; echo ${x/l/L}`,
		`echo $'a\tb'`,
		`function g { echo fn; }; g`,
		`let y=1+2; echo $y`,
		`echo $((2**3))`,
		`true &> /dev/null && echo quiet`,
		`echo {a,b}`,
		`echo {1..3}`,
		`a=(1 2); echo ${a[1]}`,
		`x=1; x+=2; echo $x`,
		`cat <<< hi`,
		`x=ab; echo ${x^^}`,
		`printf -v v %s hi; echo $v`,
		`[[ abc == a* ]] && echo glob || echo noglob`,
		`f() { local -x z=1; echo $z; }; f`,
	}
	// A file a glob can match, as a real working folder would have.
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "axe"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	run := func(argv ...string) string {
		c := exec.Command(argv[0], argv[1:]...)
		c.Dir = dir
		out, _ := c.CombinedOutput()
		return string(out)
	}
	for _, s := range snippets {
		want := run(bash, "-c", s)
		got := run(bb, "sh", "-c", s)
		same := got == want
		need, cs := NeedsBash(s, "ash")
		switch {
		case !need && !same:
			t.Errorf("%q passes for ash, but busybox prints %q where bash prints %q", s, got, want)
		case need && same:
			t.Errorf("%q is refused for ash (%v), but busybox prints the same as bash: %q", s, names(cs), got)
		}
	}
}

func names(cs []Construct) []string {
	var out []string
	for _, c := range cs {
		out = append(out, c.Name)
	}
	return out
}
