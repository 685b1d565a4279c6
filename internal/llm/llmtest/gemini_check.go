package llmtest

import (
	"encoding/base64"
	"errors"
	"fmt"
	"net/http"
	"regexp"
	"strings"
)

// checkGemini is NewGemini's request check.
func checkGemini(r *http.Request, body []byte) *refusal {
	rest, ok := strings.CutPrefix(r.URL.Path, "/v1beta/models/")
	if r.Method != http.MethodPost || !ok || !strings.HasSuffix(rest, ":streamGenerateContent") ||
		r.URL.Query().Get("alt") != "sse" || r.Header.Get("X-Goog-Api-Key") == "" {
		return nil // WriteGemini answers 404 or 403, as the API does first
	}
	if err := CheckGemini(strings.TrimSuffix(rest, ":streamGenerateContent"), body); err != nil {
		return &refusal{Status: http.StatusBadRequest, Body: GeminiErrorBody(http.StatusBadRequest, "INVALID_ARGUMENT", err.Error(), ""), Reason: err.Error()}
	}
	return nil
}

// geminiFunctionName is FunctionDeclaration.name's rule in the v1beta
// reference: a-z, A-Z, 0-9, underscores, colons, dots and dashes, at
// most 64.
var geminiFunctionName = regexp.MustCompile(`^[a-zA-Z0-9_:.-]{1,64}$`)

// geminiMimeType reports whether Gemini takes inline data of type mt:
// the image types of the image understanding guide (not GIF), the
// audio and video types of their guides, and PDF and text documents.
func geminiMimeType(mt string) bool {
	switch mt {
	case "image/png", "image/jpeg", "image/webp", "image/heic", "image/heif",
		"audio/wav", "audio/mp3", "audio/aiff", "audio/aac", "audio/ogg", "audio/flac",
		"video/mp4", "video/mpeg", "video/mov", "video/avi", "video/x-flv", "video/mpg", "video/webm", "video/wmv", "video/3gpp",
		"application/pdf", "application/json", "application/rtf", "application/x-javascript", "application/x-typescript", "application/x-python-code":
		return true
	}
	return strings.HasPrefix(mt, "text/") && len(mt) > len("text/")
}

// CheckGemini returns why generateContent would refuse a request with
// this body for model, or nil. NewGemini's doc lists the rules and their
// sources.
func CheckGemini(model string, body []byte) error {
	req, err := decodeObject(body)
	if err != nil {
		return fmt.Errorf("Invalid JSON payload received. %v", err)
	}
	if err := geminiSystem(req["systemInstruction"]); err != nil {
		return err
	}
	if err := geminiTools(req["tools"]); err != nil {
		return err
	}
	if err := geminiGeneration(model, req["generationConfig"]); err != nil {
		return err
	}
	contents, ok := asArray(req["contents"])
	if !ok || len(contents) == 0 {
		return errors.New("* GenerateContentRequest.contents: contents is not specified")
	}
	turns := make([]geminiTurn, len(contents))
	for i, c := range contents {
		content, ok := asObject(c)
		at := fmt.Sprintf("GenerateContentRequest.contents[%d]", i)
		if !ok {
			return fmt.Errorf("* %s: Invalid value (expected an object)", at)
		}
		role, _ := asString(content["role"])
		if role != "" && role != "user" && role != "model" {
			return fmt.Errorf("* %s.role: Please use a valid role: user, model. (got %q)", at, role)
		}
		if role == "" {
			role = "user"
		}
		parts, _ := asArray(content["parts"])
		if len(parts) == 0 {
			return fmt.Errorf("* %s.parts: contents.parts must not be empty.", at)
		}
		t := geminiTurn{role: role}
		for j, p := range parts {
			part, ok := asObject(p)
			pat := fmt.Sprintf("%s.parts[%d]", at, j)
			if !ok {
				return fmt.Errorf("* %s: Invalid value (expected an object)", pat)
			}
			data, err := checkGeminiPart(pat, part)
			if err != nil {
				return err
			}
			switch data {
			case "functionCall":
				if role != "model" {
					return fmt.Errorf("* %s.function_call: function calls are only allowed in model contents", pat)
				}
				fc, _ := asObject(part["functionCall"])
				t.calls = append(t.calls, fc)
			case "functionResponse":
				if role != "user" {
					return fmt.Errorf("* %s.function_response: function responses are only allowed in user contents", pat)
				}
				fr, _ := asObject(part["functionResponse"])
				t.responses = append(t.responses, fr)
			}
		}
		turns[i] = t
	}

	return geminiCallTurns(turns)
}

// geminiTurn is a content of the request, its function calls and
// responses.
type geminiTurn struct {
	role      string
	calls     []map[string]any // functionCall objects
	responses []map[string]any // functionResponse objects
}

// geminiCallTurns checks function calling across turns: a call turn
// follows a user turn (a prompt or function responses); the next turn
// answers every call.
func geminiCallTurns(turns []geminiTurn) error {
	for i, t := range turns {
		if len(t.calls) > 0 && (i == 0 || turns[i-1].role != "user") {
			return errors.New("Please ensure that function call turn comes immediately after a user turn or after a function response turn.")
		}
		if len(t.responses) > 0 && (i == 0 || len(turns[i-1].calls) == 0) {
			return errors.New("Please ensure that function response turn comes immediately after a function call turn.")
		}
		if len(t.calls) == 0 || i+1 == len(turns) {
			continue
		}
		next := turns[i+1]
		if next.role != "user" || len(next.responses) != len(t.calls) {
			return errors.New("Please ensure that the number of function response parts is equal to the number of function call parts of the function call turn.")
		}
		names := map[string]int{}
		ids := map[string]bool{}
		for _, c := range t.calls {
			name, _ := asString(c["name"])
			names[name]++
			if id, _ := asString(c["id"]); id != "" {
				ids[id] = true
			}
		}
		for k, r := range next.responses {
			name, _ := asString(r["name"])
			if names[name] == 0 {
				return fmt.Errorf("* GenerateContentRequest.contents[%d]: function response %d names %q, which no function call of the function call turn has.", i+1, k, name)
			}
			names[name]--
			if id, _ := asString(r["id"]); id != "" && !ids[id] {
				return fmt.Errorf("* GenerateContentRequest.contents[%d]: function response %d has id %q, which no function call of the function call turn has.", i+1, k, id)
			}
		}
	}
	return nil
}

// checkGeminiPart checks one part and returns which data field it holds.
func checkGeminiPart(at string, part map[string]any) (string, error) {
	var data []string
	for _, k := range []string{"text", "inlineData", "fileData", "functionCall", "functionResponse", "executableCode", "codeExecutionResult"} {
		if v, ok := part[k]; ok && v != nil {
			data = append(data, k)
		}
	}
	switch len(data) {
	case 0:
		return "", fmt.Errorf("* %s.data: required oneof field 'data' must have one initialized field", at)
	case 1:
	default:
		return "", fmt.Errorf("* %s: oneof field 'data' is already set. Cannot set '%s'", at, data[1])
	}
	if sig, ok := part["thoughtSignature"]; ok {
		if s, _ := asString(sig); !protoBytes(s) {
			return "", fmt.Errorf("* %s.thought_signature: Invalid value (bytes, base64 encoded)", at)
		}
	}
	switch data[0] {
	case "text":
		if _, ok := asString(part["text"]); !ok {
			return "", fmt.Errorf("* %s.text: Invalid value (expected a string)", at)
		}
	case "inlineData":
		blob, _ := asObject(part["inlineData"])
		mt, _ := asString(blob["mimeType"])
		if !geminiMimeType(mt) {
			return "", fmt.Errorf("* %s.inline_data.mime_type: Unsupported MIME type: %s", at, mt)
		}
		if d, _ := asString(blob["data"]); d == "" || !protoBytes(d) {
			return "", fmt.Errorf("* %s.inline_data.data: Invalid value (bytes, base64 encoded)", at)
		}
	case "functionCall":
		fc, ok := asObject(part["functionCall"])
		if name, _ := asString(fc["name"]); !ok || name == "" {
			return "", fmt.Errorf("* %s.function_call.name: Name cannot be empty.", at)
		}
		if a, ok := fc["args"]; ok && a != nil {
			if _, ok := asObject(a); !ok {
				return "", fmt.Errorf("* %s.function_call.args: Invalid value (expected an object, got %s)", at, kind(a))
			}
		}
	case "functionResponse":
		fr, ok := asObject(part["functionResponse"])
		if name, _ := asString(fr["name"]); !ok || name == "" {
			return "", fmt.Errorf("* %s.function_response.name: Name cannot be empty.", at)
		}
		if _, ok := asObject(fr["response"]); !ok {
			return "", fmt.Errorf("* %s.function_response.response: Invalid value (expected an object, got %s)", at, kind(fr["response"]))
		}
	}
	return data[0], nil
}

func geminiSystem(v any) error {
	if v == nil {
		return nil
	}
	sys, ok := asObject(v)
	if !ok {
		return errors.New("* GenerateContentRequest.system_instruction: Invalid value (expected a Content object)")
	}
	parts, _ := asArray(sys["parts"])
	if len(parts) == 0 {
		return errors.New("* GenerateContentRequest.system_instruction.parts: contents.parts must not be empty.")
	}
	for j, p := range parts {
		part, _ := asObject(p)
		if _, ok := asString(part["text"]); !ok {
			return fmt.Errorf("* GenerateContentRequest.system_instruction.parts[%d]: the system instruction takes text only", j)
		}
	}
	return nil
}

func geminiTools(v any) error {
	if v == nil {
		return nil
	}
	tools, ok := asArray(v)
	if !ok {
		return errors.New("* GenerateContentRequest.tools: Invalid value (expected an array)")
	}
	seen := map[string]bool{}
	for i, t := range tools {
		tool, _ := asObject(t)
		decls, _ := asArray(tool["functionDeclarations"])
		for j, d := range decls {
			decl, _ := asObject(d)
			at := fmt.Sprintf("GenerateContentRequest.tools[%d].function_declarations[%d]", i, j)
			name, _ := asString(decl["name"])
			if !geminiFunctionName.MatchString(name) {
				return fmt.Errorf("* %s.name: Invalid function name. Must be alphameric (a-z, A-Z, 0-9), underscores (_), dots (.), colons (:) or dashes (-), with a maximum length of 64. (got %q)", at, name)
			}
			if seen[name] {
				return fmt.Errorf("* %s.name: Duplicate function declaration found: %s", at, name)
			}
			seen[name] = true
			if decl["parameters"] != nil && decl["parametersJsonSchema"] != nil {
				return fmt.Errorf("* %s: parameters and parameters_json_schema are mutually exclusive", at)
			}
			if s, ok := decl["parametersJsonSchema"]; ok && s != nil {
				if _, ok := asObject(s); !ok {
					return fmt.Errorf("* %s.parameters_json_schema: Invalid value (expected a JSON Schema object)", at)
				}
			}
		}
	}
	return nil
}

// geminiGeneration checks generationConfig; thinking budgets follow the
// thinking guide's table for the 2.5 models.
func geminiGeneration(model string, v any) error {
	if v == nil {
		return nil
	}
	gc, ok := asObject(v)
	if !ok {
		return errors.New("* GenerateContentRequest.generation_config: Invalid value (expected an object)")
	}
	if m, ok := gc["maxOutputTokens"]; ok && m != nil {
		if n, ok := asInt(m); !ok || n < 1 {
			return errors.New("* GenerateContentRequest.generation_config.max_output_tokens: must be a positive integer")
		}
	}
	tc, ok := asObject(gc["thinkingConfig"])
	if !ok {
		return nil
	}
	b, hasBudget := tc["thinkingBudget"]
	if hasBudget && tc["thinkingLevel"] != nil {
		return errors.New("* GenerateContentRequest.generation_config.thinking_config: thinking_budget and thinking_level cannot both be set")
	}
	if l, ok := tc["thinkingLevel"]; ok && l != nil {
		return geminiThinkingLevel(strings.TrimPrefix(model, "models/"), l)
	}
	if !hasBudget || b == nil {
		return nil
	}
	budget, ok := asInt(b)
	if !ok {
		return errors.New("* GenerateContentRequest.generation_config.thinking_config.thinking_budget: Invalid value (expected an integer)")
	}
	if budget == -1 {
		return nil // dynamic thinking, on every model
	}
	lo, hi, off := int64(0), int64(24576), true
	switch m := strings.TrimPrefix(model, "models/"); {
	case strings.HasPrefix(m, "gemini-2.5-pro"):
		lo, hi, off = 128, 32768, false
	case strings.HasPrefix(m, "gemini-2.5-flash-lite"):
		lo = 512
	case strings.HasPrefix(m, "gemini-2.5-flash"):
	default:
		return nil // other models: ranges the guide does not give
	}
	switch {
	case budget == 0 && !off:
		return errors.New("Budget 0 is invalid. This model only works in thinking mode.")
	case budget == 0:
	case budget < lo || budget > hi:
		return fmt.Errorf("The thinking budget %d is invalid. Please choose a value between %d and %d.", budget, lo, hi)
	}
	return nil
}

// geminiThinkingLevel checks a thinkingLevel against the levels the
// Gemini 3 guides list per model: Flash and Flash-Lite take MINIMAL,
// LOW, MEDIUM and HIGH; 3.1 Pro LOW, MEDIUM and HIGH; 3.0 Pro LOW and
// HIGH. Models before Gemini 3 have no levels.
func geminiThinkingLevel(model string, v any) error {
	s, ok := v.(string)
	level := strings.ToUpper(s)
	switch level {
	case "MINIMAL", "LOW", "MEDIUM", "HIGH":
	default:
		if !ok {
			s = fmt.Sprint(v)
		}
		return fmt.Errorf("Invalid value at 'generation_config.thinking_config.thinking_level' (type.googleapis.com/google.ai.generativelanguage.v1beta.ThinkingConfig.ThinkingLevel), %q", s)
	}
	if strings.HasPrefix(model, "gemini-1") || strings.HasPrefix(model, "gemini-2") {
		return errors.New("Thinking level is not supported for this model.")
	}
	pro := strings.Contains(model, "-pro")
	switch {
	case pro && level == "MINIMAL", strings.HasPrefix(model, "gemini-3-pro") && level == "MEDIUM":
		return fmt.Errorf("Thinking level %s is not supported for this model.", level)
	}
	return nil
}

// protoBytes reports whether s is a bytes field as Google's JSON
// mapping of protocol buffers takes it: standard or URL-safe base64,
// padded or not.
func protoBytes(s string) bool {
	s = strings.TrimRight(s, "=")
	_, std := base64.RawStdEncoding.DecodeString(s)
	_, url := base64.RawURLEncoding.DecodeString(s)
	return std == nil || url == nil
}
