package mcpclient

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
)

// node is a JSON value as the file holds it: objects keep their keys'
// order, and every value knows where it starts, for errors that name a
// line and column, and its exact bytes, to write back unchanged what
// den does not read.
type node struct {
	kind  byte // '{', '[', '"', '0' (number), 't' (boolean), 'n' (null)
	start int  // byte offset of the value's first byte
	raw   []byte
	keys  []string // objects
	vals  []*node  // object values, in key order; array elements
	str   string
	num   json.Number
	b     bool
}

// get is the value of key in an object, or nil.
func (n *node) get(key string) *node {
	for i, k := range n.keys {
		if k == key {
			return n.vals[i]
		}
	}
	return nil
}

// what names a node's kind for messages.
func (n *node) what() string {
	switch n.kind {
	case '{':
		return "an object"
	case '[':
		return "an array"
	case '"':
		return "a string"
	case '0':
		return "a number"
	case 't':
		return "true or false"
	}
	return "null"
}

// syntaxError is a JSON file that does not parse, at a position.
type syntaxError struct {
	off int
	msg string
}

func (e *syntaxError) Error() string { return e.msg }

// parseTree reads data, one JSON value and nothing after it. A key
// given twice in one object is an error: which of the two counts would
// otherwise differ between programs.
func parseTree(data []byte) (*node, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	p := &treeParser{data: data, dec: dec}
	n, err := p.value()
	if err != nil {
		return nil, err
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return nil, &syntaxError{off: p.skip(int(dec.InputOffset())), msg: "more data after the JSON value"}
	}
	return n, nil
}

type treeParser struct {
	data  []byte
	dec   *json.Decoder
	depth int
}

// skip moves off past whitespace and the separators json.Decoder reads
// with the next token.
func (p *treeParser) skip(off int) int {
	for off < len(p.data) {
		switch p.data[off] {
		case ' ', '\t', '\r', '\n', ',', ':':
			off++
			continue
		}
		break
	}
	return off
}

func (p *treeParser) fail(err error) error {
	var se *json.SyntaxError
	if errors.As(err, &se) {
		return &syntaxError{off: int(se.Offset), msg: se.Error()}
	}
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
		return &syntaxError{off: len(p.data), msg: "the file ends in the middle of a JSON value"}
	}
	return &syntaxError{off: int(p.dec.InputOffset()), msg: err.Error()}
}

// maxDepth bounds nesting: a hostile file cannot exhaust the stack.
const maxDepth = 64

func (p *treeParser) value() (*node, error) {
	start := p.skip(int(p.dec.InputOffset()))
	tok, err := p.dec.Token()
	if err != nil {
		return nil, p.fail(err)
	}
	n := &node{start: start}
	switch t := tok.(type) {
	case json.Delim:
		if p.depth++; p.depth > maxDepth {
			return nil, &syntaxError{off: start, msg: fmt.Sprintf("nested more than %d deep", maxDepth)}
		}
		defer func() { p.depth-- }()
		if t == '{' {
			n.kind = '{'
			for p.dec.More() {
				koff := p.skip(int(p.dec.InputOffset()))
				kt, err := p.dec.Token()
				if err != nil {
					return nil, p.fail(err)
				}
				key, _ := kt.(string)
				if n.get(key) != nil {
					return nil, &syntaxError{off: koff, msg: fmt.Sprintf("the key %q is given twice", key)}
				}
				v, err := p.value()
				if err != nil {
					return nil, err
				}
				n.keys = append(n.keys, key)
				n.vals = append(n.vals, v)
			}
		} else {
			n.kind = '['
			for p.dec.More() {
				v, err := p.value()
				if err != nil {
					return nil, err
				}
				n.vals = append(n.vals, v)
			}
		}
		if _, err := p.dec.Token(); err != nil {
			return nil, p.fail(err)
		}
	case string:
		n.kind, n.str = '"', t
	case json.Number:
		n.kind, n.num = '0', t
	case bool:
		n.kind, n.b = 't', t
	case nil:
		n.kind = 'n'
	}
	n.raw = p.data[start:int(p.dec.InputOffset())]
	return n, nil
}

// position turns a byte offset of data into a 1-based line and column
// (in bytes).
func position(data []byte, off int) (line, col int) {
	off = min(max(off, 0), len(data))
	line = 1 + bytes.Count(data[:off], []byte("\n"))
	col = off - bytes.LastIndexByte(data[:off], '\n')
	return line, col
}
