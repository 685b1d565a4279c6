package gemini

import (
	"bytes"
	"encoding/json"
	"fmt"
	"image/gif"
	"image/png"
	"strings"

	"den.dev/den/internal/llm"
)

// The request body of generateContent, as much of it as den uses.
type request struct {
	Contents          []content         `json:"contents"`
	SystemInstruction *content          `json:"systemInstruction,omitempty"`
	Tools             []tool            `json:"tools,omitempty"`
	GenerationConfig  *generationConfig `json:"generationConfig,omitempty"`
}

type content struct {
	Role  string `json:"role,omitempty"`
	Parts []part `json:"parts"`
}

// part is one request part. Text is a pointer so that a thought part
// whose text is empty still names its kind of data.
type part struct {
	Text             *string           `json:"text,omitempty"`
	Thought          bool              `json:"thought,omitempty"`
	ThoughtSignature string            `json:"thoughtSignature,omitempty"`
	InlineData       *blob             `json:"inlineData,omitempty"`
	FunctionCall     *functionCall     `json:"functionCall,omitempty"`
	FunctionResponse *functionResponse `json:"functionResponse,omitempty"`
}

type blob struct {
	MimeType string `json:"mimeType"`
	Data     []byte `json:"data"` // base64 on the wire
}

type functionCall struct {
	ID   string          `json:"id,omitempty"`
	Name string          `json:"name"`
	Args json.RawMessage `json:"args"`
}

type functionResponse struct {
	ID       string         `json:"id,omitempty"`
	Name     string         `json:"name"`
	Response map[string]any `json:"response"`
}

type tool struct {
	FunctionDeclarations []functionDeclaration `json:"functionDeclarations"`
}

type functionDeclaration struct {
	Name                 string          `json:"name"`
	Description          string          `json:"description,omitempty"`
	ParametersJSONSchema json.RawMessage `json:"parametersJsonSchema,omitempty"`
}

type generationConfig struct {
	MaxOutputTokens int             `json:"maxOutputTokens,omitempty"`
	ThinkingConfig  *thinkingConfig `json:"thinkingConfig,omitempty"`
}

// thinkingConfig holds a budget (Gemini 2.5) or a level (Gemini 3 and
// later); the API refuses both at once.
type thinkingConfig struct {
	ThinkingBudget  *int   `json:"thinkingBudget,omitempty"`
	ThinkingLevel   string `json:"thinkingLevel,omitempty"`
	IncludeThoughts bool   `json:"includeThoughts,omitempty"`
}

// idPrefix starts the ids den gives calls that came without one; such
// ids are not sent back.
const idPrefix = "gemini_call_"

// dummySignature is the value Google documents for function calls whose
// signature is unknown (a history begun with another provider).
const dummySignature = "skip_thought_signature_validator"

// encodeRequest builds the JSON body for req.
func encodeRequest(req *llm.Request) ([]byte, error) {
	body := request{Contents: []content{}}
	if req.System != "" {
		body.SystemInstruction = &content{Parts: []part{{Text: &req.System}}}
	}
	calls := indexCalls(req.Messages)
	for i, m := range req.Messages {
		c, err := encodeMessage(m, calls)
		if err != nil {
			return nil, fmt.Errorf("gemini: message %d: %w", i, err)
		}
		if len(c.Parts) > 0 {
			body.Contents = append(body.Contents, c)
		}
	}
	if len(req.Tools) > 0 {
		decls := make([]functionDeclaration, 0, len(req.Tools))
		for _, t := range req.Tools {
			d, err := encodeTool(t)
			if err != nil {
				return nil, err
			}
			decls = append(decls, d)
		}
		body.Tools = []tool{{FunctionDeclarations: decls}}
	}
	gc := generationConfig{MaxOutputTokens: req.MaxTokens, ThinkingConfig: encodeThinking(req.Model, req.Thinking)}
	if gc != (generationConfig{}) {
		body.GenerationConfig = &gc
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(body); err != nil {
		return nil, fmt.Errorf("gemini: encode request: %w", err)
	}
	return buf.Bytes(), nil
}

// callInfo is what a tool result needs to know about its call.
type callInfo struct {
	name   string
	sendID bool // the id came from the Gemini API
}

// indexCalls maps the history's call ids to their calls, so results
// can be named and matched by id only when Gemini gave the id.
func indexCalls(msgs []llm.Message) map[string]callInfo {
	calls := map[string]callInfo{}
	for _, m := range msgs {
		for _, p := range m.Parts {
			if c, ok := p.(*llm.ToolCall); ok && c.ID != "" {
				calls[c.ID] = callInfo{name: c.Name, sendID: sendID(c)}
			}
		}
	}
	return calls
}

// sendID reports whether c's id goes back to the API: only ids Gemini
// itself gave, not den's own nor another provider's.
func sendID(c *llm.ToolCall) bool {
	return c.API == "gemini" && !strings.HasPrefix(c.ID, idPrefix)
}

func encodeMessage(m llm.Message, calls map[string]callInfo) (content, error) {
	var c content
	switch m.Role {
	case llm.User:
		c.Role = "user"
	case llm.Assistant:
		c.Role = "model"
	default:
		return c, fmt.Errorf("unknown role %q", m.Role)
	}
	var thoughts, parts, media []part
	foreign, signed := false, false
	for _, p := range m.Parts {
		switch p := p.(type) {
		case *llm.Text:
			if p.Text != "" {
				parts = append(parts, part{Text: &p.Text})
			}
		case *llm.Image:
			parts = append(parts, imagePart(p))
		case *llm.Thinking:
			if p.API != "gemini" || (p.Text == "" && p.Signature == "") {
				continue
			}
			thoughts = append(thoughts, part{Text: &p.Text, Thought: true, ThoughtSignature: p.Signature})
		case *llm.ToolCall:
			fp, err := encodeCall(p)
			if err != nil {
				return c, err
			}
			if fp.ThoughtSignature != "" {
				signed = true
			}
			if p.API != "gemini" {
				foreign = true
			}
			parts = append(parts, fp)
		case *llm.ToolResult:
			fp, extra, err := encodeResult(p, calls)
			if err != nil {
				return c, err
			}
			parts = append(parts, fp)
			media = append(media, extra...)
		case nil:
			return c, fmt.Errorf("nil part")
		default:
			return c, fmt.Errorf("unsupported part %T", p)
		}
	}
	if foreign && !signed {
		for i := range parts {
			if parts[i].FunctionCall != nil {
				parts[i].ThoughtSignature = dummySignature
				break
			}
		}
	}
	c.Parts = append(append(thoughts, parts...), media...)
	return c, nil
}

func encodeCall(c *llm.ToolCall) (part, error) {
	args := bytes.TrimSpace(c.Input)
	if len(args) == 0 || bytes.Equal(args, []byte("null")) {
		args = []byte("{}")
	}
	if !json.Valid(args) || args[0] != '{' {
		// Gemini only takes an object; a malformed call from the
		// history is replayed as an empty one rather than failing the
		// whole request (its result already says what went wrong).
		args = []byte("{}")
	}
	fc := &functionCall{Name: c.Name, Args: args}
	if sendID(c) {
		fc.ID = c.ID
	}
	p := part{FunctionCall: fc}
	if c.API == "gemini" {
		p.ThoughtSignature = c.Signature
	}
	return p, nil
}

func encodeResult(r *llm.ToolResult, calls map[string]callInfo) (part, []part, error) {
	call := calls[r.CallID]
	name := r.Name
	if name == "" {
		name = call.name
	}
	if name == "" {
		return part{}, nil, fmt.Errorf("tool result %q: no tool name", r.CallID)
	}
	var text []string
	var media []part
	for _, p := range r.Content {
		switch p := p.(type) {
		case *llm.Text:
			text = append(text, p.Text)
		case *llm.Image:
			media = append(media, imagePart(p))
		default:
			return part{}, nil, fmt.Errorf("tool result %q: unsupported part %T", r.CallID, p)
		}
	}
	key := "output"
	if r.IsError {
		key = "error"
	}
	fr := &functionResponse{Name: name, Response: map[string]any{key: strings.Join(text, "\n")}}
	if call.sendID {
		fr.ID = r.CallID
	}
	return part{FunctionResponse: fr}, media, nil
}

// imagePart is img as inline data. Gemini takes PNG, JPEG, WEBP, HEIC
// and HEIF images but not GIF ("Unsupported MIME type"), which den's
// image tools pass on: a GIF goes as a PNG of its first frame, or, when
// it cannot be decoded, as a note saying so, so that one bad image does
// not make every later request of the conversation fail.
func imagePart(img *llm.Image) part {
	if img.MediaType != "image/gif" {
		return part{InlineData: &blob{MimeType: img.MediaType, Data: img.Data}}
	}
	frame, err := gif.Decode(bytes.NewReader(img.Data))
	if err == nil {
		var b bytes.Buffer
		if err = png.Encode(&b, frame); err == nil {
			return part{InlineData: &blob{MimeType: "image/png", Data: b.Bytes()}}
		}
	}
	note := fmt.Sprintf("[a GIF image that could not be converted for Gemini, which does not take GIF: %v]", err)
	return part{Text: &note}
}

func encodeTool(t llm.Tool) (functionDeclaration, error) {
	d := functionDeclaration{Name: t.Name, Description: t.Description}
	schema := bytes.TrimSpace(t.Schema)
	if len(schema) == 0 || bytes.Equal(schema, []byte("null")) {
		return d, nil
	}
	if !json.Valid(schema) || schema[0] != '{' {
		return d, fmt.Errorf("gemini: tool %s: schema is not a JSON object", t.Name)
	}
	if bytes.Contains(schema, []byte(`"$schema"`)) {
		// The dialect marker means nothing to the model; drop it rather
		// than risk the API refusing an unknown keyword.
		var top map[string]json.RawMessage
		if err := json.Unmarshal(schema, &top); err != nil {
			return d, fmt.Errorf("gemini: tool %s: schema: %w", t.Name, err)
		}
		delete(top, "$schema")
		schema, _ = json.Marshal(top) // raw messages from a valid object always marshal
	}
	d.ParametersJSONSchema = schema
	return d, nil
}

// Thinking budgets per level; see the package doc.
const (
	budgetOffPro = 128
	budgetLow    = 1024
	budgetMedium = 8192
	budgetHigh   = 24576
	budgetMax    = -1
)

func encodeThinking(model string, level llm.ThinkingLevel) *thinkingConfig {
	if level == "" {
		return nil
	}
	m := strings.TrimPrefix(strings.ToLower(model), "models/")
	pro := strings.Contains(m, "-pro")
	// Gemini 3 and later think in levels. Any other name (2.5, an alias,
	// a tuned model) gets a budget, which every thinking model takes.
	if llm.Generation(m, "gemini-") >= 3 {
		return &thinkingConfig{ThinkingLevel: thinkingLevel(m, pro, level), IncludeThoughts: level != llm.ThinkingOff}
	}
	budget := func(n int) *thinkingConfig { return &thinkingConfig{ThinkingBudget: &n, IncludeThoughts: true} }
	switch level {
	case llm.ThinkingOff:
		n := 0
		if pro {
			n = budgetOffPro
		}
		return &thinkingConfig{ThinkingBudget: &n}
	case llm.ThinkingLow:
		return budget(budgetLow)
	case llm.ThinkingMedium:
		return budget(budgetMedium)
	case llm.ThinkingHigh:
		return budget(budgetHigh)
	default: // max, and any level this adapter does not know yet
		return budget(budgetMax)
	}
}

// thinkingLevel is the Gemini 3 thinkingLevel for level: Flash models
// take minimal, low, medium and high; Pro models cannot stop thinking
// (off is low) and Gemini 3.0 Pro has no medium (it thinks high).
func thinkingLevel(model string, pro bool, level llm.ThinkingLevel) string {
	switch level {
	case llm.ThinkingOff:
		if pro {
			return "low"
		}
		return "minimal"
	case llm.ThinkingLow:
		return "low"
	case llm.ThinkingMedium:
		if strings.HasPrefix(model, "gemini-3-pro") {
			return "high"
		}
		return "medium"
	default: // high, max (the highest level there is), and any new one
		return "high"
	}
}
