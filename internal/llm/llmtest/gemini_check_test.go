package llmtest

import (
	"testing"
)

const geminiBase = `{
	"contents": [
		{"role": "user", "parts": [{"text": "hi"}, {"inlineData": {"mimeType": "image/png", "data": "iVBORw0KGgo="}}]},
		{"role": "model", "parts": [
			{"text": "Two calls.", "thought": true, "thoughtSignature": "c2lnLTE="},
			{"functionCall": {"id": "fc-1", "name": "file_read", "args": {"path": "/"}}, "thoughtSignature": "Y2FsbC0x"},
			{"functionCall": {"name": "now", "args": {}}}
		]},
		{"role": "user", "parts": [
			{"functionResponse": {"id": "fc-1", "name": "file_read", "response": {"output": "x"}}},
			{"functionResponse": {"name": "now", "response": {"error": "clock broken"}}},
			{"inlineData": {"mimeType": "image/jpeg", "data": "/9j/"}}
		]},
		{"role": "user", "parts": [{"text": "thanks"}]}
	],
	"systemInstruction": {"parts": [{"text": "You are den."}]},
	"tools": [{"functionDeclarations": [
		{"name": "file_read", "description": "Read a file.", "parametersJsonSchema": {"type": "object"}},
		{"name": "now"}
	]}],
	"generationConfig": {"maxOutputTokens": 4096, "thinkingConfig": {"thinkingBudget": 1024, "includeThoughts": true}}
}`

func TestGeminiRules(t *testing.T) {
	runRules(t, geminiAPI, geminiBase, []ruleCase{
		{name: "no contents", edit: func(r map[string]any) { del(r, "contents") }, want: "contents is not specified"},
		{name: "empty contents", edit: func(r map[string]any) { set(r, []any{}, "contents") }, want: "contents is not specified"},
		{name: "assistant role", edit: func(r map[string]any) { set(r, "assistant", "contents", 1, "role") },
			want: "Please use a valid role: user, model."},
		{name: "no role", edit: func(r map[string]any) { del(r, "contents", 3, "role") }},
		{name: "empty parts", edit: func(r map[string]any) { set(r, []any{}, "contents", 3, "parts") }, want: "contents.parts must not be empty."},
		{name: "a part without data", edit: func(r map[string]any) { set(r, obj(`{"thought": true}`), "contents", 3, "parts", 0) },
			want: "required oneof field 'data' must have one initialized field"},
		{name: "a part with two kinds of data", edit: func(r map[string]any) {
			set(r, obj(`{"mimeType": "image/png", "data": "iVBORw0KGgo="}`), "contents", 3, "parts", 0, "inlineData")
		}, want: "oneof field 'data' is already set"},
		{name: "gif image", edit: func(r map[string]any) { set(r, "image/gif", "contents", 0, "parts", 1, "inlineData", "mimeType") },
			want: "Unsupported MIME type: image/gif"},
		{name: "pdf document", edit: func(r map[string]any) {
			set(r, "application/pdf", "contents", 0, "parts", 1, "inlineData", "mimeType")
		}},
		{name: "inline data not base64", edit: func(r map[string]any) { set(r, "not base64!", "contents", 0, "parts", 1, "inlineData", "data") },
			want: "inline_data.data: Invalid value"},
		{name: "thought signature not base64", edit: func(r map[string]any) { set(r, "sig 1", "contents", 1, "parts", 0, "thoughtSignature") },
			want: "thought_signature: Invalid value"},
		{name: "the documented dummy signature", edit: func(r map[string]any) {
			set(r, "skip_thought_signature_validator", "contents", 1, "parts", 2, "thoughtSignature")
		}},
		{name: "a response missing", edit: func(r map[string]any) { del(r, "contents", 2, "parts", 1) },
			want: "Please ensure that the number of function response parts is equal to the number of function call parts of the function call turn."},
		{name: "a prompt instead of responses", edit: func(r map[string]any) { del(r, "contents", 2) },
			want: "the number of function response parts is equal to the number of function call parts"},
		{name: "a response of another name", edit: func(r map[string]any) {
			set(r, "file_write", "contents", 2, "parts", 1, "functionResponse", "name")
		}, want: `names "file_write", which no function call`},
		{name: "a response of another id", edit: func(r map[string]any) { set(r, "fc-9", "contents", 2, "parts", 0, "functionResponse", "id") },
			want: `has id "fc-9", which no function call`},
		{name: "responses without calls", edit: func(r map[string]any) { del(r, "contents", 1) },
			want: "Please ensure that function response turn comes immediately after a function call turn."},
		{name: "a call turn after a model turn", edit: func(r map[string]any) {
			ins(r, obj(`{"role": "model", "parts": [{"text": "Let me see."}]}`), "contents", 1)
		}, want: "Please ensure that function call turn comes immediately after a user turn or after a function response turn."},
		{name: "a call turn right after responses", edit: func(r map[string]any) {
			del(r, "contents", 3)
			set(r, append(walk(r, []any{"contents"}).([]any),
				obj(`{"role": "model", "parts": [{"functionCall": {"name": "now", "args": {}}}]}`),
				obj(`{"role": "user", "parts": [{"functionResponse": {"name": "now", "response": {"output": "13"}}}]}`)), "contents")
		}},
		{name: "a call in a user turn", edit: func(r map[string]any) {
			set(r, obj(`{"functionCall": {"name": "now", "args": {}}}`), "contents", 3, "parts", 0)
		}, want: "function calls are only allowed in model contents"},
		{name: "a call without name", edit: func(r map[string]any) { del(r, "contents", 1, "parts", 2, "functionCall", "name") },
			want: "function_call.name: Name cannot be empty."},
		{name: "call args not an object", edit: func(r map[string]any) { set(r, "{}", "contents", 1, "parts", 2, "functionCall", "args") },
			want: "function_call.args"},
		{name: "a response not an object", edit: func(r map[string]any) {
			set(r, "x", "contents", 2, "parts", 0, "functionResponse", "response")
		}, want: "function_response.response"},
		{name: "a declaration name with a space", edit: func(r map[string]any) {
			set(r, "file read", "tools", 0, "functionDeclarations", 0, "name")
		}, want: "Invalid function name"},
		{name: "a declaration name with dots and colons", edit: func(r map[string]any) {
			set(r, "fs.read:v1", "tools", 0, "functionDeclarations", 0, "name")
			set(r, "fs.read:v1", "contents", 1, "parts", 1, "functionCall", "name")
			set(r, "fs.read:v1", "contents", 2, "parts", 0, "functionResponse", "name")
		}},
		{name: "two declarations of one name", edit: func(r map[string]any) { set(r, "file_read", "tools", 0, "functionDeclarations", 1, "name") },
			want: "Duplicate function declaration found: file_read"},
		{name: "both kinds of parameters", edit: func(r map[string]any) {
			set(r, obj(`{"type": "OBJECT"}`), "tools", 0, "functionDeclarations", 0, "parameters")
		}, want: "mutually exclusive"},
		{name: "an image in the system instruction", edit: func(r map[string]any) {
			set(r, []any{walk(r, []any{"contents", 0, "parts", 1})}, "systemInstruction", "parts")
		}, want: "the system instruction takes text only"},
		{name: "thinking off on 2.5 pro", model: "gemini-2.5-pro", edit: func(r map[string]any) {
			set(r, 0, "generationConfig", "thinkingConfig", "thinkingBudget")
		}, want: "Budget 0 is invalid. This model only works in thinking mode."},
		{name: "the smallest budget on 2.5 pro", model: "gemini-2.5-pro", edit: func(r map[string]any) {
			set(r, 128, "generationConfig", "thinkingConfig", "thinkingBudget")
		}},
		{name: "a budget above 2.5 flash's", edit: func(r map[string]any) {
			set(r, 32768, "generationConfig", "thinkingConfig", "thinkingBudget")
		}, want: "Please choose a value between 0 and 24576."},
		{name: "a budget below 2.5 flash-lite's", model: "gemini-2.5-flash-lite", edit: func(r map[string]any) {
			set(r, 128, "generationConfig", "thinkingConfig", "thinkingBudget")
		}, want: "between 512 and 24576"},
		{name: "dynamic thinking", model: "gemini-2.5-pro", edit: func(r map[string]any) {
			set(r, -1, "generationConfig", "thinkingConfig", "thinkingBudget")
		}},
		{name: "budget and level", edit: func(r map[string]any) { set(r, "high", "generationConfig", "thinkingConfig", "thinkingLevel") },
			want: "cannot both be set"},
		{name: "a level on gemini 3.8 flash", model: "gemini-3.8-flash", edit: func(r map[string]any) {
			del(r, "generationConfig", "thinkingConfig", "thinkingBudget")
			set(r, "minimal", "generationConfig", "thinkingConfig", "thinkingLevel")
		}},
		{name: "minimal on a pro model", model: "gemini-3.1-pro-preview", edit: func(r map[string]any) {
			del(r, "generationConfig", "thinkingConfig", "thinkingBudget")
			set(r, "MINIMAL", "generationConfig", "thinkingConfig", "thinkingLevel")
		}, want: "Thinking level MINIMAL is not supported"},
		{name: "medium on gemini 3.0 pro", model: "gemini-3-pro-preview", edit: func(r map[string]any) {
			del(r, "generationConfig", "thinkingConfig", "thinkingBudget")
			set(r, "medium", "generationConfig", "thinkingConfig", "thinkingLevel")
		}, want: "Thinking level MEDIUM is not supported"},
		{name: "a level on gemini 2.5", edit: func(r map[string]any) {
			del(r, "generationConfig", "thinkingConfig", "thinkingBudget")
			set(r, "low", "generationConfig", "thinkingConfig", "thinkingLevel")
		}, want: "Thinking level is not supported for this model"},
		{name: "a level that does not exist", model: "gemini-3.8-flash", edit: func(r map[string]any) {
			del(r, "generationConfig", "thinkingConfig", "thinkingBudget")
			set(r, "extreme", "generationConfig", "thinkingConfig", "thinkingLevel")
		}, want: "thinking_level"},
		{name: "max output tokens of 0", edit: func(r map[string]any) { set(r, 0, "generationConfig", "maxOutputTokens") },
			want: "max_output_tokens"},
	})
}
