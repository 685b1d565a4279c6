package loopguard

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"strings"

	"den.dev/den/internal/llm"
)

// callKey identifies a call: a hash of its tool's name and its
// arguments as JSON with keys sorted at every level and the ignored
// top-level fields left out. Input that is not JSON is hashed as sent.
func callKey(call *llm.ToolCall, ignore map[string]bool) string {
	h := sha256.New()
	h.Write([]byte("tool:" + call.Name + ":"))
	h.Write(canonical(call.Input, ignore))
	return hex.EncodeToString(h.Sum(nil)[:16])
}

func canonical(input json.RawMessage, ignore map[string]bool) []byte {
	raw := bytes.TrimSpace(input)
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil || dec.More() {
		return raw
	}
	if m, ok := v.(map[string]any); ok {
		for k := range ignore {
			delete(m, k)
		}
	}
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil { // maps marshal with sorted keys
		return raw
	}
	return bytes.TrimSpace(b.Bytes())
}

// resultHash identifies a result by its normalised text and images.
func (g *Guard) resultHash(call *llm.ToolCall, r llm.ToolResult) string {
	h := sha256.New()
	if r.IsError {
		h.Write([]byte("error\x00"))
	}
	pids := pidCommand(call)
	for _, p := range r.Content {
		switch p := p.(type) {
		case *llm.Text:
			h.Write([]byte("text\x00" + normalize(p.Text, g.now, pids) + "\x00"))
		case *llm.Image:
			sum := sha256.Sum256(p.Data)
			h.Write([]byte("image\x00" + p.MediaType + "\x00"))
			h.Write(sum[:])
		}
	}
	return hex.EncodeToString(h.Sum(nil)[:16])
}

// stringField returns a top-level string field of a JSON object.
func stringField(input json.RawMessage, name string) (string, bool) {
	var m map[string]any
	if json.Unmarshal(input, &m) != nil {
		return "", false
	}
	s, ok := m[name].(string)
	return s, ok && strings.TrimSpace(s) != ""
}
