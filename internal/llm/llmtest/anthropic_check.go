package llmtest

import (
	"errors"
	"fmt"
	"net/http"
	"regexp"
	"strings"
)

// checkAnthropic is NewAnthropic's request check: a Messages API
// request that CheckAnthropic refuses gets the API's 400
// invalid_request_error.
func checkAnthropic(r *http.Request, body []byte) *refusal {
	if r.Method != http.MethodPost || r.URL.Path != "/v1/messages" ||
		(r.Header.Get("X-Api-Key") == "" && r.Header.Get("Authorization") == "") {
		return nil // WriteAnthropic answers 404 or 401, as the API does first
	}
	if err := CheckAnthropic(r.Header, body); err != nil {
		return &refusal{Status: http.StatusBadRequest, Body: AnthropicErrorBody("invalid_request_error", err.Error()), Reason: err.Error()}
	}
	return nil
}

// CheckAnthropic returns why the Messages API would refuse a request
// with this header and body, or nil. NewAnthropic's doc lists the
// rules and their sources.
func CheckAnthropic(header http.Header, body []byte) error {
	req, err := decodeObject(body)
	if err != nil {
		return err
	}
	if m, _ := asString(req["model"]); m == "" {
		return errors.New("model: Field required")
	}
	maxTokens, ok := asInt(req["max_tokens"])
	if _, present := req["max_tokens"]; !present {
		return errors.New("max_tokens: Field required")
	}
	if !ok || maxTokens < 0 {
		return fmt.Errorf("max_tokens: Input should be a non-negative integer")
	}
	if err := anthropicSystem(req["system"]); err != nil {
		return err
	}
	breakpoints := 0
	if _, ok := req["tools"]; ok {
		n, err := anthropicTools(req["tools"])
		if err != nil {
			return err
		}
		breakpoints += n
	}
	if sys, ok := asArray(req["system"]); ok {
		for _, b := range sys {
			breakpoints += cacheMark(b)
		}
	}
	thinking, err := anthropicThinking(header, req["thinking"], maxTokens)
	if err != nil {
		return err
	}
	msgs, ok := asArray(req["messages"])
	if !ok {
		return errors.New("messages: Field required (an array of messages)")
	}
	n, err := anthropicMessages(msgs, thinking)
	if err != nil {
		return err
	}
	breakpoints += n
	if breakpoints > 4 {
		return fmt.Errorf("A maximum of 4 blocks with cache_control may be provided. Found %d.", breakpoints)
	}
	return nil
}

// anthropicIDPattern is what tool_use ids and tool_result tool_use_ids
// must match (the request schema's pattern).
var anthropicIDPattern = regexp.MustCompile(`^[a-zA-Z0-9_-]+$`)

func anthropicSystem(v any) error {
	switch s := v.(type) {
	case nil, string:
		return nil
	case []any:
		for i, b := range s {
			o, ok := asObject(b)
			if typ, _ := asString(o["type"]); !ok || typ != "text" {
				return fmt.Errorf("system.%d: system blocks must be text blocks", i)
			}
			if err := anthropicText(path("system", i), o); err != nil {
				return err
			}
			if err := anthropicCacheControl(path("system", i), o); err != nil {
				return err
			}
		}
		return nil
	}
	return fmt.Errorf("system: Input should be a string or an array of text blocks, not %s", kind(v))
}

// anthropicTools checks the tool definitions and counts their cache
// breakpoints.
func anthropicTools(v any) (int, error) {
	tools, ok := asArray(v)
	if !ok {
		return 0, fmt.Errorf("tools: Input should be an array, not %s", kind(v))
	}
	names := map[string]bool{}
	marks := 0
	for i, t := range tools {
		tool, ok := asObject(t)
		if !ok {
			return 0, fmt.Errorf("tools.%d: Input should be an object", i)
		}
		name, _ := asString(tool["name"])
		typ, _ := asString(tool["type"])
		if typ == "" || typ == "custom" {
			if !functionName.MatchString(name) {
				return 0, fmt.Errorf("tools.%d.custom.name: String should match pattern '^[a-zA-Z0-9_-]{1,64}$' (got %q)", i, name)
			}
			schema, ok := asObject(tool["input_schema"])
			if !ok {
				return 0, fmt.Errorf("tools.%d.custom.input_schema: Field required (a JSON Schema object)", i)
			}
			if st, _ := asString(schema["type"]); st != "object" {
				return 0, fmt.Errorf("tools.%d.custom.input_schema.type: Input should be 'object'", i)
			}
		}
		if names[name] {
			return 0, fmt.Errorf("tools: Tool names must be unique (%q appears twice)", name)
		}
		names[name] = true
		if err := anthropicCacheControl(path("tools", i), tool); err != nil {
			return 0, err
		}
		marks += cacheMark(t)
	}
	return marks, nil
}

// anthropicThinking checks the thinking configuration and reports
// whether manual extended thinking is on.
func anthropicThinking(header http.Header, v any, maxTokens int64) (bool, error) {
	if v == nil {
		return false, nil
	}
	cfg, ok := asObject(v)
	if !ok {
		return false, fmt.Errorf("thinking: Input should be an object")
	}
	switch typ, _ := asString(cfg["type"]); typ {
	case "enabled":
		budget, ok := asInt(cfg["budget_tokens"])
		if !ok {
			return false, errors.New("thinking.enabled.budget_tokens: Field required")
		}
		if budget < 1024 {
			return false, fmt.Errorf("thinking.enabled.budget_tokens: Input should be greater than or equal to 1024 (got %d)", budget)
		}
		// Interleaved thinking (a beta) lets the budget exceed max_tokens.
		if budget >= maxTokens && !strings.Contains(strings.Join(header.Values("Anthropic-Beta"), ","), "interleaved-thinking") {
			return false, fmt.Errorf("`max_tokens` must be greater than `thinking.budget_tokens` (%d >= %d)", budget, maxTokens)
		}
		return true, nil
	case "disabled", "adaptive":
		return false, nil
	default:
		return false, fmt.Errorf("thinking.type: Input should be 'enabled', 'disabled' or 'adaptive' (got %q)", typ)
	}
}

// anthropicMessage is a message of the request, its content as blocks.
type anthropicMessage struct {
	role   string
	blocks []map[string]any
}

// anthropicMessages checks the conversation and counts its cache
// breakpoints. thinking is whether manual extended thinking is on.
func anthropicMessages(msgs []any, thinking bool) (int, error) {
	if len(msgs) == 0 {
		return 0, errors.New("messages: at least one message is required")
	}
	if len(msgs) > 100000 {
		return 0, fmt.Errorf("messages: a request takes at most 100,000 messages (got %d)", len(msgs))
	}
	parsed := make([]anthropicMessage, len(msgs))
	marks := 0
	for i, m := range msgs {
		msg, n, err := anthropicParse(i, m, i == len(msgs)-1)
		if err != nil {
			return 0, err
		}
		parsed[i] = msg
		marks += n
	}
	if parsed[0].role != "user" {
		return 0, errors.New("messages: first message must use the \"user\" role")
	}
	if err := anthropicToolPairs(parsed); err != nil {
		return 0, err
	}
	if thinking {
		if err := anthropicThinkingLoop(parsed); err != nil {
			return 0, err
		}
	}
	return marks, nil
}

// anthropicParse checks message i (last says it ends the conversation)
// and counts its cache breakpoints.
func anthropicParse(i int, m any, last bool) (anthropicMessage, int, error) {
	msg, ok := asObject(m)
	if !ok {
		return anthropicMessage{}, 0, fmt.Errorf("messages.%d: Input should be an object", i)
	}
	role, _ := asString(msg["role"])
	if role != "user" && role != "assistant" {
		return anthropicMessage{}, 0, fmt.Errorf("messages.%d.role: Input should be 'user' or 'assistant' (got %q)", i, role)
	}
	empty := fmt.Errorf("messages.%d: all messages must have non-empty content except for the optional final assistant message", i)
	out := anthropicMessage{role: role}
	marks := 0
	switch c := msg["content"].(type) {
	case string:
		if c == "" {
			if !(last && role == "assistant") {
				return out, 0, empty
			}
			return out, 0, nil
		}
		out.blocks = []map[string]any{{"type": "text", "text": c}}
	case []any:
		if len(c) == 0 && !(last && role == "assistant") {
			return out, 0, empty
		}
		for j, b := range c {
			block, ok := asObject(b)
			if !ok {
				return out, 0, fmt.Errorf("messages.%d.content.%d: Input should be an object", i, j)
			}
			if err := anthropicBlock(path("messages", i, "content", j), role, block); err != nil {
				return out, 0, err
			}
			marks += cacheMark(block)
			if res, ok := asArray(block["content"]); ok && block["type"] == "tool_result" {
				for _, r := range res {
					marks += cacheMark(r)
				}
			}
			out.blocks = append(out.blocks, block)
		}
	default:
		return out, 0, fmt.Errorf("messages.%d.content: Input should be a string or an array of content blocks, not %s", i, kind(msg["content"]))
	}
	return out, marks, nil
}

// ids returns the ids of m's blocks of type typ, read from field.
func (m anthropicMessage) ids(typ, field string) []string {
	var ids []string
	for _, b := range m.blocks {
		if b["type"] == typ {
			id, _ := asString(b[field])
			ids = append(ids, id)
		}
	}
	return ids
}

// anthropicToolPairs checks that tool use and results pair up across
// neighbouring messages.
func anthropicToolPairs(msgs []anthropicMessage) error {
	seen := map[string]bool{} // tool_use ids, unique in the request
	for i, m := range msgs {
		uses := m.ids("tool_use", "id")
		for _, id := range uses {
			if seen[id] {
				return fmt.Errorf("messages.%d: `tool_use` ids must be unique (%s appears twice)", i, id)
			}
			seen[id] = true
		}
		if m.role == "user" {
			// tool_result blocks come first, and each answers a tool_use
			// of the message just before, once.
			prev := map[string]bool{}
			if i > 0 && msgs[i-1].role == "assistant" {
				for _, id := range msgs[i-1].ids("tool_use", "id") {
					prev[id] = true
				}
			}
			answered := map[string]bool{}
			other := false
			for j, b := range m.blocks {
				if b["type"] != "tool_result" {
					other = true
					continue
				}
				id, _ := asString(b["tool_use_id"])
				switch {
				case other:
					return fmt.Errorf("messages.%d.content.%d: tool_result blocks must come first in a user message, before any other content", i, j)
				case !prev[id]:
					return fmt.Errorf("messages.%d.content.%d: unexpected `tool_use_id` found in `tool_result` blocks: %s. Each `tool_result` block must have a corresponding `tool_use` block in the previous message.", i, j, id)
				case answered[id]:
					return fmt.Errorf("messages.%d.content.%d: each tool_use must have a single result. Found multiple `tool_result` blocks with id: %s", i, j, id)
				}
				answered[id] = true
			}
		}
		if len(uses) == 0 {
			continue
		}
		next := map[string]bool{}
		if i+1 < len(msgs) && msgs[i+1].role == "user" {
			for _, id := range msgs[i+1].ids("tool_result", "tool_use_id") {
				next[id] = true
			}
		}
		var missing []string
		for _, id := range uses {
			if !next[id] {
				missing = append(missing, id)
			}
		}
		if len(missing) > 0 {
			return fmt.Errorf("messages.%d: `tool_use` ids were found without `tool_result` blocks immediately after: %s. Each `tool_use` block must have a corresponding `tool_result` block in the next message.", i, strings.Join(missing, ", "))
		}
	}
	return nil
}

// anthropicThinkingLoop checks, for manual extended thinking, that a
// tool-use loop in progress (the last message returns tool results)
// answers an assistant message that starts with its thinking.
func anthropicThinkingLoop(msgs []anthropicMessage) error {
	n := len(msgs)
	if n < 2 || msgs[n-1].role != "user" || msgs[n-2].role != "assistant" ||
		len(msgs[n-1].blocks) == 0 || msgs[n-1].blocks[0]["type"] != "tool_result" {
		return nil
	}
	a := msgs[n-2].blocks
	if len(a) > 0 && (a[0]["type"] == "thinking" || a[0]["type"] == "redacted_thinking") {
		return nil
	}
	found := "nothing"
	if len(a) > 0 {
		found = fmt.Sprintf("`%v`", a[0]["type"])
	}
	return fmt.Errorf("messages.%d.content.0.type: Expected `thinking` or `redacted_thinking`, but found %s. When `thinking` is enabled, a final `assistant` message must start with a thinking block (preceeding the lastmost set of `tool_use` and `tool_result` blocks). To avoid this requirement, disable `thinking`.", n-2, found)
}

// anthropicBlock checks one content block of a message with the given
// role.
func anthropicBlock(at, role string, b map[string]any) error {
	typ, _ := asString(b["type"])
	if err := anthropicCacheControl(at, b); err != nil {
		return err
	}
	switch typ {
	case "text":
		return anthropicText(at, b)
	case "image":
		return anthropicImage(at, b)
	case "document", "search_result":
		return nil
	case "tool_result":
		if role != "user" {
			return fmt.Errorf("%s: tool_result blocks are only allowed in user messages", at)
		}
		return anthropicToolResult(at, b)
	case "tool_use":
		if role != "assistant" {
			return fmt.Errorf("%s: tool_use blocks are only allowed in assistant messages", at)
		}
		id, _ := asString(b["id"])
		if !anthropicIDPattern.MatchString(id) {
			return fmt.Errorf("%s.tool_use.id: String should match pattern '^[a-zA-Z0-9_-]+$' (got %q)", at, id)
		}
		if name, _ := asString(b["name"]); name == "" {
			return fmt.Errorf("%s.tool_use.name: Field required", at)
		}
		if _, ok := asObject(b["input"]); !ok {
			return fmt.Errorf("%s.tool_use.input: Input should be an object (got %s)", at, kind(b["input"]))
		}
		return nil
	case "thinking":
		if role != "assistant" {
			return fmt.Errorf("%s: thinking blocks are only allowed in assistant messages", at)
		}
		if _, ok := asString(b["thinking"]); !ok {
			return fmt.Errorf("%s.thinking.thinking: Field required", at)
		}
		if sig, _ := asString(b["signature"]); sig == "" {
			return fmt.Errorf("%s.thinking.signature: Field required", at)
		}
		return nil
	case "redacted_thinking":
		if role != "assistant" {
			return fmt.Errorf("%s: redacted_thinking blocks are only allowed in assistant messages", at)
		}
		if data, _ := asString(b["data"]); data == "" {
			return fmt.Errorf("%s.redacted_thinking.data: Field required", at)
		}
		return nil
	case "server_tool_use", "web_search_tool_result", "web_fetch_tool_result", "code_execution_tool_result":
		return nil
	}
	return fmt.Errorf("%s.type: unknown content block type %q", at, typ)
}

// anthropicToolResult checks a tool_result block's id and content.
func anthropicToolResult(at string, b map[string]any) error {
	id, _ := asString(b["tool_use_id"])
	if !anthropicIDPattern.MatchString(id) {
		return fmt.Errorf("%s.tool_use_id: String should match pattern '^[a-zA-Z0-9_-]+$' (got %q)", at, id)
	}
	switch c := b["content"].(type) {
	case nil, string:
	case []any:
		for k, x := range c {
			o, ok := asObject(x)
			if !ok {
				return fmt.Errorf("%s.content.%d: Input should be an object", at, k)
			}
			if err := anthropicCacheControl(path(at, "content", k), o); err != nil {
				return err
			}
			switch t, _ := asString(o["type"]); t {
			case "text":
				if err := anthropicText(path(at, "content", k), o); err != nil {
					return err
				}
			case "image":
				if err := anthropicImage(path(at, "content", k), o); err != nil {
					return err
				}
			case "document", "search_result":
			default:
				return fmt.Errorf("%s.content.%d.type: a tool result holds text, image, document or search_result blocks (got %q)", at, k, t)
			}
		}
	default:
		return fmt.Errorf("%s.content: Input should be a string or an array of content blocks", at)
	}
	return nil
}

func anthropicText(at string, b map[string]any) error {
	text, ok := asString(b["text"])
	if !ok {
		return fmt.Errorf("%s.text: Field required", at)
	}
	if text == "" {
		return fmt.Errorf("%s.text: text content blocks must be non-empty", at)
	}
	return nil
}

func anthropicImage(at string, b map[string]any) error {
	src, ok := asObject(b["source"])
	if !ok {
		return fmt.Errorf("%s.image.source: Field required", at)
	}
	switch typ, _ := asString(src["type"]); typ {
	case "base64":
		mt, _ := asString(src["media_type"])
		switch mt {
		case "image/jpeg", "image/png", "image/gif", "image/webp":
		default:
			return fmt.Errorf("%s.image.source.base64.media_type: Input should be 'image/jpeg', 'image/png', 'image/gif' or 'image/webp' (got %q)", at, mt)
		}
		if data, _ := asString(src["data"]); !validBase64(data) {
			return fmt.Errorf("%s.image.source.base64.data: the image data is not valid base64", at)
		}
	case "url":
		if u, _ := asString(src["url"]); u == "" {
			return fmt.Errorf("%s.image.source.url.url: Field required", at)
		}
	case "file":
		if id, _ := asString(src["file_id"]); id == "" {
			return fmt.Errorf("%s.image.source.file.file_id: Field required", at)
		}
	default:
		return fmt.Errorf("%s.image.source.type: Input should be 'base64', 'url' or 'file' (got %q)", at, typ)
	}
	return nil
}

func anthropicCacheControl(at string, b map[string]any) error {
	cc, present := b["cache_control"]
	if !present || cc == nil {
		return nil
	}
	o, ok := asObject(cc)
	if typ, _ := asString(o["type"]); !ok || typ != "ephemeral" {
		return fmt.Errorf("%s.cache_control.type: Input should be 'ephemeral'", at)
	}
	return nil
}

// cacheMark is 1 when the block (a decoded object) carries a
// cache_control breakpoint.
func cacheMark(v any) int {
	if o, ok := asObject(v); ok && o["cache_control"] != nil {
		return 1
	}
	return 0
}
