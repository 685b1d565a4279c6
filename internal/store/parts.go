package store

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"unicode/utf8"

	"den.dev/den/internal/llm"
)

// The parts column holds a message's parts as a JSON array of tagged
// objects, one per part:
//
//	{"type":"text","text":…}
//	{"type":"image","media_type":…,"data":<base64>}
//	{"type":"thinking","text":…,"signature":…,"redacted":true,"opaque":<json>,"api":…}
//	{"type":"tool_call","id":…,"name":…,"input":<json>,"signature":…,"api":…}
//	{"type":"tool_result","call_id":…,"name":…,"content":[<parts>],"is_error":true}
//
// Empty fields are left out. The encoding is lossless: decoding gives
// back exactly the parts that were encoded, byte for byte:
//   - a raw JSON field (input, opaque) is embedded as is when it is
//     valid, compact, UTF-8 JSON; anything else (invalid JSON, JSON with
//     insignificant white space) goes in a sibling string field
//     (input_string, opaque_string) instead;
//   - a string that is not valid UTF-8 (which a JSON string cannot
//     carry) is written as {"base64":…} in place of the JSON string;
//   - nil and empty are told apart where the types allow both (image
//     data, tool-result content, raw JSON).

// wirePart is one element of the parts array.
type wirePart struct {
	Type string `json:"type"`

	ID        wstring         `json:"id,omitempty"`
	CallID    wstring         `json:"call_id,omitempty"`
	Name      wstring         `json:"name,omitempty"`
	Text      wstring         `json:"text,omitempty"`
	MediaType wstring         `json:"media_type,omitempty"`
	Data      *[]byte         `json:"data,omitempty"`
	Signature wstring         `json:"signature,omitempty"`
	Redacted  bool            `json:"redacted,omitempty"`
	Opaque    json.RawMessage `json:"opaque,omitempty"`
	OpaqueStr *wstring        `json:"opaque_string,omitempty"`
	Input     json.RawMessage `json:"input,omitempty"`
	InputStr  *wstring        `json:"input_string,omitempty"`
	Content   *[]wirePart     `json:"content,omitempty"`
	IsError   bool            `json:"is_error,omitempty"`
	API       wstring         `json:"api,omitempty"`
}

// The part types.
const (
	typeText       = "text"
	typeImage      = "image"
	typeThinking   = "thinking"
	typeToolCall   = "tool_call"
	typeToolResult = "tool_result"
)

// encodeParts returns the JSON encoding of parts.
func encodeParts(parts []llm.Part) (string, error) {
	w, err := toWire(parts)
	if err != nil {
		return "", err
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	// Raw JSON fields must come out as they went in; with HTML escaping
	// on, the encoder would rewrite '<', '>' and '&' inside them.
	enc.SetEscapeHTML(false)
	if err := enc.Encode(w); err != nil {
		return "", err
	}
	return string(bytes.TrimSuffix(buf.Bytes(), []byte("\n"))), nil
}

func toWire(parts []llm.Part) ([]wirePart, error) {
	w := make([]wirePart, len(parts))
	for i, p := range parts {
		wp, err := partToWire(p)
		if err != nil {
			return nil, fmt.Errorf("part %d: %w", i, err)
		}
		w[i] = wp
	}
	return w, nil
}

func partToWire(p llm.Part) (wirePart, error) {
	switch p := p.(type) {
	case *llm.Text:
		if p != nil {
			return wirePart{Type: typeText, Text: wstring(p.Text)}, nil
		}
	case *llm.Image:
		if p != nil {
			w := wirePart{Type: typeImage, MediaType: wstring(p.MediaType)}
			if p.Data != nil {
				w.Data = &p.Data
			}
			return w, nil
		}
	case *llm.Thinking:
		if p != nil {
			w := wirePart{Type: typeThinking, Text: wstring(p.Text), Signature: wstring(p.Signature),
				Redacted: p.Redacted, API: wstring(p.API)}
			w.Opaque, w.OpaqueStr = splitRaw(p.Opaque)
			return w, nil
		}
	case *llm.ToolCall:
		if p != nil {
			w := wirePart{Type: typeToolCall, ID: wstring(p.ID), Name: wstring(p.Name),
				Signature: wstring(p.Signature), API: wstring(p.API)}
			w.Input, w.InputStr = splitRaw(p.Input)
			return w, nil
		}
	case *llm.ToolResult:
		if p != nil {
			w := wirePart{Type: typeToolResult, CallID: wstring(p.CallID), Name: wstring(p.Name), IsError: p.IsError}
			if p.Content != nil {
				c, err := toWire(p.Content)
				if err != nil {
					return wirePart{}, fmt.Errorf("tool result content: %w", err)
				}
				w.Content = &c
			}
			return w, nil
		}
	}
	return wirePart{}, fmt.Errorf("unsupported part %#v", p)
}

// splitRaw returns r itself when encoding/json will write it back
// unchanged (valid, compact, UTF-8 JSON), else r as a string.
func splitRaw(r json.RawMessage) (json.RawMessage, *wstring) {
	if r == nil {
		return nil, nil
	}
	if len(r) > 0 && utf8.Valid(r) && json.Valid(r) {
		var c bytes.Buffer
		if json.Compact(&c, r) == nil && bytes.Equal(c.Bytes(), r) {
			return r, nil
		}
	}
	s := wstring(r)
	return nil, &s
}

// joinRaw undoes splitRaw.
func joinRaw(r json.RawMessage, s *wstring) json.RawMessage {
	if s != nil {
		return json.RawMessage(*s)
	}
	return r
}

// decodeParts undoes encodeParts.
func decodeParts(s string) ([]llm.Part, error) {
	var w []wirePart
	if err := json.Unmarshal([]byte(s), &w); err != nil {
		return nil, err
	}
	if w == nil {
		return nil, errors.New("parts are not an array")
	}
	return fromWire(w)
}

func fromWire(w []wirePart) ([]llm.Part, error) {
	parts := make([]llm.Part, len(w))
	for i, wp := range w {
		p, err := partFromWire(wp)
		if err != nil {
			return nil, fmt.Errorf("part %d: %w", i, err)
		}
		parts[i] = p
	}
	return parts, nil
}

func partFromWire(w wirePart) (llm.Part, error) {
	switch w.Type {
	case typeText:
		return &llm.Text{Text: string(w.Text)}, nil
	case typeImage:
		p := &llm.Image{MediaType: string(w.MediaType)}
		if w.Data != nil {
			p.Data = *w.Data
		}
		return p, nil
	case typeThinking:
		return &llm.Thinking{Text: string(w.Text), Signature: string(w.Signature), Redacted: w.Redacted,
			Opaque: joinRaw(w.Opaque, w.OpaqueStr), API: string(w.API)}, nil
	case typeToolCall:
		return &llm.ToolCall{ID: string(w.ID), Name: string(w.Name), Input: joinRaw(w.Input, w.InputStr),
			Signature: string(w.Signature), API: string(w.API)}, nil
	case typeToolResult:
		p := &llm.ToolResult{CallID: string(w.CallID), Name: string(w.Name), IsError: w.IsError}
		if w.Content != nil {
			c, err := fromWire(*w.Content)
			if err != nil {
				return nil, fmt.Errorf("tool result content: %w", err)
			}
			p.Content = c
		}
		return p, nil
	}
	return nil, fmt.Errorf("unknown part type %q", w.Type)
}

// wstring is a string that survives JSON whatever its bytes: valid UTF-8
// is written as a JSON string, anything else as {"base64":…}.
type wstring string

type wbytes struct {
	Base64 []byte `json:"base64"`
}

func (s wstring) MarshalJSON() ([]byte, error) {
	if utf8.ValidString(string(s)) {
		return json.Marshal(string(s))
	}
	return json.Marshal(wbytes{[]byte(s)})
}

func (s *wstring) UnmarshalJSON(b []byte) error {
	if len(b) > 0 && b[0] == '{' {
		var w wbytes
		if err := json.Unmarshal(b, &w); err != nil {
			return err
		}
		*s = wstring(w.Base64)
		return nil
	}
	if len(b) >= 2 && b[0] == '"' && b[len(b)-1] == '"' && bytes.IndexByte(b, '\\') < 0 {
		*s = wstring(b[1 : len(b)-1]) // no escapes: the bytes are the string
		return nil
	}
	var str string
	if err := json.Unmarshal(b, &str); err != nil {
		return err
	}
	*s = wstring(str)
	return nil
}
