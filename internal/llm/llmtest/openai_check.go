package llmtest

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
)

// openAIError is a refusal as OpenAI words it: the message and the
// request field it is about (the error body's param).
type openAIError struct {
	param, msg string
	code       string // the error body's code ("" is null)
}

func (e *openAIError) Error() string { return e.msg }

func badParam(param, format string, args ...any) error {
	return &openAIError{param: param, msg: fmt.Sprintf(format, args...)}
}

// OpenAIErrorBody is an error body as OpenAI's APIs send it; param and
// code "" are sent as null.
func OpenAIErrorBody(typ, message, param, code string) string {
	var e struct {
		Error struct {
			Message string  `json:"message"`
			Type    string  `json:"type"`
			Param   *string `json:"param"`
			Code    *string `json:"code"`
		} `json:"error"`
	}
	e.Error.Message, e.Error.Type = message, typ
	if param != "" {
		e.Error.Param = &param
	}
	if code != "" {
		e.Error.Code = &code
	}
	b, _ := json.Marshal(e) // plain data always marshals
	return string(b)
}

// openAIRefusal turns a check's error into OpenAI's 400 answer.
func openAIRefusal(err error) *refusal {
	var oe *openAIError
	param, code := "", ""
	if errors.As(err, &oe) {
		param, code = oe.param, oe.code
	}
	return &refusal{Status: http.StatusBadRequest, Body: OpenAIErrorBody("invalid_request_error", err.Error(), param, code), Reason: err.Error()}
}

// checkOpenAI is NewOpenAI's request check.
func checkOpenAI(r *http.Request, body []byte) *refusal {
	if r.Method != http.MethodPost || (r.URL.Path != "/chat/completions" && r.URL.Path != "/v1/chat/completions") {
		return nil
	}
	if err := CheckOpenAI(body); err != nil {
		return openAIRefusal(err)
	}
	return nil
}

// CheckOpenAI returns why the Chat Completions API would refuse a
// request with this body, or nil. NewOpenAI's doc lists the rules and
// their sources.
func CheckOpenAI(body []byte) error {
	req, err := decodeObject(body)
	if err != nil {
		return badParam("", "We could not parse the JSON body of your request. (%v)", err)
	}
	if m, _ := asString(req["model"]); m == "" {
		return badParam("model", "you must provide a model parameter")
	}
	for _, k := range []string{"max_tokens", "max_completion_tokens"} {
		if v, ok := req[k]; ok && v != nil {
			if n, ok := asInt(v); !ok || n < 1 {
				return badParam(k, "Invalid '%s': expected an integer of at least 1.", k)
			}
		}
	}
	if _, ok := req["stream_options"]; ok && req["stream_options"] != nil && req["stream"] != true {
		return badParam("stream_options", "The 'stream_options' parameter is only allowed when 'stream' is enabled.")
	}
	if e, ok := req["reasoning_effort"]; ok && e != nil {
		switch e {
		case "none", "minimal", "low", "medium", "high", "xhigh", "max":
		default:
			return badParam("reasoning_effort", "Invalid value for 'reasoning_effort': %v.", e)
		}
	}
	if err := openAITools(req["tools"]); err != nil {
		return err
	}
	msgs, ok := asArray(req["messages"])
	if !ok {
		return badParam("messages", "Missing required parameter: 'messages'.")
	}
	if len(msgs) == 0 {
		return badParam("messages", "Invalid 'messages': empty array. Expected an array with minimum length 1, but got an empty array instead.")
	}
	return openAIMessages(msgs)
}

func openAITools(v any) error {
	if v == nil {
		return nil
	}
	tools, ok := asArray(v)
	if !ok {
		return badParam("tools", "Invalid type for 'tools': expected an array, but got %s instead.", kind(v))
	}
	for i, t := range tools {
		tool, ok := asObject(t)
		if !ok {
			return badParam(fmt.Sprintf("tools[%d]", i), "Invalid type for 'tools[%d]': expected an object.", i)
		}
		if typ, _ := asString(tool["type"]); typ != "function" {
			if typ == "custom" {
				continue
			}
			return badParam(fmt.Sprintf("tools[%d].type", i), "Invalid value: '%s'. Supported values are: 'function' and 'custom'.", typ)
		}
		fn, ok := asObject(tool["function"])
		if !ok {
			return badParam(fmt.Sprintf("tools[%d].function", i), "Missing required parameter: 'tools[%d].function'.", i)
		}
		name, _ := asString(fn["name"])
		if !functionName.MatchString(name) {
			return badParam(fmt.Sprintf("tools[%d].function.name", i), "Invalid 'tools[%d].function.name': string does not match pattern. Expected a string that matches the pattern '^[a-zA-Z0-9_-]{1,64}$' (got %q).", i, name)
		}
		if p, ok := fn["parameters"]; ok && p != nil {
			if _, ok := asObject(p); !ok {
				return badParam(fmt.Sprintf("tools[%d].function.parameters", i), "Invalid type for 'tools[%d].function.parameters': expected an object, but got %s instead.", i, kind(p))
			}
			if err := openAIParameters(name, p); err != nil {
				return &openAIError{param: fmt.Sprintf("tools[%d].function.parameters", i), msg: err.Error(), code: "invalid_function_parameters"}
			}
		}
	}
	return nil
}

func openAIMessages(msgs []any) error {
	// pending holds the tool_call ids of the last assistant message with
	// tool calls that tool messages have not answered yet; open says a
	// run of tool messages may continue.
	var pending map[string]bool
	var pendingOrder []string
	pendingAt := -1
	open := false
	unanswered := func() error {
		var ids []string
		for _, id := range pendingOrder {
			if pending[id] {
				ids = append(ids, id)
			}
		}
		if len(ids) == 0 {
			return nil
		}
		return badParam(fmt.Sprintf("messages.[%d].role", pendingAt),
			"An assistant message with 'tool_calls' must be followed by tool messages responding to each 'tool_call_id'. The following tool_call_ids did not have response messages: %s", strings.Join(ids, ", "))
	}
	for i, m := range msgs {
		msg, ok := asObject(m)
		if !ok {
			return badParam(fmt.Sprintf("messages[%d]", i), "Invalid type for 'messages[%d]': expected an object.", i)
		}
		role, _ := asString(msg["role"])
		if role != "tool" {
			if err := unanswered(); err != nil {
				return err
			}
			pending, pendingOrder, open = nil, nil, false
		}
		at := fmt.Sprintf("messages[%d]", i)
		switch role {
		case "system", "developer":
			if err := openAIContent(at, msg["content"], false); err != nil {
				return err
			}
		case "user":
			if err := openAIContent(at, msg["content"], true); err != nil {
				return err
			}
		case "assistant":
			ids, err := openAIAssistant(at, msg)
			if err != nil {
				return err
			}
			if len(ids) > 0 {
				pending, pendingOrder, pendingAt, open = map[string]bool{}, ids, i, true
				for _, id := range ids {
					pending[id] = true
				}
			}
		case "tool":
			id, _ := asString(msg["tool_call_id"])
			if id == "" {
				return badParam(at+".tool_call_id", "Missing required parameter: '%s.tool_call_id'.", at)
			}
			if !open || !pending[id] {
				return badParam(fmt.Sprintf("messages.[%d].role", i), "Invalid parameter: messages with role 'tool' must be a response to a preceeding message with 'tool_calls'.")
			}
			delete(pending, id)
			if err := openAIContent(at, msg["content"], false); err != nil {
				return err
			}
		default:
			return badParam(at+".role", "Invalid value: '%s'. Supported values are: 'system', 'assistant', 'user', 'tool', and 'developer'.", role)
		}
	}
	return unanswered()
}

// openAIAssistant checks an assistant message and returns the ids of
// its tool calls.
func openAIAssistant(at string, msg map[string]any) ([]string, error) {
	calls, hasCalls := asArray(msg["tool_calls"])
	if msg["tool_calls"] != nil && !hasCalls {
		return nil, badParam(at+".tool_calls", "Invalid type for '%s.tool_calls': expected an array.", at)
	}
	if c := msg["content"]; c != nil {
		if err := openAIContent(at, c, false); err != nil {
			return nil, err
		}
	} else if len(calls) == 0 {
		return nil, badParam(at+".content", "Invalid value for '%s.content': content is required unless tool_calls is specified.", at)
	}
	var ids []string
	seen := map[string]bool{}
	for j, c := range calls {
		call, ok := asObject(c)
		cat := fmt.Sprintf("%s.tool_calls[%d]", at, j)
		if !ok {
			return nil, badParam(cat, "Invalid type for '%s': expected an object.", cat)
		}
		typ, _ := asString(call["type"])
		if typ != "function" && typ != "custom" {
			return nil, badParam(cat+".type", "Invalid value for '%s.type': expected 'function'.", cat)
		}
		id, _ := asString(call["id"])
		if id == "" {
			return nil, badParam(cat+".id", "Missing required parameter: '%s.id'.", cat)
		}
		if typ == "function" {
			fn, ok := asObject(call["function"])
			if !ok {
				return nil, badParam(cat+".function", "Missing required parameter: '%s.function'.", cat)
			}
			if name, _ := asString(fn["name"]); name == "" {
				return nil, badParam(cat+".function.name", "Missing required parameter: '%s.function.name'.", cat)
			}
			if _, ok := asString(fn["arguments"]); !ok {
				return nil, badParam(cat+".function.arguments", "Missing required parameter: '%s.function.arguments' (a string).", cat)
			}
		}
		if seen[id] {
			return nil, badParam(cat+".id", "Duplicate value for 'tool_call_id' of %s in %s.", id, at)
		}
		seen[id] = true
		ids = append(ids, id)
	}
	return ids, nil
}

// openAIContent checks a message's content: a string or an array of
// content parts; images only where user says so.
func openAIContent(at string, v any, user bool) error {
	switch c := v.(type) {
	case string:
		return nil
	case []any:
		if len(c) == 0 {
			return badParam(at+".content", "Invalid '%s.content': empty array. Expected an array with minimum length 1, but got an empty array instead.", at)
		}
		for j, p := range c {
			part, ok := asObject(p)
			pat := fmt.Sprintf("%s.content[%d]", at, j)
			if !ok {
				return badParam(pat, "Invalid type for '%s': expected an object.", pat)
			}
			switch typ, _ := asString(part["type"]); typ {
			case "text":
				if _, ok := asString(part["text"]); !ok {
					return badParam(pat+".text", "Missing required parameter: '%s.text'.", pat)
				}
			case "refusal":
				if user {
					return badParam(pat+".type", "Invalid value: 'refusal'. Supported values are: 'text', 'image_url', 'input_audio', and 'file'.")
				}
			case "image_url", "input_audio", "file":
				if !user {
					return badParam(pat+".type", "Invalid value: '%s'. Supported values are: 'text'.", typ)
				}
				if typ != "image_url" {
					continue
				}
				img, _ := asObject(part["image_url"])
				url, _ := asString(img["url"])
				if url == "" {
					return badParam(pat+".image_url.url", "Missing required parameter: '%s.image_url.url'.", pat)
				}
				if _, err := imageDataURL(url); err != nil {
					return &openAIError{param: pat + ".image_url.url", code: "invalid_image_format", msg: "Invalid image: " + err.Error()}
				}
				if d, ok := img["detail"]; ok && d != nil && d != "auto" && d != "low" && d != "high" {
					return badParam(pat+".image_url.detail", "Invalid value: '%v'. Supported values are: 'auto', 'low', and 'high'.", d)
				}
			default:
				return badParam(pat+".type", "Invalid value: '%s'.", typ)
			}
		}
		return nil
	case nil:
		return badParam(at+".content", "Missing required parameter: '%s.content'.", at)
	}
	return badParam(at+".content", "Invalid type for '%s.content': expected a string or an array of content parts, but got %s instead.", at, kind(v))
}

// openAIParameters checks a function's parameters as OpenAI's APIs do
// before a function is accepted (strict or not): the schema is an
// object schema, and every array schema in it says its items. The
// wording is the APIs'.
func openAIParameters(name string, v any) error {
	p, _ := asObject(v)
	if t, _ := asString(p["type"]); t != "object" {
		got := "None"
		if t != "" {
			got = t
		}
		return fmt.Errorf("Invalid schema for function '%s': schema must be a JSON Schema of 'type: \"object\"', got 'type: \"%s\"'.", name, got)
	}
	var walk func(s map[string]any, context []string) error
	walk = func(s map[string]any, context []string) error {
		if t, _ := asString(s["type"]); t == "array" && s["items"] == nil {
			return fmt.Errorf("Invalid schema for function '%s': In context=(%s), array schema missing items.", name, quoteJoin(context))
		}
		if props, ok := asObject(s["properties"]); ok {
			for k, sub := range props {
				if o, ok := asObject(sub); ok {
					if err := walk(o, append(context, "properties", k)); err != nil {
						return err
					}
				}
			}
		}
		if items, ok := asObject(s["items"]); ok {
			return walk(items, append(context, "items"))
		}
		return nil
	}
	return walk(p, nil)
}

func quoteJoin(ss []string) string {
	q := make([]string, len(ss))
	for i, s := range ss {
		q[i] = "'" + s + "'"
	}
	return strings.Join(q, ", ")
}
