package cmdscan

import (
	"path"
	"strings"

	"mvdan.cc/sh/v3/syntax"
)

// maxDepth bounds how deeply `sh -c`, `eval`, `xargs`, `find -exec` and
// wrapper commands are followed, so a hostile script cannot make the
// scanner recurse without end.
const maxDepth = 8

// parse parses src as bash, the widest dialect the computer can run.
func parse(src string) (*syntax.File, error) {
	return syntax.NewParser(syntax.Variant(syntax.LangBash)).Parse(strings.NewReader(src), "")
}

// arg is a command word as far as it can be known before running it.
type arg struct {
	val    string // the whole value when static, else its static prefix
	static bool   // no expansion, substitution or tilde: val is exact
	glob   bool   // unquoted glob or brace characters in val
	pos    syntax.Pos
}

// wordArg evaluates the static part of w.
func wordArg(w *syntax.Word) arg {
	var b strings.Builder
	a := arg{static: true, pos: w.Pos()}
parts:
	for i, p := range w.Parts {
		switch p := p.(type) {
		case *syntax.Lit:
			v := p.Value
			if i == 0 && strings.HasPrefix(v, "~") {
				a.static = false
				break parts
			}
			if strings.ContainsAny(v, "*?[{") {
				a.glob = true
			}
			b.WriteString(unescape(v, false))
		case *syntax.SglQuoted:
			if p.Dollar {
				a.static = false
				break parts
			}
			b.WriteString(p.Value)
		case *syntax.DblQuoted:
			for _, q := range p.Parts {
				lit, ok := q.(*syntax.Lit)
				if !ok {
					a.static = false
					break parts
				}
				b.WriteString(unescape(lit.Value, true))
			}
		default:
			a.static = false
			break parts
		}
	}
	a.val = b.String()
	return a
}

// unescape removes the backslashes the shell would remove from a literal.
func unescape(s string, dquoted bool) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c == '\\' && i+1 < len(s) {
			n := s[i+1]
			if !dquoted || strings.IndexByte("\"\\$`\n", n) >= 0 {
				if n != '\n' {
					b.WriteByte(n)
				}
				i++
				continue
			}
		}
		b.WriteByte(c)
	}
	return b.String()
}

// pathKind says how much of a path is known statically.
type pathKind int

const (
	pathUnknown pathKind = iota // nothing usable: "$x", "~/x", relative with unknown cwd
	pathPrefix                  // a known directory, then unknown parts: "/mnt/$x", "/mnt/*"
	pathExact                   // fully known: "/mnt/data/x"
)

// resolve turns a into a clean absolute guest path, as far as possible.
func resolve(a arg, cwd string) (string, pathKind) {
	p := a.val
	kind := pathExact
	if !a.static || a.glob {
		kind = pathPrefix
		if a.glob {
			if i := strings.IndexAny(p, "*?[{"); i >= 0 {
				p = p[:i]
			}
		}
		i := strings.LastIndexByte(p, '/')
		if i < 0 {
			p = ""
		} else {
			p = p[:i+1]
		}
		if p == "" && !a.static {
			return "", pathUnknown
		}
	}
	if !strings.HasPrefix(p, "/") {
		if cwd == "" {
			return "", pathUnknown
		}
		p = cwd + "/" + p
	}
	return path.Clean(p), kind
}

// within reports whether p is dir or below it; both are clean and absolute.
func within(p, dir string) bool {
	if dir == "/" {
		return true
	}
	return p == dir || strings.HasPrefix(p, dir+"/")
}

// snippet returns the source text of n, on one line and at most 80 bytes.
func snippet(src string, n syntax.Node) string {
	start, end := int(n.Pos().Offset()), int(n.End().Offset())
	if start < 0 || start > len(src) {
		return ""
	}
	if end < start || end > len(src) {
		end = len(src)
	}
	s := src[start:end]
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s = s[:i] + " …"
	}
	if len(s) > 80 {
		cut := 77
		for cut > 0 && s[cut]&0xC0 == 0x80 {
			cut--
		}
		s = s[:cut] + "…"
	}
	return s
}

// litWord returns the value of w when it is static, else "".
func litWord(w *syntax.Word) string {
	if w == nil {
		return ""
	}
	a := wordArg(w)
	if !a.static {
		return ""
	}
	return a.val
}
