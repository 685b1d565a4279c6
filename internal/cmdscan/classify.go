package cmdscan

import (
	"fmt"
	"path"
	"slices"
	"strings"

	"mvdan.cc/sh/v3/syntax"
)

// Classify reports what script may do when run by a shell in cwd (an
// absolute guest path, or "" when unknown), given the user mounts bound
// into the computer. Relative paths resolve against cwd, following the
// script's own literal cd commands.
//
// A script that does not parse is not an error for the caller to give up
// on: Classify returns a conservative class (Unknown, Writes, Network,
// and every mount as possibly written) together with the parse error.
func Classify(script, cwd string, mounts []Mount) (Class, error) {
	w := newWalker(script, cwd, mounts)
	f, err := parse(script)
	if err != nil {
		w.unknown(syntax.Pos{}, fmt.Sprintf("does not parse: %v", err))
		return w.class(), fmt.Errorf("cmdscan: parse: %w", err)
	}
	w.funcs = funcNames(f)
	dir := w.cwd0
	w.stmts(f.Stmts, &dir)
	return w.class(), nil
}

type walker struct {
	src    string
	cwd0   string
	mounts []Mount
	funcs  map[string]bool
	depth  int
	outer  *syntax.Pos // position reported for findings in nested scripts

	c        Class
	seen     map[string]bool
	mountKey map[string]bool
}

func newWalker(src, cwd string, mounts []Mount) *walker {
	w := &walker{src: src, seen: map[string]bool{}, mountKey: map[string]bool{}}
	if strings.HasPrefix(cwd, "/") {
		w.cwd0 = path.Clean(cwd)
	}
	for _, m := range mounts {
		if !strings.HasPrefix(m.Guest, "/") {
			continue
		}
		m.Guest = path.Clean(m.Guest)
		w.mounts = append(w.mounts, m)
	}
	return w
}

func (w *walker) class() Class {
	c := w.c
	slices.SortStableFunc(c.Findings, func(a, b Finding) int {
		if a.Pos.Line != b.Pos.Line {
			return a.Pos.Line - b.Pos.Line
		}
		return a.Pos.Col - b.Pos.Col
	})
	return c
}

func (w *walker) at(p syntax.Pos) Pos {
	if w.outer != nil {
		return toPos(*w.outer)
	}
	return toPos(p)
}

// flag records f (plus the flags it implies) with a reason.
func (w *walker) flag(f Flag, p syntax.Pos, format string, args ...any) {
	switch f {
	case Destructive, PackageInstall:
		w.c.Flags |= Writes
	}
	w.c.Flags |= f
	reason := fmt.Sprintf(format, args...)
	key := f.String() + "\x00" + reason
	if w.seen[key] {
		return
	}
	w.seen[key] = true
	w.c.Findings = append(w.c.Findings, Finding{Flag: f, Reason: reason, Pos: w.at(p)})
}

// unknown marks the script (or a nested part of it) as not analysable.
func (w *walker) unknown(p syntax.Pos, reason string) {
	w.flag(Unknown, p, "%s", reason)
	w.c.Flags |= Writes | Network
	for _, m := range w.mounts {
		w.useMount(m, m.Guest+"/…", Write, true, p)
	}
}

func (w *walker) useMount(m Mount, p string, acc Access, maybe bool, at syntax.Pos) {
	key := fmt.Sprintf("%s\x00%s\x00%d\x00%t", m.Guest, p, acc, maybe)
	if w.mountKey[key] {
		return
	}
	w.mountKey[key] = true
	w.c.Flags |= TouchesMount
	w.c.Mounts = append(w.c.Mounts, MountUse{Mount: m, Path: p, Access: acc, Maybe: maybe, Pos: w.at(at)})
}

// touch records the mounts that the path a (resolved against cwd) falls
// under. recursive says the command acts on everything below a, so an
// ancestor of a mount touches the mount too.
func (w *walker) touch(a arg, cwd string, acc Access, recursive bool) {
	if len(w.mounts) == 0 {
		return
	}
	p, kind := resolve(a, cwd)
	for _, m := range w.mounts {
		switch kind {
		case pathExact:
			if within(p, m.Guest) || recursive && within(m.Guest, p) {
				w.useMount(m, p, acc, false, a.pos)
			}
		case pathPrefix:
			shown := strings.TrimSuffix(p, "/") + "/…"
			if within(p, m.Guest) {
				w.useMount(m, shown, acc, false, a.pos)
			} else if within(m.Guest, p) {
				w.useMount(m, shown, acc, true, a.pos)
			}
		case pathUnknown:
			if acc == Destroy && !m.ReadOnly {
				shown := a.val + "…"
				if a.static {
					shown = a.val
				}
				w.useMount(m, shown, acc, true, a.pos)
			}
		}
	}
}

// funcNames returns the names of the functions the script declares; calls
// to them are not commands of their own (their bodies are scanned where
// they are declared).
func funcNames(f *syntax.File) map[string]bool {
	names := map[string]bool{}
	syntax.Walk(f, func(n syntax.Node) bool {
		if fd, ok := n.(*syntax.FuncDecl); ok && fd.Name != nil {
			names[fd.Name.Value] = true
		}
		return true
	})
	return names
}

// stmts walks a statement list in order; a literal cd changes *cwd for
// the statements after it.
func (w *walker) stmts(list []*syntax.Stmt, cwd *string) {
	for _, s := range list {
		w.stmt(s, cwd)
	}
}

func (w *walker) stmt(s *syntax.Stmt, cwd *string) {
	if s == nil {
		return
	}
	w.command(s.Cmd, cwd)
	for _, r := range s.Redirs {
		w.redirect(r, *cwd)
	}
}

func (w *walker) command(cmd syntax.Command, cwd *string) {
	switch c := cmd.(type) {
	case nil:
	case *syntax.CallExpr:
		w.callExpr(c, cwd)
	case *syntax.BinaryCmd:
		if c.Op == syntax.Pipe || c.Op == syntax.PipeAll {
			// Each side of a pipe runs in a subshell of its own.
			x, y := *cwd, *cwd
			w.stmt(c.X, &x)
			w.stmt(c.Y, &y)
			return
		}
		w.stmt(c.X, cwd)
		w.stmt(c.Y, cwd)
	case *syntax.Subshell:
		sub := *cwd
		w.stmts(c.Stmts, &sub)
	case *syntax.Block:
		w.stmts(c.Stmts, cwd)
	case *syntax.IfClause:
		w.stmts(c.Cond, cwd)
		w.stmts(c.Then, cwd)
		if c.Else != nil {
			w.command(c.Else, cwd)
		}
	case *syntax.WhileClause:
		w.stmts(c.Cond, cwd)
		w.stmts(c.Do, cwd)
	case *syntax.ForClause:
		w.nodeSubsts(c.Loop, *cwd)
		w.stmts(c.Do, cwd)
	case *syntax.CaseClause:
		w.nodeSubsts(c.Word, *cwd)
		for _, it := range c.Items {
			for _, p := range it.Patterns {
				w.nodeSubsts(p, *cwd)
			}
			w.stmts(it.Stmts, cwd)
		}
	case *syntax.FuncDecl:
		body := *cwd
		w.stmt(c.Body, &body)
	case *syntax.TimeClause:
		w.stmt(c.Stmt, cwd)
	case *syntax.CoprocClause:
		sub := *cwd
		w.stmt(c.Stmt, &sub)
	case *syntax.DeclClause:
		for _, a := range c.Args {
			w.nodeSubsts(a, *cwd)
		}
	default: // ArithmCmd, TestClause, LetClause, TestDecl
		w.nodeSubsts(c, *cwd)
	}
}

// nodeSubsts walks the command and process substitutions inside n.
func (w *walker) nodeSubsts(n syntax.Node, cwd string) {
	if n == nil {
		return
	}
	syntax.Walk(n, func(n syntax.Node) bool {
		switch n := n.(type) {
		case *syntax.CmdSubst:
			sub := cwd
			w.stmts(n.Stmts, &sub)
			return false
		case *syntax.ProcSubst:
			sub := cwd
			w.stmts(n.Stmts, &sub)
			return false
		}
		return true
	})
}

var harmlessDevices = map[string]bool{
	"/dev/null": true, "/dev/stdout": true, "/dev/stderr": true, "/dev/stdin": true,
	"/dev/tty": true, "/dev/zero": true, "/dev/full": true, "/dev/random": true, "/dev/urandom": true,
}

func isHarmlessDevice(p string) bool {
	return harmlessDevices[p] || strings.HasPrefix(p, "/dev/fd/") || strings.HasPrefix(p, "/dev/pts/") || strings.HasPrefix(p, "/proc/self/fd/")
}

func (w *walker) redirect(r *syntax.Redirect, cwd string) {
	if r.Hdoc != nil {
		w.nodeSubsts(r.Hdoc, cwd)
	}
	if r.Word == nil {
		return
	}
	w.nodeSubsts(r.Word, cwd)
	switch r.Op {
	case syntax.RdrOut, syntax.AppOut, syntax.RdrClob, syntax.AppClob, syntax.RdrAll, syntax.AppAll, syntax.RdrAllClob, syntax.AppAllClob, syntax.RdrInOut:
	case syntax.RdrIn:
		w.touch(wordArg(r.Word), cwd, Read, false)
		return
	case syntax.DplOut:
		if v := litWord(r.Word); v == "-" || isDigits(v) {
			return
		}
	default:
		return
	}
	a := wordArg(r.Word)
	p, kind := resolve(a, cwd)
	if kind == pathExact && isHarmlessDevice(p) {
		return
	}
	if kind == pathExact && strings.HasPrefix(p, "/dev/") {
		w.flag(Destructive, r.OpPos, "redirects output to the device %s", p)
		w.touch(a, cwd, Destroy, false)
		return
	}
	w.flag(Writes, r.OpPos, "redirects output to %s", display(a))
	w.touch(a, cwd, Write, false)
}

func display(a arg) string {
	if a.static {
		return a.val
	}
	return a.val + "…"
}

func (w *walker) callExpr(c *syntax.CallExpr, cwd *string) {
	for _, a := range c.Assigns {
		w.nodeSubsts(a, *cwd)
	}
	if len(c.Args) == 0 {
		return
	}
	args := make([]arg, len(c.Args))
	for i, word := range c.Args {
		w.nodeSubsts(word, *cwd)
		args[i] = wordArg(word)
	}
	w.run(args, cwd, c.Pos(), false)
}
