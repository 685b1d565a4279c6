package llmtest

import (
	"strings"
	"testing"
)

const openAIBase = `{
	"model": "gpt-test", "stream": true, "stream_options": {"include_usage": true}, "max_tokens": 4096,
	"reasoning_effort": "high",
	"tools": [{"type": "function", "function": {"name": "file_read", "parameters": {"type": "object"}}}],
	"messages": [
		{"role": "system", "content": "You are den."},
		{"role": "user", "content": [
			{"type": "text", "text": "hi"},
			{"type": "image_url", "image_url": {"url": "data:image/png;base64,iVBORw0KGgo="}}
		]},
		{"role": "assistant", "content": "Reading.", "tool_calls": [
			{"id": "call_1", "type": "function", "function": {"name": "file_read", "arguments": "{}"}},
			{"id": "call_2", "type": "function", "function": {"name": "file_read", "arguments": "{\"path\": \"/\"}"}}
		]},
		{"role": "tool", "tool_call_id": "call_1", "content": "one"},
		{"role": "tool", "tool_call_id": "call_2", "content": "two"},
		{"role": "user", "content": "thanks"}
	]
}`

func TestOpenAIRules(t *testing.T) {
	runRules(t, openAIAPI, openAIBase, []ruleCase{
		{name: "no model", edit: func(r map[string]any) { del(r, "model") }, want: "you must provide a model parameter"},
		{name: "no messages", edit: func(r map[string]any) { del(r, "messages") }, want: "Missing required parameter: 'messages'"},
		{name: "empty messages", edit: func(r map[string]any) { set(r, []any{}, "messages") }, want: "empty array"},
		{name: "unknown role", edit: func(r map[string]any) { set(r, "bot", "messages", 5, "role") }, want: "Invalid value: 'bot'"},
		{name: "developer role", edit: func(r map[string]any) { set(r, "developer", "messages", 0, "role") }},
		{name: "an unanswered call", edit: func(r map[string]any) { del(r, "messages", 4) },
			want: "An assistant message with 'tool_calls' must be followed by tool messages responding to each 'tool_call_id'. The following tool_call_ids did not have response messages: call_2"},
		{name: "calls as the last message", edit: func(r map[string]any) { set(r, walk(r, []any{"messages"}).([]any)[:3], "messages") },
			want: "did not have response messages: call_1, call_2"},
		{name: "a user message before the results", edit: func(r map[string]any) {
			ins(r, obj(`{"role": "user", "content": "wait"}`), "messages", 3)
		}, want: "did not have response messages: call_1, call_2"},
		{name: "a tool message after a user message", edit: func(r map[string]any) {
			ins(r, obj(`{"role": "tool", "tool_call_id": "call_1", "content": "again"}`), "messages", 6)
		}, want: "messages with role 'tool' must be a response to a preceeding message with 'tool_calls'"},
		{name: "a tool message for another call", edit: func(r map[string]any) { set(r, "call_9", "messages", 4, "tool_call_id") },
			want: "messages with role 'tool' must be a response to a preceeding message with 'tool_calls'"},
		{name: "a tool message without tool_call_id", edit: func(r map[string]any) { del(r, "messages", 4, "tool_call_id") },
			want: "tool_call_id"},
		{name: "a tool message without content", edit: func(r map[string]any) { del(r, "messages", 4, "content") },
			want: "Missing required parameter: 'messages[4].content'"},
		{name: "an assistant message with nothing", edit: func(r map[string]any) {
			set(r, []any{walk(r, []any{"messages", 0}), walk(r, []any{"messages", 1}), obj(`{"role": "assistant"}`)}, "messages")
		}, want: "content is required unless tool_calls is specified"},
		{name: "a call without id", edit: func(r map[string]any) { del(r, "messages", 2, "tool_calls", 0, "id") },
			want: "messages[2].tool_calls[0].id"},
		{name: "arguments not a string", edit: func(r map[string]any) {
			set(r, obj(`{}`), "messages", 2, "tool_calls", 0, "function", "arguments")
		}, want: "function.arguments"},
		{name: "function name with a dot", edit: func(r map[string]any) { set(r, "file.read", "tools", 0, "function", "name") },
			want: "string does not match pattern"},
		{name: "function name of 65 characters", edit: func(r map[string]any) {
			set(r, strings.Repeat("f", 65), "tools", 0, "function", "name")
		}, want: "string does not match pattern"},
		{name: "parameters not an object", edit: func(r map[string]any) { set(r, "object", "tools", 0, "function", "parameters") },
			want: "parameters"},
		{name: "parameters without a type", edit: func(r map[string]any) { set(r, obj(`{"properties": {}}`), "tools", 0, "function", "parameters") },
			want: `schema must be a JSON Schema of 'type: "object"', got 'type: "None"'`},
		{name: "an array without items", edit: func(r map[string]any) {
			set(r, obj(`{"type": "object", "properties": {"q": {"type": "object", "properties": {"tags": {"type": "array"}}}}}`), "tools", 0, "function", "parameters")
		}, want: "In context=('properties', 'q', 'properties', 'tags'), array schema missing items"},
		{name: "arrays with items", edit: func(r map[string]any) {
			set(r, obj(`{"type": "object", "properties": {"tags": {"type": "array", "items": {"type": "array", "items": {"type": "string"}}}}}`), "tools", 0, "function", "parameters")
		}},
		{name: "bmp image", edit: func(r map[string]any) {
			set(r, "data:image/bmp;base64,Qk0=", "messages", 1, "content", 1, "image_url", "url")
		}, want: `unsupported image media type "image/bmp"`},
		{name: "image data not base64", edit: func(r map[string]any) {
			set(r, "data:image/png;base64,not base64!", "messages", 1, "content", 1, "image_url", "url")
		}, want: "not valid base64"},
		{name: "image in a system message", edit: func(r map[string]any) {
			set(r, []any{walk(r, []any{"messages", 1, "content", 1})}, "messages", 0, "content")
		}, want: "Invalid value: 'image_url'"},
		{name: "empty user content", edit: func(r map[string]any) { set(r, []any{}, "messages", 1, "content") },
			want: "Invalid 'messages[1].content': empty array"},
		{name: "stream_options without stream", edit: func(r map[string]any) { del(r, "stream") },
			want: "The 'stream_options' parameter is only allowed when 'stream' is enabled."},
		{name: "max_tokens of 0", edit: func(r map[string]any) { set(r, 0, "max_tokens") }, want: "max_tokens"},
		{name: "max_completion_tokens", edit: func(r map[string]any) {
			del(r, "max_tokens")
			set(r, 4096, "max_completion_tokens")
		}},
		{name: "unknown reasoning effort", edit: func(r map[string]any) { set(r, "ultra", "reasoning_effort") },
			want: "reasoning_effort"},
	})
}
