package openaicompat

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
)

// maxBody bounds a request's body: a long conversation resent whole
// fits; images, the usual large part, are refused anyway.
const maxBody = 16 << 20

// chatRequest is a Chat Completions request as den reads it.
type chatRequest struct {
	Model        string
	Messages     []message
	Stream       bool
	IncludeUsage bool
}

// message is one of the request's messages, reduced to what den reads.
type message struct {
	Role   string
	Text   string
	Calls  []toolCall // an assistant's tool calls
	CallID string     // what a tool message answers
	Name   string     // a function message's function
}

type toolCall struct{ ID, Name, Arguments string }

// The wire shapes, decoded leniently: fields den does not read are
// ignored, as OpenAI's clients send many (temperature, tools, ...).
type wireRequest struct {
	Model         *string           `json:"model"`
	Messages      []json.RawMessage `json:"messages"`
	Stream        *bool             `json:"stream"`
	StreamOptions *struct {
		IncludeUsage *bool `json:"include_usage"`
	} `json:"stream_options"`
	N *int `json:"n"`
}

type wireMessage struct {
	Role       string          `json:"role"`
	Content    json.RawMessage `json:"content"`
	Name       string          `json:"name"`
	ToolCalls  []wireCall      `json:"tool_calls"`
	ToolCallID string          `json:"tool_call_id"`
	// FunctionCall is the deprecated form of one tool call.
	FunctionCall *wireFunction `json:"function_call"`
}

type wireCall struct {
	ID       string       `json:"id"`
	Function wireFunction `json:"function"`
}

type wireFunction struct {
	Name      string `json:"name"`
	Arguments string `json:"arguments"`
}

type wirePart struct {
	Type    string  `json:"type"`
	Text    *string `json:"text"`
	Refusal *string `json:"refusal"`
}

// roles are the roles OpenAI's API takes, as its error lists them.
var roles = map[string]bool{"system": true, "assistant": true, "user": true, "function": true, "tool": true, "developer": true}

// decodeRequest reads and checks r's body as OpenAI's API does.
func decodeRequest(w http.ResponseWriter, r *http.Request) (*chatRequest, error) {
	if ct := r.Header.Get("Content-Type"); ct != "" && !strings.HasPrefix(ct, "application/json") {
		return nil, newError(http.StatusUnsupportedMediaType, invalidRequest, "", "unsupported_media_type",
			"Send the request as JSON (Content-Type: application/json), not %s.", ct)
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxBody))
	if err != nil {
		return nil, err
	}
	return parseRequest(body)
}

// parseRequest checks and reads a request's body.
func parseRequest(body []byte) (*chatRequest, error) {
	var wr wireRequest
	if err := unmarshal(body, &wr, ""); err != nil {
		return nil, err
	}
	if wr.Model == nil || *wr.Model == "" {
		return nil, invalid("model", "missing_required_parameter", "You must provide a model parameter (den/default, or den/AGENT for an agent of den's config).")
	}
	req := &chatRequest{Model: *wr.Model, Stream: wr.Stream != nil && *wr.Stream}
	if wr.StreamOptions != nil {
		if !req.Stream {
			return nil, invalid("stream_options", "invalid_value", "The 'stream_options' parameter is only allowed when 'stream' is enabled.")
		}
		req.IncludeUsage = wr.StreamOptions.IncludeUsage != nil && *wr.StreamOptions.IncludeUsage
	}
	if wr.N != nil && *wr.N != 1 {
		return nil, invalid("n", "unsupported_value", "Unsupported value: 'n' must be 1: den answers with one choice.")
	}
	switch {
	case wr.Messages == nil:
		return nil, invalid("messages", "missing_required_parameter", "Missing required parameter: 'messages'.")
	case len(wr.Messages) == 0:
		return nil, invalid("messages", "empty_array", "Invalid 'messages': empty array. Expected an array with minimum length 1, but got an empty array instead.")
	}
	for i, raw := range wr.Messages {
		m, err := parseMessage(raw, fmt.Sprintf("messages[%d]", i))
		if err != nil {
			return nil, err
		}
		req.Messages = append(req.Messages, m)
	}
	last := len(req.Messages) - 1
	if role := req.Messages[last].Role; role != "user" {
		return nil, invalid(fmt.Sprintf("messages[%d].role", last), "invalid_value",
			"den answers the user: the last message must be the user's (role 'user'), not %s's.", role)
	}
	if strings.TrimSpace(req.Messages[last].Text) == "" {
		return nil, invalid(fmt.Sprintf("messages[%d].content", last), "invalid_value", "The user's message has no text.")
	}
	return req, nil
}

// parseMessage checks and reads the message at param.
func parseMessage(raw json.RawMessage, param string) (message, error) {
	var wm wireMessage
	if err := unmarshal(raw, &wm, param); err != nil {
		return message{}, err
	}
	if wm.Role == "" {
		return message{}, invalid(param+".role", "missing_required_parameter", "Missing required parameter: '%s.role'.", param)
	}
	if !roles[wm.Role] {
		return message{}, invalid(param+".role", "invalid_value",
			"Invalid value: '%s'. Supported values are: 'system', 'assistant', 'user', 'function', 'tool', and 'developer'.", wm.Role)
	}
	m := message{Role: wm.Role, CallID: wm.ToolCallID, Name: wm.Name}
	for _, c := range wm.ToolCalls {
		m.Calls = append(m.Calls, toolCall{ID: c.ID, Name: c.Function.Name, Arguments: c.Function.Arguments})
	}
	if f := wm.FunctionCall; f != nil {
		m.Calls = append(m.Calls, toolCall{Name: f.Name, Arguments: f.Arguments})
	}
	text, ok, err := contentText(wm.Content, param+".content", wm.Role)
	if err != nil {
		return message{}, err
	}
	if !ok && (wm.Role != "assistant" || len(m.Calls) == 0) {
		return message{}, invalid(param+".content", "missing_required_parameter", "Missing required parameter: '%s.content'.", param)
	}
	if wm.Role == "tool" && wm.ToolCallID == "" {
		return message{}, invalid(param+".tool_call_id", "missing_required_parameter", "Missing required parameter: '%s.tool_call_id'.", param)
	}
	m.Text = text
	return m, nil
}

// contentText is a message's content as text: a string, or the text of
// an array of parts. ok is false when there is none (absent or null).
func contentText(raw json.RawMessage, param, role string) (text string, ok bool, err error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return "", false, nil
	}
	switch raw[0] {
	case '"':
		if err := json.Unmarshal(raw, &text); err != nil {
			return "", false, invalid(param, "invalid_type", "Invalid '%s': %v.", param, err)
		}
		return text, true, nil
	case '[':
	default:
		return "", false, invalid(param, "invalid_type", "Invalid type for '%s': expected a string or an array of content parts, but got %s instead.", param, jsonKind(raw))
	}
	var parts []json.RawMessage
	if err := json.Unmarshal(raw, &parts); err != nil {
		return "", false, invalid(param, "invalid_type", "Invalid '%s': %v.", param, err)
	}
	var texts []string
	for j, raw := range parts {
		pp := fmt.Sprintf("%s[%d]", param, j)
		var p wirePart
		if err := unmarshal(raw, &p, pp); err != nil {
			return "", false, err
		}
		switch {
		case p.Type == "text" && p.Text != nil:
			texts = append(texts, *p.Text)
		case p.Type == "text":
			return "", false, invalid(pp+".text", "missing_required_parameter", "Missing required parameter: '%s.text'.", pp)
		case p.Type == "refusal" && role == "assistant" && p.Refusal != nil:
			texts = append(texts, *p.Refusal)
		case p.Type == "image_url", p.Type == "input_audio", p.Type == "file":
			return "", false, invalid(pp+".type", "unsupported_value",
				"den takes text only through this API for now: '%s' parts are not supported (upload files to the agent's session with den's own API, and name them in the text).", p.Type)
		case p.Type == "":
			return "", false, invalid(pp+".type", "missing_required_parameter", "Missing required parameter: '%s.type'.", pp)
		default:
			return "", false, invalid(pp+".type", "invalid_value", "Invalid value: '%s'. Supported values are: 'text'.", p.Type)
		}
	}
	return strings.Join(texts, "\n"), true, nil
}

// unmarshal decodes raw into v, turning a decoding error into OpenAI's
// 400 for the parameter at param ("" for the body).
func unmarshal(raw []byte, v any, param string) error {
	err := json.Unmarshal(raw, v)
	var te *json.UnmarshalTypeError
	switch {
	case err == nil:
		return nil
	case errors.As(err, &te):
		at := param
		if te.Field != "" {
			at = strings.TrimPrefix(param+"."+te.Field, ".")
		}
		if at == "" {
			return invalid("", "invalid_type", "The request body must be a JSON object, not %s.", article(te.Value))
		}
		return invalid(at, "invalid_type", "Invalid type for '%s': expected %s, but got %s instead.", at, expected(te.Type.Kind().String()), article(te.Value))
	case param == "":
		return invalid("", "invalid_json", "The request body is not valid JSON: %v.", err)
	}
	return invalid(param, "invalid_type", "Invalid '%s': %v.", param, err)
}

// expected names a Go kind the way OpenAI's errors name JSON types.
func expected(kind string) string {
	switch kind {
	case "bool":
		return "a boolean"
	case "string":
		return "a string"
	case "int", "int64":
		return "an integer"
	case "slice":
		return "an array"
	case "struct", "ptr", "map":
		return "an object"
	}
	return kind
}

// article is a JSON type as encoding/json names it ("number 1.5" for a
// number that is not an integer), with its article.
func article(jsonType string) string {
	switch {
	case jsonType == "bool":
		return "a boolean"
	case strings.HasPrefix(jsonType, "number"):
		return "a number"
	case jsonType == "array", jsonType == "object":
		return "an " + jsonType
	}
	return "a " + jsonType
}

// jsonKind names the type of the JSON value raw.
func jsonKind(raw []byte) string {
	switch raw[0] {
	case '{':
		return "an object"
	case 't', 'f':
		return "a boolean"
	}
	return "a number"
}

// last is the text den is sent in a session that has the history: the
// last message's.
func (req *chatRequest) last() string { return req.Messages[len(req.Messages)-1].Text }

// prompt is the text den is sent in a new session: the request's
// instructions, a transcript of the turns before the last message, then
// the last message (only that, when there is nothing before it).
func (req *chatRequest) prompt() string {
	n := len(req.Messages) - 1
	var sections, transcript []string
	tools := map[string]string{} // call id → tool name
	for _, m := range req.Messages[:n] {
		switch m.Role {
		case "system", "developer":
			if t := strings.TrimSpace(m.Text); t != "" {
				sections = append(sections, t)
			}
		case "user", "assistant":
			if strings.TrimSpace(m.Text) != "" {
				transcript = append(transcript, line(m.Role, m.Text))
			}
			for _, c := range m.Calls {
				tools[c.ID] = c.Name
				transcript = append(transcript, fmt.Sprintf("assistant called %s(%s)", c.Name, strings.TrimSpace(c.Arguments)))
			}
		case "tool":
			who := "tool"
			if name := tools[m.CallID]; name != "" {
				who = "tool " + name
			}
			transcript = append(transcript, line(who+" returned", m.Text))
		case "function":
			transcript = append(transcript, line(strings.TrimSpace("function "+m.Name)+" returned", m.Text))
		}
	}
	if len(transcript) > 0 {
		sections = append(sections, "Earlier in this conversation:\n"+strings.Join(transcript, "\n"))
	}
	if len(sections) == 0 {
		return req.last()
	}
	return strings.Join(append(sections, req.last()), "\n\n")
}

// line is one message of a transcript: who said it, then its text, each
// further line indented so that the transcript's lines stay apart.
func line(who, text string) string {
	return who + ": " + strings.ReplaceAll(strings.TrimSpace(text), "\n", "\n  ")
}
