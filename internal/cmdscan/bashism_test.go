package cmdscan

import (
	"slices"
	"testing"
)

func TestBashisms(t *testing.T) {
	tests := []struct {
		script string
		want   []string // construct names, in order
	}{
		// constructs
		{"a=(1 2 3)", []string{"array-def"}},
		{"a[2]=x", []string{"array-def"}},
		{`echo "${a[0]}"`, []string{"array-expand"}},
		{`echo ${#a[@]}`, []string{"array-expand"}},
		{"[[ -f /etc/passwd ]] && echo y", []string{"test-clause"}},
		{`[[ $x == y* ]]`, []string{"test-clause-ext"}},
		{`[[ "$x" =~ ^[0-9]+$ ]]`, []string{"test-clause-ext"}},
		{"[[ -n \"$a\" && -n \"$b\" ]]", []string{"test-clause"}},
		{"((i++))", []string{"arith-command"}},
		{"for ((i=0; i<3; i++)); do echo $i; done", []string{"c-for"}},
		{"echo {1..10}", []string{"brace-range"}},
		{"mkdir -p src/{a,b}", []string{"brace-list"}},
		{"for i in {1..3}; do :; done", []string{"brace-range"}},
		{"x+=1", []string{"compound-assign"}},
		{"grep a <<< \"$s\"", []string{"here-string"}},
		{"diff <(sort a) <(sort b)", []string{"process-subst", "process-subst"}},
		{"make |& tee log", []string{"pipe-amp"}},
		{"echo ${x^^} ${x,,}", []string{"case-conv", "case-conv"}},
		{"echo ${!name}", []string{"indirect-ref"}},
		{"echo ${!BASH*}", []string{"prefix-names"}},
		{"echo ${x@Q}", []string{"param-transform"}},
		{"echo ${x:1:2}", []string{"substring"}},
		{"echo ${x/a/b}", []string{"pattern-subst"}},
		{"function f { :; }", []string{"function-keyword"}},
		{"my-func() { :; }", []string{"function-name"}},
		{"select x in a b; do break; done", []string{"select-in"}},
		{"coproc cat", []string{"coproc"}},
		{"mapfile -t lines < f", []string{"mapfile"}},
		{"readarray lines < f", []string{"mapfile"}},
		{"declare -A m", []string{"declare"}},
		{"typeset -i n=1", []string{"declare"}},
		{"f() { local -r x=1; }", []string{"local-opt"}},
		{"export -f f", []string{"export-f"}},
		{"read -a parts", []string{"read-a"}},
		{"read -t 5 -n 1 k", []string{"read-opt"}},
		{"shopt -s nullglob", []string{"shopt"}},
		{"ls !(*.o)", []string{"extglob"}},
		{"echo $'a\\tb'", []string{"ansi-c-quote"}},
		{"cmd &> log", []string{"redirect-all"}},
		{"cmd &>> log", []string{"redirect-all-append"}},
		{"exec {fd}> f", []string{"fd-variable"}},
		{"source ./env.sh", []string{"source"}},
		{"printf -v out '%s' x", []string{"printf-v"}},
		{"printf '%q\\n' \"$x\"", []string{"printf-q"}},
		{"echo -e 'a\\tb'", []string{"echo-e"}},
		{"let x=1+2", []string{"let"}},
		{"[ \"$a\" == b ]", []string{"test-double-equals"}},
		{"echo $RANDOM", []string{"bash-variable-dash"}},
		{"echo ${PIPESTATUS[0]}", []string{"array-expand", "bash-variable"}},
		{"[ \"$EUID\" -eq 0 ]", []string{"bash-variable"}},
		{"set -euo pipefail", []string{"set-pipefail"}},
		{"trap 'echo err' ERR", []string{"trap-bash"}},
		{"pushd /tmp", []string{"bash-builtin"}},
		{"time make", []string{"time"}},
		{"echo $((2**8))", []string{"arith-ops"}},
		{"echo $[1+2]", []string{"arith-bracket"}},
		{"case $x in a) echo;& b) echo;; esac", []string{"case-fallthrough"}},
		{"sh -c 'a=(1 2)'", []string{"array-def"}},
		{"cat <<EOF\n${a[0]}\nEOF", []string{"array-expand"}}, // an unquoted here-document expands

		// not bashisms, or not shell code for /bin/sh
		{"echo '[[ -f x ]]'", nil},
		{`echo "[[ $x == y ]]"`, nil},
		{"cat <<'EOF'\n${a[0]} [[ x ]] a=(1)\nEOF", nil},
		{"cat <<EOF\n\\${a[0]}\nEOF", nil},
		{"# arrays (x) and [[ tests ]]\necho hi", nil},
		{"echo hi # ${a[0]}", nil},
		{`echo "{1..3}"`, nil},
		{"echo '{a,b}'", nil},
		{"bash -c 'a=(1 2); echo ${a[0]}'", nil},
		{"bash -c '[[ -f x ]]'", nil},
		{"find . -name '*.go' -exec gofmt -l {} +", nil},
		{"git log @{u}..HEAD", nil},
		{"f() { local x=1; }", nil},
		{"echo ${x#pre} ${x%suf} ${x:-def} ${#x}", nil},
		{"[ -f x ] && [ \"$a\" = b ]", nil},
		{"x=$((x + 1))", nil},
		{"printf '%s\\n' a", nil},
		{"echo -n hi", nil},
		{"read -r line", nil},
		{". ./env.sh", nil},
		{"set -eu", nil},
		{"if then", nil}, // does not parse: the shell reports it
	}
	for _, tt := range tests {
		t.Run(tt.script, func(t *testing.T) {
			var got []string
			for _, c := range Bashisms(tt.script) {
				got = append(got, c.Name)
				if c.Fix == "" || len(c.Shells) == 0 || c.Snippet == "" || c.Pos.Line == 0 {
					t.Errorf("incomplete construct %+v", c)
				}
			}
			if !slices.Equal(got, tt.want) {
				t.Errorf("Bashisms(%q) = %v, want %v", tt.script, got, tt.want)
			}
		})
	}
}

func TestNeedsBash(t *testing.T) {
	tests := []struct {
		script, shell string
		want          bool
	}{
		{"echo ${x/a/b}", "ash", false},
		{"echo ${x/a/b}", "dash", true},
		{"echo $'\\t'", "ash", false},
		{"echo $'\\t'", "dash", true},
		{"source f", "ash", false},
		{"source f", "dash", true},
		{"[[ -f x ]]", "ash", false},
		{"[[ -f x ]]", "dash", true},
		{"[[ $a == b* ]]", "ash", true},
		{"a=(1)", "ash", true},
		{"a=(1)", "bash", false},
		{"a=(1)", "zsh-or-unknown", true},
		{"echo ${x/a/b}", "unknown", true},
		{"ls -la", "ash", false},
		{"ls -la", "dash", false},
	}
	for _, tt := range tests {
		got, cs := NeedsBash(tt.script, tt.shell)
		if got != tt.want || got != (len(cs) > 0) {
			t.Errorf("NeedsBash(%q, %q) = %v, %v; want %v", tt.script, tt.shell, got, cs, tt.want)
		}
	}
}

func TestBashismPosition(t *testing.T) {
	cs := Bashisms("echo ok\n  x=(1 2)\nsh -c 'y+=1'")
	if len(cs) != 2 {
		t.Fatalf("got %v", cs)
	}
	if cs[0].Pos != (Pos{2, 3}) || cs[0].Snippet != "x=(1 2)" {
		t.Errorf("first = %+v, want 2:3 x=(1 2)", cs[0])
	}
	// A construct inside sh -c is reported at the string's position.
	if cs[1].Name != "compound-assign" || cs[1].Pos != (Pos{3, 7}) || cs[1].Snippet != "y+=1" {
		t.Errorf("second = %+v", cs[1])
	}
}
