package cmdscan

import (
	"fmt"
	"path"
	"slices"
	"strings"

	"mvdan.cc/sh/v3/syntax"
)

// Shell names used in [Construct.Shells] and by [NeedsBash].
const (
	Ash  = "ash"  // BusyBox ash as built by Alpine (with its bash compatibility options)
	Dash = "dash" // Debian's and Ubuntu's /bin/sh
	Bash = "bash"
)

var (
	both     = []string{Ash, Dash}
	dashOnly = []string{Dash}
)

// Pos is a 1-based line and column in the scanned script.
type Pos struct {
	Line, Col int
}

func (p Pos) String() string { return fmt.Sprintf("%d:%d", p.Line, p.Col) }

func toPos(p syntax.Pos) Pos { return Pos{Line: int(p.Line()), Col: int(p.Col())} }

// Construct is one use of bash-only syntax.
type Construct struct {
	Name    string   // stable identifier, e.g. "array-def", "test-clause"
	Pos     Pos      // where it starts in the script
	Snippet string   // the source text, on one line and shortened
	Fix     string   // how to write it portably
	Shells  []string // which of "ash" and "dash" lack it or mishandle it
}

func (c Construct) String() string {
	return fmt.Sprintf("%s %s (%s): %s", c.Pos, c.Name, strings.Join(c.Shells, ", "), c.Snippet)
}

// rule describes one kind of construct.
type rule struct {
	shells []string
	fix    string
}

var rules = map[string]rule{
	"array-def":           {both, "use positional parameters (set -- a b c; \"$@\") or a newline-separated string"},
	"array-expand":        {both, "use positional parameters (\"$@\", $#) or a newline-separated string"},
	"test-clause":         {dashOnly, "use [ ... ] (POSIX test); combine tests with && and || outside the brackets"},
	"test-clause-ext":     {both, "use [ ... ] for tests, case for patterns, and expr or grep -E for regular expressions"},
	"arith-command":       {both, "use [ \"$((expr))\" -ne 0 ] or x=$((x + 1))"},
	"c-for":               {both, "use i=0; while [ \"$i\" -lt N ]; do ...; i=$((i + 1)); done"},
	"brace-range":         {both, "use $(seq 1 3) or a while loop"},
	"brace-list":          {both, "spell the words out: a b instead of {a,b}"},
	"compound-assign":     {both, "use x=\"${x}more\" or x=$((x + n))"},
	"here-string":         {both, "use printf '%s\\n' \"$x\" | cmd or a here-document"},
	"process-subst":       {both, "write to a temporary file or use a pipe"},
	"pipe-amp":            {both, "use cmd 2>&1 | other"},
	"redirect-all":        {dashOnly, "use >file 2>&1"},
	"redirect-all-append": {both, "use >>file 2>&1"},
	"redirect-dup-file":   {dashOnly, "use >file 2>&1"},
	"fd-variable":         {both, "use a fixed descriptor number: exec 3>file"},
	"case-conv":           {both, "use tr '[:lower:]' '[:upper:]' (or the reverse)"},
	"indirect-ref":        {both, "use eval \"v=\\${$name}\" with a validated name"},
	"prefix-names":        {both, "use set | sed -n 's/^\\(prefix[A-Za-z0-9_]*\\)=.*/\\1/p'"},
	"param-transform":     {both, "use printf or sed to transform the value"},
	"substring":           {dashOnly, "use cut -c, expr substr or printf '%.Ns'"},
	"pattern-subst":       {dashOnly, "use sed or ${x%pat}/${x#pat} trimming"},
	"ansi-c-quote":        {dashOnly, "use printf '\\t' or a literal character"},
	"locale-string":       {both, "use a plain \"...\" string"},
	"arith-bracket":       {both, "use $((expr))"},
	"arith-ops":           {dashOnly, "use x=$((x + 1)) instead of ++/--, and repeated * instead of **"},
	"function-keyword":    {dashOnly, "use name() { ...; }"},
	"function-name":       {both, "use a name of letters, digits and underscores"},
	"select-in":           {both, "print a numbered menu and read the choice"},
	"coproc":              {both, "use a named pipe (mkfifo) and a background job"},
	"extglob":             {both, "use case patterns, find or grep instead of extended globs"},
	"case-fallthrough":    {both, "repeat the commands or use separate case statements"},
	"declare":             {both, "use plain assignments (and export or readonly)"},
	"local-opt":           {both, "use plain local name=value"},
	"export-f":            {both, "define the function in the child script, or source a file"},
	"export-opt":          {dashOnly, "use plain export name=value (or unset)"},
	"mapfile":             {both, "use while IFS= read -r line; do ...; done"},
	"read-a":              {both, "read into separate variables or use set -- $line"},
	"read-opt":            {dashOnly, "use plain read -r (and stty, dd or head -c for raw input)"},
	"read-opt-ext":        {both, "use plain read -r"},
	"shopt":               {both, "drop shopt; write the script without bash options"},
	"source":              {dashOnly, "use . file"},
	"printf-v":            {both, "use var=$(printf ...)"},
	"printf-q":            {both, "quote with sed \"s/'/'\\\\\\\\''/g\" inside single quotes"},
	"echo-e":              {dashOnly, "use printf '...\\n' instead of echo -e"},
	"let":                 {dashOnly, "use x=$((expr))"},
	"test-double-equals":  {dashOnly, "use = inside [ ]"},
	"bash-builtin":        {both, "use cd and a saved directory, or portable equivalents"},
	"bash-variable":       {both, "compute the value explicitly (id -u, date +%s, awk 'BEGIN{srand(); print int(rand()*32768)}')"},
	"bash-variable-dash":  {dashOnly, "compute the value explicitly (hostname, awk rand(), date +%s)"},
	"set-pipefail":        {dashOnly, "check each command's status, or write the intermediate output to a file"},
	"set-opt":             {both, "drop the bash-only option"},
	"trap-bash":           {both, "use trap ... EXIT and check $? explicitly"},
	"time":                {dashOnly, "use date +%s before and after, or install the time package"},
}

// bashVars are variables that bash sets and the other shells leave empty.
var bashVars = map[string]bool{
	"PIPESTATUS": true, "BASH_REMATCH": true, "FUNCNAME": true, "BASH_SOURCE": true,
	"BASH_LINENO": true, "BASH_ARGV": true, "BASH_ARGC": true, "BASHPID": true,
	"DIRSTACK": true, "GROUPS": true, "UID": true, "EUID": true, "OSTYPE": true,
	"MACHTYPE": true, "HOSTTYPE": true, "SECONDS": true, "BASH_COMMAND": true,
	"BASH_SUBSHELL": true, "COMP_WORDS": true, "READLINE_LINE": true,
}

// dashMissingVars are set by bash and by BusyBox ash but not by dash.
var dashMissingVars = map[string]bool{
	"RANDOM": true, "HOSTNAME": true, "EPOCHSECONDS": true, "EPOCHREALTIME": true,
}

var bashBuiltins = map[string]bool{
	"pushd": true, "popd": true, "dirs": true, "disown": true, "suspend": true,
	"caller": true, "compgen": true, "complete": true, "compopt": true, "bind": true,
	"enable": true, "logout": true,
}

// shells that run a -c string with /bin/sh semantics; bash, zsh and ksh
// strings are left alone because they do not run under ash or dash.
var posixShells = map[string]bool{"sh": true, "ash": true, "dash": true, "busybox": true}

// Bashisms returns the bash-only constructs in script, in source order.
// Text that is not shell code for /bin/sh is not scanned: quoted strings,
// quoted here-document bodies, comments and the strings given to bash -c.
// Strings given to sh -c (or ash -c, dash -c, eval) are scanned.
// A script that does not parse yields no constructs: the shell will
// report the syntax error itself.
func Bashisms(script string) []Construct {
	f, err := parse(script)
	if err != nil {
		return nil
	}
	s := &bscan{src: script}
	s.file(f)
	slices.SortStableFunc(s.out, func(a, b Construct) int {
		if a.Pos.Line != b.Pos.Line {
			return a.Pos.Line - b.Pos.Line
		}
		return a.Pos.Col - b.Pos.Col
	})
	return s.out
}

// NeedsBash reports whether script uses a construct that shell lacks,
// and which. shell is "ash", "dash" or "bash"; bash needs nothing. An
// unknown shell name is treated as lacking everything ash or dash lacks.
func NeedsBash(script, shell string) (bool, []Construct) {
	if shell == Bash {
		return false, nil
	}
	var out []Construct
	for _, c := range Bashisms(script) {
		if shell != Ash && shell != Dash || slices.Contains(c.Shells, shell) {
			out = append(out, c)
		}
	}
	return len(out) > 0, out
}

type bscan struct {
	src   string
	out   []Construct
	depth int
	outer *syntax.Pos // set while scanning a nested sh -c string
	seen  map[string]bool
}

func (s *bscan) add(name string, n syntax.Node) {
	r := rules[name]
	p := n.Pos()
	snip := snippet(s.src, n)
	if s.outer != nil {
		p = *s.outer
	}
	key := name + "@" + toPos(p).String() + snip
	if s.seen == nil {
		s.seen = map[string]bool{}
	}
	if s.seen[key] {
		return
	}
	s.seen[key] = true
	s.out = append(s.out, Construct{Name: name, Pos: toPos(p), Snippet: snip, Fix: r.fix, Shells: r.shells})
}

func (s *bscan) file(f *syntax.File) {
	syntax.Walk(f, s.visit)
}

func (s *bscan) visit(n syntax.Node) bool {
	switch n := n.(type) {
	case *syntax.Comment:
		return false
	case *syntax.Redirect:
		s.redirect(n)
	case *syntax.Stmt:
		if n.Coprocess {
			s.add("pipe-amp", n)
		}
	case *syntax.BinaryCmd:
		if n.Op == syntax.PipeAll {
			s.add("pipe-amp", n)
		}
	case *syntax.ArithmCmd:
		s.add("arith-command", n)
	case *syntax.ForClause:
		if n.Select {
			s.add("select-in", n)
		}
		if _, ok := n.Loop.(*syntax.CStyleLoop); ok {
			s.add("c-for", n)
			return true
		}
	case *syntax.WordIter:
		for _, w := range n.Items {
			s.braces(w)
		}
	case *syntax.TestClause:
		if why := testClauseExtended(n.X); why {
			s.add("test-clause-ext", n)
		} else {
			s.add("test-clause", n)
		}
	case *syntax.CoprocClause:
		s.add("coproc", n)
	case *syntax.TimeClause:
		s.add("time", n)
	case *syntax.LetClause:
		s.add("let", n)
	case *syntax.FuncDecl:
		if n.RsrvWord {
			s.add("function-keyword", n)
		}
		if n.Name != nil && !isName(n.Name.Value) {
			s.add("function-name", n)
		}
	case *syntax.CaseItem:
		if n.Op == syntax.Fallthrough || n.Op == syntax.Resume {
			s.add("case-fallthrough", n)
		}
	case *syntax.DeclClause:
		s.decl(n)
	case *syntax.Assign:
		if n.Append {
			s.add("compound-assign", n)
		}
		if n.Array != nil || n.Index != nil {
			s.add("array-def", n)
		}
	case *syntax.ParamExp:
		s.param(n)
	case *syntax.SglQuoted:
		if n.Dollar {
			s.add("ansi-c-quote", n)
		}
	case *syntax.DblQuoted:
		if n.Dollar {
			s.add("locale-string", n)
		}
	case *syntax.ArithmExp:
		if n.Bracket {
			s.add("arith-bracket", n)
		}
		if arithBashOps(n.X) {
			s.add("arith-ops", n)
		}
	case *syntax.ProcSubst:
		s.add("process-subst", n)
	case *syntax.ExtGlob:
		s.add("extglob", n)
	case *syntax.CallExpr:
		s.call(n)
	}
	return true
}

func isName(s string) bool {
	if s == "" || s[0] >= '0' && s[0] <= '9' {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9') {
			return false
		}
	}
	return true
}

func (s *bscan) redirect(r *syntax.Redirect) {
	switch r.Op {
	case syntax.WordHdoc:
		s.add("here-string", r)
	case syntax.RdrAll:
		s.add("redirect-all", r)
	case syntax.AppAll:
		s.add("redirect-all-append", r)
	case syntax.DplOut:
		if v := litWord(r.Word); v != "" && v != "-" && !isDigits(v) && r.N == nil {
			s.add("redirect-dup-file", r)
		}
	}
	if r.N != nil && strings.HasPrefix(r.N.Value, "{") {
		s.add("fd-variable", r)
	}
}

func isDigits(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return s != ""
}

// testClauseExtended reports whether a [[ ]] test needs more than BusyBox
// ash's [[: ash handles &&, || and =~ inside it (checked against BusyBox
// 1.35), but still splits and globs unquoted words and reads < and > as
// redirections.
func testClauseExtended(x syntax.TestExpr) bool {
	switch x := x.(type) {
	case *syntax.BinaryTest:
		switch x.Op {
		case syntax.TsBefore, syntax.TsAfter:
			return true
		case syntax.TsMatch, syntax.TsNoMatch, syntax.TsMatchShort:
			if w, ok := x.Y.(*syntax.Word); ok && unquotedGlob(w) {
				return true
			}
		}
		return testClauseExtended(x.X) || testClauseExtended(x.Y)
	case *syntax.UnaryTest:
		switch x.Op {
		case syntax.TsVarSet, syntax.TsRefVar, syntax.TsOptSet, syntax.TsParen:
			return true
		}
		return testClauseExtended(x.X)
	case *syntax.ParenTest:
		return true
	case *syntax.Word:
		// Unquoted expansions are split (and an empty one vanishes) in ash.
		for _, p := range x.Parts {
			switch p.(type) {
			case *syntax.ParamExp, *syntax.CmdSubst, *syntax.ArithmExp:
				return true
			}
		}
		return unquotedGlob(x)
	}
	return false
}

func unquotedGlob(w *syntax.Word) bool {
	for _, p := range w.Parts {
		switch p := p.(type) {
		case *syntax.Lit:
			if strings.ContainsAny(p.Value, "*?[") {
				return true
			}
		case *syntax.ExtGlob:
			return true
		}
	}
	return false
}

func arithBashOps(x syntax.ArithmExpr) bool {
	found := false
	if x == nil {
		return false
	}
	syntax.Walk(x, func(n syntax.Node) bool {
		switch n := n.(type) {
		case *syntax.UnaryArithm:
			if n.Op == syntax.Inc || n.Op == syntax.Dec {
				found = true
			}
		case *syntax.BinaryArithm:
			if n.Op == syntax.Pow || n.Op == syntax.PowAssgn {
				found = true
			}
		case *syntax.CmdSubst:
			return false
		}
		return !found
	})
	return found
}

func (s *bscan) param(p *syntax.ParamExp) {
	switch {
	case p.Excl && p.Names != 0:
		s.add("prefix-names", p)
	case p.Excl && p.Index == nil:
		s.add("indirect-ref", p)
	case p.Index != nil:
		s.add("array-expand", p)
	case p.Slice != nil:
		s.add("substring", p)
	case p.Repl != nil:
		s.add("pattern-subst", p)
	case p.Exp != nil:
		switch p.Exp.Op {
		case syntax.UpperFirst, syntax.UpperAll, syntax.LowerFirst, syntax.LowerAll:
			s.add("case-conv", p)
		case syntax.OtherParamOps:
			s.add("param-transform", p)
		}
	}
	if p.Param != nil && !p.Excl {
		switch {
		case bashVars[p.Param.Value]:
			s.add("bash-variable", p)
		case dashMissingVars[p.Param.Value]:
			s.add("bash-variable-dash", p)
		}
	}
}

func (s *bscan) decl(d *syntax.DeclClause) {
	switch d.Variant.Value {
	case "declare", "typeset", "nameref":
		s.add("declare", d)
		return
	}
	for _, a := range d.Args {
		if !a.Naked || a.Name != nil || a.Value == nil {
			continue
		}
		opt := litWord(a.Value)
		if !strings.HasPrefix(opt, "-") && !strings.HasPrefix(opt, "+") {
			continue
		}
		switch d.Variant.Value {
		case "local":
			if opt != "-" {
				s.add("local-opt", d)
			}
		case "export":
			switch {
			case strings.Contains(opt, "f"):
				s.add("export-f", d)
			case opt != "-p":
				s.add("export-opt", d)
			}
		case "readonly":
			if opt != "-p" {
				s.add("declare", d)
			}
		}
	}
}

// braces reports unquoted brace expansions in w, which ash and dash
// leave as literal text.
func (s *bscan) braces(w *syntax.Word) {
	if !slices.ContainsFunc(w.Parts, func(p syntax.WordPart) bool {
		l, ok := p.(*syntax.Lit)
		return ok && strings.Contains(l.Value, "{")
	}) {
		return
	}
	c := &syntax.Word{Parts: slices.Clone(w.Parts)}
	if !syntax.SplitBraces(c) {
		return
	}
	for _, p := range c.Parts {
		if b, ok := p.(*syntax.BraceExp); ok {
			if b.Sequence {
				s.add("brace-range", w)
			} else {
				s.add("brace-list", w)
			}
			return
		}
	}
}

func (s *bscan) call(c *syntax.CallExpr) {
	for _, w := range c.Args[min(1, len(c.Args)):] {
		s.braces(w)
	}
	if len(c.Args) == 0 {
		return
	}
	args := c.Args
	name := path.Base(litWord(args[0]))
	// Look through wrappers that run their arguments as a command.
	for i := 0; i < 4 && len(args) > 1; i++ {
		switch name {
		case "command", "exec", "builtin", "nohup", "time", "nice":
			args = args[1:]
			for len(args) > 1 && strings.HasPrefix(litWord(args[0]), "-") {
				args = args[1:]
			}
			name = path.Base(litWord(args[0]))
			continue
		}
		break
	}
	switch name {
	case "mapfile", "readarray":
		s.add("mapfile", c)
	case "shopt":
		s.add("shopt", c)
	case "source":
		s.add("source", c)
	case "let":
		s.add("let", c)
	case "printf":
		s.printf(c, args)
	case "echo":
		if len(args) > 1 {
			if o := litWord(args[1]); len(o) > 1 && o[0] == '-' && strings.Trim(o[1:], "neE") == "" && strings.Contains(o, "e") {
				s.add("echo-e", c)
			}
		}
	case "read":
		s.read(c, args)
	case "[", "test":
		for _, w := range args[1:] {
			if litWord(w) == "==" {
				s.add("test-double-equals", c)
				break
			}
		}
	case "set":
		s.set(c, args)
	case "trap":
		for _, w := range args[1:] {
			switch litWord(w) {
			case "ERR", "DEBUG", "RETURN":
				s.add("trap-bash", c)
			}
		}
	case "sh", "ash", "dash":
		s.nested(c, args)
	case "eval":
		s.eval(c, args)
	default:
		if bashBuiltins[name] {
			s.add("bash-builtin", c)
		}
	}
}

func (s *bscan) printf(c *syntax.CallExpr, args []*syntax.Word) {
	if len(args) < 2 {
		return
	}
	if o := litWord(args[1]); o == "-v" || strings.HasPrefix(o, "-v") && len(o) > 2 && isName(o[2:]) {
		s.add("printf-v", c)
		return
	}
	format := wordArg(args[1])
	if format.static && (strings.Contains(format.val, "%q") || strings.Contains(format.val, "%(")) {
		s.add("printf-q", c)
	}
}

func (s *bscan) read(c *syntax.CallExpr, args []*syntax.Word) {
	for _, w := range args[1:] {
		o := litWord(w)
		if !strings.HasPrefix(o, "-") || o == "-" {
			break
		}
		if o == "--" {
			break
		}
		for _, f := range o[1:] {
			switch f {
			case 'a':
				s.add("read-a", c)
			case 'e', 'i', 'N':
				s.add("read-opt-ext", c)
			case 'd', 'n', 's', 't', 'u':
				s.add("read-opt", c)
			}
		}
	}
}

// posixSetOpts are the set -o options that ash and dash both accept.
var posixSetOpts = map[string]bool{
	"allexport": true, "errexit": true, "ignoreeof": true, "monitor": true,
	"noclobber": true, "noglob": true, "noexec": true, "nolog": true, "notify": true,
	"nounset": true, "verbose": true, "vi": true, "xtrace": true, "emacs": true,
}

func (s *bscan) set(c *syntax.CallExpr, args []*syntax.Word) {
	for i := 1; i < len(args); i++ {
		o := litWord(args[i])
		if len(o) > 1 && (o[0] == '-' || o[0] == '+') && o[len(o)-1] == 'o' && i+1 < len(args) {
			i++
			switch v := litWord(args[i]); {
			case v == "pipefail":
				s.add("set-pipefail", c)
			case v != "" && !posixSetOpts[v]:
				s.add("set-opt", c)
			}
			continue
		}
		if len(o) > 1 && (o[0] == '-' || o[0] == '+') && o != "--" {
			if strings.ContainsAny(o[1:], "ETHBPk") {
				s.add("set-opt", c)
			}
			continue
		}
		break
	}
}

// nested scans the string given to sh -c as a script of its own.
func (s *bscan) nested(c *syntax.CallExpr, args []*syntax.Word) {
	for i := 1; i < len(args); i++ {
		o := litWord(args[i])
		if !strings.HasPrefix(o, "-") || o == "-" || o == "--" {
			return
		}
		if strings.Contains(o, "c") && !strings.HasPrefix(o, "--") && i+1 < len(args) {
			s.inner(args[i+1])
			return
		}
	}
}

func (s *bscan) eval(c *syntax.CallExpr, args []*syntax.Word) {
	var parts []string
	for _, w := range args[1:] {
		a := wordArg(w)
		if !a.static {
			return
		}
		parts = append(parts, a.val)
	}
	if len(parts) > 0 {
		s.innerText(strings.Join(parts, " "), args[1].Pos())
	}
}

func (s *bscan) inner(w *syntax.Word) {
	a := wordArg(w)
	if a.static {
		s.innerText(a.val, w.Pos())
	}
}

func (s *bscan) innerText(src string, at syntax.Pos) {
	if s.depth >= maxDepth {
		return
	}
	f, err := parse(src)
	if err != nil {
		return
	}
	inner := &bscan{src: src, depth: s.depth + 1, seen: s.seen}
	if s.outer != nil {
		at = *s.outer
	}
	inner.outer = &at
	inner.file(f)
	s.seen = inner.seen
	s.out = append(s.out, inner.out...)
}
