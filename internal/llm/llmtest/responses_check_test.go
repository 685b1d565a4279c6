package llmtest

import (
	"testing"
)

const responsesBase = `{
	"model": "gpt-5", "store": false, "stream": true, "instructions": "You are den.",
	"include": ["reasoning.encrypted_content"], "reasoning": {"effort": "high", "summary": "auto"},
	"max_output_tokens": 4096,
	"tools": [{"type": "function", "name": "file_read", "parameters": {"type": "object"}, "strict": false}],
	"input": [
		{"type": "message", "role": "user", "content": [
			{"type": "input_text", "text": "hi"},
			{"type": "input_image", "image_url": "data:image/png;base64,iVBORw0KGgo=", "detail": "auto"}
		]},
		{"type": "reasoning", "id": "rs_1", "encrypted_content": "gAAAAenc", "summary": [{"type": "summary_text", "text": "One call."}]},
		{"type": "message", "role": "assistant", "content": "Reading."},
		{"type": "function_call", "call_id": "call_1", "name": "file_read", "arguments": "{}"},
		{"type": "function_call_output", "call_id": "call_1", "output": [
			{"type": "input_text", "text": "a picture:"},
			{"type": "input_image", "image_url": "data:image/jpeg;base64,/9j/"}
		]},
		{"type": "message", "role": "user", "content": [{"type": "input_text", "text": "thanks"}]}
	]
}`

func TestResponsesRules(t *testing.T) {
	runRules(t, responsesAPI, responsesBase, []ruleCase{
		{name: "no model", edit: func(r map[string]any) { del(r, "model") }, want: "Missing required parameter: 'model'"},
		{name: "input as a string", edit: func(r map[string]any) { set(r, "hi", "input") }},
		{name: "input as an object", edit: func(r map[string]any) { set(r, obj(`{}`), "input") }, want: "Invalid type for 'input'"},
		{name: "output for no call", edit: func(r map[string]any) { set(r, "call_9", "input", 4, "call_id") },
			want: "No tool call found for function call output with call_id call_9."},
		{name: "output before its call", edit: func(r map[string]any) {
			in := walk(r, []any{"input"}).([]any)
			in[3], in[4] = in[4], in[3]
		}, want: "No tool call found for function call output with call_id call_1."},
		{name: "output for a call of the previous response", edit: func(r map[string]any) {
			set(r, "resp_1", "previous_response_id")
			set(r, true, "store")
			set(r, "call_9", "input", 4, "call_id")
		}},
		{name: "reasoning without encrypted content, not stored", edit: func(r map[string]any) { del(r, "input", 1, "encrypted_content") },
			want: "Items are not persisted when `store` is set to false."},
		{name: "reasoning without encrypted content, stored", edit: func(r map[string]any) {
			del(r, "input", 1, "encrypted_content")
			set(r, true, "store")
		}},
		{name: "reasoning without summary", edit: func(r map[string]any) { del(r, "input", 1, "summary") },
			want: "'input[1].summary'"},
		{name: "reasoning without id", edit: func(r map[string]any) { del(r, "input", 1, "id") }, want: "'input[1].id'"},
		{name: "item reference, not stored", edit: func(r map[string]any) { set(r, obj(`{"type": "item_reference", "id": "rs_1"}`), "input", 1) },
			want: "not persisted"},
		{name: "the same item twice", edit: func(r map[string]any) { ins(r, walk(r, []any{"input", 1}), "input", 2) },
			want: "Duplicate item found with id rs_1."},
		{name: "message of unknown role", edit: func(r map[string]any) { set(r, "tool", "input", 0, "role") }, want: "Invalid value: 'tool'"},
		{name: "message without type", edit: func(r map[string]any) { del(r, "input", 2, "type") }},
		{name: "assistant with input text", edit: func(r map[string]any) {
			set(r, []any{obj(`{"type": "input_text", "text": "x"}`)}, "input", 2, "content")
		}, want: "Invalid value: 'input_text'"},
		{name: "call without call_id", edit: func(r map[string]any) { del(r, "input", 3, "call_id") }, want: "'input[3].call_id'"},
		{name: "arguments not a string", edit: func(r map[string]any) { set(r, obj(`{}`), "input", 3, "arguments") },
			want: "'input[3].arguments'"},
		{name: "output of a bad type", edit: func(r map[string]any) { set(r, obj(`{}`), "input", 4, "output") },
			want: "Invalid type for 'input[4].output'"},
		{name: "output with an output_text part", edit: func(r map[string]any) { set(r, "output_text", "input", 4, "output", 0, "type") },
			want: "Invalid value: 'output_text'"},
		{name: "gif image", edit: func(r map[string]any) {
			set(r, "data:image/gif;base64,R0lGODlh", "input", 0, "content", 1, "image_url")
		}},
		{name: "bmp image", edit: func(r map[string]any) { set(r, "data:image/bmp;base64,Qk0=", "input", 0, "content", 1, "image_url") },
			want: `unsupported image media type "image/bmp"`},
		{name: "image detail unknown", edit: func(r map[string]any) { set(r, "max", "input", 0, "content", 1, "detail") },
			want: "Invalid value: 'max'"},
		{name: "image without url or file", edit: func(r map[string]any) { del(r, "input", 0, "content", 1, "image_url") },
			want: "needs image_url or file_id"},
		{name: "function name with a space", edit: func(r map[string]any) { set(r, "file read", "tools", 0, "name") },
			want: "string does not match pattern"},
		{name: "an array without items", edit: func(r map[string]any) {
			set(r, obj(`{"type": "object", "properties": {"tags": {"type": "array"}}}`), "tools", 0, "parameters")
		}, want: "array schema missing items"},
		{name: "unknown include", edit: func(r map[string]any) { set(r, []any{"reasoning.summary"}, "include") },
			want: "Invalid value: 'reasoning.summary'"},
		{name: "unknown effort", edit: func(r map[string]any) { set(r, "ultra", "reasoning", "effort") }, want: "Invalid value: 'ultra'"},
		{name: "max_output_tokens of 0", edit: func(r map[string]any) { set(r, 0, "max_output_tokens") }, want: "max_output_tokens"},
	})
}
