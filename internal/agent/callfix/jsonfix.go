package callfix

import (
	"bytes"
	"fmt"
	"regexp"
	"unicode/utf8"
)

// repaired is what repairJSON made of a model's arguments.
type repaired struct {
	out []byte // valid JSON
	// truncated: the input ended before its value did; lossy: a string,
	// number or member was cut or dropped when closing it up (only
	// closing brackets missing is not lossy).
	truncated, lossy bool
	cutIn            string   // where the input ended, for messages
	fixes            []string // other repairs, in words
}

// syntaxError is JSON that cannot be repaired: Off is the byte offset
// of the problem in the input.
type syntaxError struct {
	Off int
	Msg string
}

// jsonParser copies one JSON value from in to out, repairing what can
// be repaired without guessing: a value cut off by the end of the
// input is closed up (a cut string closed, a member with no value
// dropped, missing brackets added), trailing commas are dropped, raw
// control characters in strings are escaped, and Python's True, False
// and None become JSON's. Anything else is a syntaxError.
type jsonParser struct {
	in      []byte
	i       int
	out     []byte
	eof     bool // the input ended inside the value
	r       repaired
	commas  bool
	ctrl    bool
	escapes bool
	python  bool
}

func repairJSON(in []byte) (repaired, *syntaxError) {
	p := &jsonParser{in: in}
	p.ws()
	if p.end() {
		return repaired{out: []byte("{}")}, nil
	}
	ok, err := p.value(0)
	if err != nil {
		return repaired{}, err
	}
	if !ok {
		return repaired{}, &syntaxError{Off: len(in), Msg: "the input ends before any value"}
	}
	if !p.eof {
		p.ws()
		extra := p.i
		for !p.end() && (p.in[p.i] == '}' || p.in[p.i] == ']' || isSpace(p.in[p.i])) {
			p.i++
		}
		if !p.end() {
			return repaired{}, &syntaxError{Off: p.i, Msg: "more data after the end of the JSON value"}
		}
		if extra < len(in) {
			p.r.fixes = append(p.r.fixes, "extra closing brackets at the end were removed")
		}
	}
	if p.commas {
		p.r.fixes = append(p.r.fixes, "trailing commas were removed")
	}
	if p.ctrl {
		p.r.fixes = append(p.r.fixes, "raw line breaks or tabs inside strings were escaped")
	}
	if p.escapes {
		p.r.fixes = append(p.r.fixes, "backslashes that started no JSON escape were kept as backslashes")
	}
	if p.python {
		p.r.fixes = append(p.r.fixes, "True, False and None were read as true, false and null")
	}
	p.r.truncated = p.eof
	p.r.out = p.out
	return p.r, nil
}

// maxDepth bounds nesting, so that hostile input cannot exhaust the
// stack.
const maxDepth = 200

func (p *jsonParser) end() bool { return p.i >= len(p.in) }

func isSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }

func (p *jsonParser) ws() {
	for !p.end() && isSpace(p.in[p.i]) {
		p.i++
	}
}

func (p *jsonParser) cut(where string) {
	p.eof = true
	if p.r.cutIn == "" {
		p.r.cutIn = where
	}
}

func (p *jsonParser) fail(format string, args ...any) *syntaxError {
	return &syntaxError{Off: p.i, Msg: fmt.Sprintf(format, args...)}
}

// value parses one value at p.i (not at the end of the input). ok is
// false when the input ended before anything usable was read: the
// caller drops what led to it.
func (p *jsonParser) value(depth int) (ok bool, err *syntaxError) {
	if depth > maxDepth {
		return false, p.fail("nesting deeper than %d levels", maxDepth)
	}
	switch c := p.in[p.i]; {
	case c == '{':
		return true, p.object(depth)
	case c == '[':
		return true, p.array(depth)
	case c == '"':
		if closed := p.str(); !closed {
			p.r.lossy = true
			p.cut("inside a string")
		}
		return true, nil
	case c == '-' || c >= '0' && c <= '9':
		return p.number()
	default:
		return p.literal()
	}
}

func (p *jsonParser) object(depth int) *syntaxError {
	p.out = append(p.out, '{')
	p.i++
	for n := 0; ; n++ {
		mark := len(p.out)
		p.ws()
		if p.end() {
			p.cut("after a member")
			p.out = append(p.out, '}')
			return nil
		}
		if p.in[p.i] == '}' {
			p.i++
			p.out = append(p.out, '}')
			return nil
		}
		if n > 0 {
			if p.in[p.i] != ',' {
				return p.fail("expected a comma or } after an object member, got %s", show(p.in[p.i:]))
			}
			p.i++
			p.ws()
			if p.end() {
				p.cut("after a comma")
				p.out = append(p.out, '}')
				return nil
			}
			if p.in[p.i] == '}' {
				p.commas = true
				continue
			}
			p.out = append(p.out, ',')
		}
		if p.in[p.i] != '"' {
			return p.fail("expected a quoted field name, got %s", show(p.in[p.i:]))
		}
		dropped := func(where string) *syntaxError {
			p.out = append(p.out[:mark], '}')
			p.r.lossy = true
			p.cut(where)
			return nil
		}
		if !p.str() {
			return dropped("inside a field name")
		}
		p.ws()
		if p.end() {
			return dropped("after a field name")
		}
		if p.in[p.i] != ':' {
			return p.fail("expected a colon after the field name, got %s", show(p.in[p.i:]))
		}
		p.i++
		p.out = append(p.out, ':')
		p.ws()
		if p.end() {
			return dropped("before a field's value")
		}
		ok, err := p.value(depth + 1)
		if err != nil {
			return err
		}
		if !ok {
			return dropped("inside a field's value")
		}
		if p.eof {
			p.out = append(p.out, '}')
			return nil
		}
	}
}

func (p *jsonParser) array(depth int) *syntaxError {
	p.out = append(p.out, '[')
	p.i++
	for n := 0; ; n++ {
		mark := len(p.out)
		p.ws()
		if p.end() {
			p.cut("inside an array")
			p.out = append(p.out, ']')
			return nil
		}
		if p.in[p.i] == ']' {
			p.i++
			p.out = append(p.out, ']')
			return nil
		}
		if n > 0 {
			if p.in[p.i] != ',' {
				return p.fail("expected a comma or ] after an array element, got %s", show(p.in[p.i:]))
			}
			p.i++
			p.ws()
			if p.end() {
				p.cut("after a comma")
				p.out = append(p.out, ']')
				return nil
			}
			if p.in[p.i] == ']' {
				p.commas = true
				continue
			}
			p.out = append(p.out, ',')
		}
		ok, err := p.value(depth + 1)
		if err != nil {
			return err
		}
		if !ok {
			p.out = append(p.out[:mark], ']')
			p.r.lossy = true
			return nil
		}
		if p.eof {
			p.out = append(p.out, ']')
			return nil
		}
	}
}

// str copies a string at p.i. It reports false when the input ended
// inside it; the copy is then closed (an incomplete escape or UTF-8
// sequence at the end left out).
func (p *jsonParser) str() (closed bool) {
	open := len(p.out)
	p.out = append(p.out, '"')
	p.i++
	for !p.end() {
		c := p.in[p.i]
		switch {
		case c == '"':
			p.i++
			p.out = append(p.out, '"')
			return true
		case c == '\\':
			if p.i+1 >= len(p.in) {
				p.i = len(p.in)
				continue
			}
			e := p.in[p.i+1]
			switch e {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				p.out = append(p.out, c, e)
				p.i += 2
			case 'u':
				if p.i+6 > len(p.in) {
					if isHex(p.in[p.i+2:]) {
						p.i = len(p.in) // cut inside the escape
						continue
					}
				} else if isHex(p.in[p.i+2 : p.i+6]) {
					p.out = append(p.out, p.in[p.i:p.i+6]...)
					p.i += 6
					continue
				}
				// \u without four hex digits: keep the backslash as text.
				p.escapes = true
				p.out = append(p.out, '\\', '\\')
				p.i++
			default:
				// An unknown escape such as \d or \. (regexes, paths):
				// the model meant the backslash itself.
				p.escapes = true
				p.out = append(p.out, '\\', '\\')
				p.i++
			}
		case c < 0x20:
			p.ctrl = true
			switch c {
			case '\n':
				p.out = append(p.out, `\n`...)
			case '\r':
				p.out = append(p.out, `\r`...)
			case '\t':
				p.out = append(p.out, `\t`...)
			default:
				p.out = fmt.Appendf(p.out, `\u%04x`, c)
			}
			p.i++
		default:
			p.out = append(p.out, c)
			p.i++
		}
	}
	// Cut off: leave out a partial UTF-8 sequence at the end.
	body := p.out[open+1:]
	for k := 1; k <= utf8.UTFMax-1 && k <= len(body); k++ {
		if utf8.RuneStart(body[len(body)-k]) {
			if !utf8.FullRune(body[len(body)-k:]) {
				p.out = p.out[:len(p.out)-k]
			}
			break
		}
	}
	p.out = append(p.out, '"')
	return false
}

func isHex(b []byte) bool {
	for _, c := range b {
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F') {
			return false
		}
	}
	return true
}

var numberRE = regexp.MustCompile(`^-?(?:0|[1-9]\d*)(?:\.\d+)?(?:[eE][+-]?\d+)?$`)

// number copies a number. One cut off by the end of the input keeps
// its longest valid prefix and counts as lossy (1 may have been 10).
func (p *jsonParser) number() (bool, *syntaxError) {
	start := p.i
	for !p.end() && bytes.IndexByte([]byte("+-0123456789.eE"), p.in[p.i]) >= 0 {
		p.i++
	}
	num := p.in[start:p.i]
	if !p.end() {
		if !numberRE.Match(num) {
			p.i = start
			return false, p.fail("invalid number %s", show(num))
		}
		p.out = append(p.out, num...)
		return true, nil
	}
	p.r.lossy = true
	p.cut("inside a number")
	for len(num) > 0 && !numberRE.Match(num) {
		num = num[:len(num)-1]
	}
	if len(num) == 0 {
		return false, nil
	}
	p.out = append(p.out, num...)
	return true, nil
}

// literal copies true, false or null, completing one cut off by the
// end of the input (there is only one way to), and reads Python's
// True, False and None.
func (p *jsonParser) literal() (bool, *syntaxError) {
	for _, l := range [][2]string{{"true", "true"}, {"false", "false"}, {"null", "null"}, {"True", "true"}, {"False", "false"}, {"None", "null"}} {
		rest := p.in[p.i:]
		switch {
		case bytes.HasPrefix(rest, []byte(l[0])):
			if l[0] != l[1] {
				p.python = true
			}
			p.i += len(l[0])
			p.out = append(p.out, l[1]...)
			return true, nil
		case len(rest) < len(l[0]) && bytes.HasPrefix([]byte(l[0]), rest):
			p.i = len(p.in)
			p.cut("inside " + l[1])
			p.out = append(p.out, l[1]...)
			return true, nil
		}
	}
	return false, p.fail("unexpected %s where a value should be", show(p.in[p.i:]))
}

// show quotes the start of b for a message.
func show(b []byte) string {
	if len(b) > 20 {
		return fmt.Sprintf("%q…", b[:20])
	}
	return fmt.Sprintf("%q", b)
}

// position gives a byte offset as line and column, counting from 1.
func position(in []byte, off int) (line, col int) {
	off = min(off, len(in))
	line = 1 + bytes.Count(in[:off], []byte("\n"))
	col = 1 + utf8.RuneCount(in[bytes.LastIndexByte(in[:off], '\n')+1:off])
	return line, col
}
