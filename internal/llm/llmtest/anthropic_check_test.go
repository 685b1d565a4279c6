package llmtest

import (
	"net/http"
	"strings"
	"testing"
)

const anthropicBase = `{
	"model": "claude-test", "max_tokens": 4096, "stream": true,
	"system": [{"type": "text", "text": "You are den.", "cache_control": {"type": "ephemeral"}}],
	"thinking": {"type": "enabled", "budget_tokens": 1024},
	"tools": [
		{"name": "shell_execute", "input_schema": {"type": "object", "properties": {"command": {"type": "string"}}}},
		{"name": "read_image", "input_schema": {"type": "object"}}
	],
	"messages": [
		{"role": "user", "content": [
			{"type": "text", "text": "hi"},
			{"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "iVBORw0KGgo="}}
		]},
		{"role": "assistant", "content": [
			{"type": "thinking", "thinking": "Two calls.", "signature": "sig-1"},
			{"type": "tool_use", "id": "toolu_1", "name": "shell_execute", "input": {"command": "ls"}},
			{"type": "tool_use", "id": "toolu_2", "name": "read_image", "input": {}}
		]},
		{"role": "user", "content": [
			{"type": "tool_result", "tool_use_id": "toolu_1", "content": "a b"},
			{"type": "tool_result", "tool_use_id": "toolu_2", "is_error": true, "content": [{"type": "text", "text": "no image"}]},
			{"type": "text", "text": "go on", "cache_control": {"type": "ephemeral"}}
		]}
	]
}`

func TestAnthropicRules(t *testing.T) {
	result := func(id string) map[string]any {
		return obj(`{"type": "tool_result", "tool_use_id": "` + id + `", "content": "x"}`)
	}
	cc := obj(`{"type": "ephemeral"}`)
	runRules(t, anthropicAPI, anthropicBase, []ruleCase{
		{name: "no model", edit: func(r map[string]any) { del(r, "model") }, want: "model: Field required"},
		{name: "no max_tokens", edit: func(r map[string]any) { del(r, "max_tokens") }, want: "max_tokens: Field required"},
		{name: "negative max_tokens", edit: func(r map[string]any) { set(r, -1, "max_tokens") }, want: "max_tokens"},
		{name: "no messages", edit: func(r map[string]any) { del(r, "messages") }, want: "messages: Field required"},
		{name: "empty messages", edit: func(r map[string]any) { set(r, []any{}, "messages") }, want: "at least one message"},
		{name: "system role", edit: func(r map[string]any) { set(r, "system", "messages", 0, "role") }, want: "Input should be 'user' or 'assistant'"},
		{name: "assistant first", edit: func(r map[string]any) {
			delete(r, "thinking")
			set(r, []any{obj(`{"role": "assistant", "content": "Hello."}`), obj(`{"role": "user", "content": "hi"}`)}, "messages")
		}, want: `first message must use the "user" role`},
		{name: "empty content", edit: func(r map[string]any) { set(r, "", "messages", 0, "content") }, want: "non-empty content"},
		{name: "empty content list", edit: func(r map[string]any) { set(r, []any{}, "messages", 0, "content") }, want: "non-empty content"},
		{name: "empty final assistant content is a prefill", edit: func(r map[string]any) {
			delete(r, "thinking")
			set(r, append(walk(r, []any{"messages"}).([]any), obj(`{"role": "assistant", "content": []}`)), "messages")
		}},
		{name: "empty text", edit: func(r map[string]any) { set(r, "", "messages", 0, "content", 0, "text") }, want: "text content blocks must be non-empty"},
		{name: "empty text in a tool result", edit: func(r map[string]any) {
			set(r, "", "messages", 2, "content", 1, "content", 0, "text")
		}, want: "text content blocks must be non-empty"},
		{name: "bmp image", edit: func(r map[string]any) {
			set(r, "image/bmp", "messages", 0, "content", 1, "source", "media_type")
		}, want: "media_type: Input should be 'image/jpeg', 'image/png', 'image/gif' or 'image/webp'"},
		{name: "image data not base64", edit: func(r map[string]any) {
			set(r, "not base64!", "messages", 0, "content", 1, "source", "data")
		}, want: "not valid base64"},
		{name: "unanswered tool_use", edit: func(r map[string]any) { del(r, "messages", 2, "content", 1) },
			want: "`tool_use` ids were found without `tool_result` blocks immediately after: toolu_2"},
		{name: "tool_use as the last message", edit: func(r map[string]any) { del(r, "messages", 2) },
			want: "`tool_use` ids were found without `tool_result` blocks immediately after: toolu_1, toolu_2"},
		{name: "results in a later message", edit: func(r map[string]any) {
			ins(r, obj(`{"role": "user", "content": "wait"}`), "messages", 2)
		}, want: "`tool_use` ids were found without `tool_result` blocks immediately after"},
		{name: "result for no call", edit: func(r map[string]any) { ins(r, result("toolu_9"), "messages", 2, "content", 2) },
			want: "unexpected `tool_use_id` found in `tool_result` blocks: toolu_9"},
		{name: "result in the first message", edit: func(r map[string]any) { ins(r, result("toolu_1"), "messages", 0, "content", 0) },
			want: "unexpected `tool_use_id`"},
		{name: "result twice", edit: func(r map[string]any) { ins(r, result("toolu_1"), "messages", 2, "content", 1) },
			want: "Found multiple `tool_result` blocks with id: toolu_1"},
		{name: "text before results", edit: func(r map[string]any) {
			c := walk(r, []any{"messages", 2, "content"}).([]any)
			set(r, []any{c[2], c[0], c[1]}, "messages", 2, "content")
		}, want: "tool_result blocks must come first"},
		{name: "tool_use in a user message", edit: func(r map[string]any) {
			ins(r, obj(`{"type": "tool_use", "id": "toolu_x", "name": "shell_execute", "input": {}}`), "messages", 0, "content", 0)
		}, want: "tool_use blocks are only allowed in assistant messages"},
		{name: "tool_result in an assistant message", edit: func(r map[string]any) { ins(r, result("toolu_1"), "messages", 1, "content", 1) },
			want: "tool_result blocks are only allowed in user messages"},
		{name: "tool id with a dot", edit: func(r map[string]any) {
			set(r, "functions.shell:0", "messages", 1, "content", 1, "id")
			set(r, "functions.shell:0", "messages", 2, "content", 0, "tool_use_id")
		}, want: "String should match pattern '^[a-zA-Z0-9_-]+$'"},
		{name: "tool id used twice", edit: func(r map[string]any) {
			set(r, append(walk(r, []any{"messages"}).([]any),
				obj(`{"role": "assistant", "content": [{"type": "thinking", "thinking": "again", "signature": "sig-2"}, {"type": "tool_use", "id": "toolu_1", "name": "shell_execute", "input": {}}]}`),
				obj(`{"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_1", "content": "again"}]}`)), "messages")
		}, want: "`tool_use` ids must be unique"},
		{name: "tool input not an object", edit: func(r map[string]any) { set(r, "ls", "messages", 1, "content", 1, "input") },
			want: "input: Input should be an object"},
		{name: "tool name with a dot", edit: func(r map[string]any) { set(r, "shell.execute", "tools", 0, "name") },
			want: "String should match pattern '^[a-zA-Z0-9_-]{1,64}$'"},
		{name: "tool name of 65 characters", edit: func(r map[string]any) { set(r, strings.Repeat("a", 65), "tools", 0, "name") },
			want: "String should match pattern"},
		{name: "tool names twice", edit: func(r map[string]any) { set(r, "shell_execute", "tools", 1, "name") },
			want: "Tool names must be unique"},
		{name: "input schema not an object type", edit: func(r map[string]any) { set(r, "array", "tools", 0, "input_schema", "type") },
			want: "input_schema.type: Input should be 'object'"},
		{name: "no input schema", edit: func(r map[string]any) { del(r, "tools", 0, "input_schema") },
			want: "input_schema: Field required"},
		{name: "thinking budget below 1024", edit: func(r map[string]any) { set(r, 1000, "thinking", "budget_tokens") },
			want: "greater than or equal to 1024"},
		{name: "thinking budget not below max_tokens", edit: func(r map[string]any) { set(r, 4096, "thinking", "budget_tokens") },
			want: "`max_tokens` must be greater than `thinking.budget_tokens`"},
		{name: "a budget above max_tokens with interleaved thinking", header: http.Header{"Anthropic-Beta": {"interleaved-thinking-2025-05-14"}},
			edit: func(r map[string]any) { set(r, 8192, "thinking", "budget_tokens") }},
		{name: "thinking type unknown", edit: func(r map[string]any) { set(r, "on", "thinking", "type") },
			want: "thinking.type"},
		{name: "thinking on, loop without its thinking", edit: func(r map[string]any) { del(r, "messages", 1, "content", 0) },
			want: "a final `assistant` message must start with a thinking block"},
		{name: "thinking off, loop without thinking", edit: func(r map[string]any) {
			del(r, "thinking")
			del(r, "messages", 1, "content", 0)
		}},
		{name: "redacted thinking starts the loop", edit: func(r map[string]any) {
			set(r, obj(`{"type": "redacted_thinking", "data": "EmwK"}`), "messages", 1, "content", 0)
		}},
		{name: "thinking without signature", edit: func(r map[string]any) { set(r, "", "messages", 1, "content", 0, "signature") },
			want: "signature: Field required"},
		{name: "thinking in a user message", edit: func(r map[string]any) {
			ins(r, obj(`{"type": "thinking", "thinking": "x", "signature": "s"}`), "messages", 0, "content", 0)
		}, want: "thinking blocks are only allowed in assistant messages"},
		{name: "five cache breakpoints", edit: func(r map[string]any) {
			set(r, cc, "tools", 0, "cache_control")
			set(r, cc, "tools", 1, "cache_control")
			set(r, cc, "messages", 2, "content", 1, "content", 0, "cache_control")
		}, want: "A maximum of 4 blocks with cache_control may be provided. Found 5."},
		{name: "four cache breakpoints", edit: func(r map[string]any) {
			set(r, cc, "tools", 1, "cache_control")
			set(r, cc, "messages", 0, "content", 1, "cache_control")
		}},
		{name: "cache_control of another type", edit: func(r map[string]any) {
			set(r, obj(`{"type": "persistent"}`), "messages", 0, "content", 0, "cache_control")
		}, want: "cache_control.type: Input should be 'ephemeral'"},
		{name: "system as a string", edit: func(r map[string]any) { set(r, "You are den.", "system") }},
		{name: "system as an object", edit: func(r map[string]any) { set(r, obj(`{"text": "x"}`), "system") },
			want: "system: Input should be a string or an array of text blocks"},
		{name: "system with an image", edit: func(r map[string]any) {
			set(r, []any{walk(r, []any{"messages", 0, "content", 1})}, "system")
		}, want: "system blocks must be text blocks"},
		{name: "empty system text", edit: func(r map[string]any) { set(r, "", "system", 0, "text") },
			want: "text content blocks must be non-empty"},
		{name: "unknown block type", edit: func(r map[string]any) { set(r, "video", "messages", 0, "content", 1, "type") },
			want: `unknown content block type "video"`},
	})
}
