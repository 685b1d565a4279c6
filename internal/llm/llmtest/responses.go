package llmtest

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"testing"
)

// NewResponses starts a fake Responses API server (POST /responses and
// /v1/responses). Each turn streams typed events, each with its
// sequence_number: response.created and response.in_progress; Thinking
// as a reasoning item (output_item.added, reasoning_summary_part.added,
// reasoning_summary_text.delta..., output_item.done with a made-up
// encrypted_content and the summary); Text as a message item
// (content_part.added, output_text.delta..., output_text.done,
// output_item.done); each call as a function_call item (arguments in
// function_call_arguments.delta pieces, then .done and output_item.done);
// then the terminal event with usage (input_tokens counts cache reads
// and writes).
//
// Stop selects the terminal event: "" response.completed;
// "max_output_tokens" or "content_filter" response.incomplete with that
// reason; "failed" response.failed; "error" an error event; StopNone
// and StopCut as documented.
//
// It first checks each request as the Responses API does
// (CheckResponses) and refuses one that breaks a rule with 400 and
// OpenAI's error body (as NewOpenAI), failing the test (see the package
// doc). The rules and where they are documented:
//
// The Responses reference (developers.openai.com/api/reference/responses/create,
// also the openai-go v3 ResponseNewParams and input item docs generated
// from it):
//   - model is required; input is a string or an array of items;
//     instructions is a string; max_output_tokens a positive integer;
//     include, reasoning.effort and reasoning.summary take only the
//     documented values;
//   - a message item has role user, system or developer (input_text,
//     input_image, input_file, input_audio content) or assistant
//     (output_text, refusal content), or string content; a
//     function_call item has call_id, name and string arguments; a
//     function_call_output has call_id and output, a string or a list
//     of input_text, input_image and input_file parts; an input_image
//     has image_url or file_id and a documented detail; a reasoning item
//     has id and a summary list of summary_text parts; item ids are
//     unique ("Duplicate item found with id ...");
//   - a function tool's name follows the function naming rule of the
//     function-calling guide (a-z, A-Z, 0-9, underscores, dashes, at
//     most 64) and its parameters are an object schema whose arrays say
//     their items (as Chat Completions checks them);
//
// Function calling (developers.openai.com/api/docs/guides/function-calling):
// a function_call_output answers a function_call item earlier in the
// input ("No tool call found for function call output with call_id
// ..."), unless the request continues a previous_response_id, whose
// items the fake cannot see.
//
// Reasoning (developers.openai.com/api/docs/guides/reasoning,
// "Encrypted reasoning items", and the reasoning item's
// encrypted_content doc: "especially important when store is false"):
// with store: false nothing is kept at OpenAI, so a reasoning item must
// carry its encrypted_content and an item_reference cannot resolve.
//
// Vision (developers.openai.com/api/docs/guides/images-vision): a data:
// URL image is base64 PNG, JPEG, WEBP or GIF.
func NewResponses(t testing.TB, turns ...Turn) *Server {
	return newServer(t, turns, "OpenAI Responses", checkResponses, func(w http.ResponseWriter, r *http.Request, turn Turn) {
		if r.Method != http.MethodPost || (r.URL.Path != "/responses" && r.URL.Path != "/v1/responses") {
			http.Error(w, `{"error":{"message":"not found","type":"invalid_request_error"}}`, http.StatusNotFound)
			return
		}
		w.Header().Set("Content-Type", "text/event-stream")
		w.WriteHeader(http.StatusOK)
		seq := 0
		send := func(typ string, fields map[string]any) {
			fields["type"] = typ
			fields["sequence_number"] = seq
			seq++
			b, _ := json.Marshal(fields)
			SSE(w, typ, string(b))
		}
		response := func(status string, output []any) map[string]any {
			return map[string]any{
				"id": "resp_fake", "object": "response", "created_at": 1700000000, "status": status,
				"model": "fake", "output": output, "error": nil, "incomplete_details": nil,
				"parallel_tool_calls": true, "tool_choice": "auto", "tools": []any{}, "store": false,
			}
		}
		send("response.created", map[string]any{"response": response("in_progress", []any{})})
		send("response.in_progress", map[string]any{"response": response("in_progress", []any{})})
		var output []any
		if turn.Thinking != "" {
			i := len(output)
			id := "rs_fake"
			send("response.output_item.added", map[string]any{"output_index": i,
				"item": map[string]any{"id": id, "type": "reasoning", "summary": []any{}}})
			part := map[string]any{"type": "summary_text", "text": ""}
			send("response.reasoning_summary_part.added", map[string]any{"item_id": id, "output_index": i, "summary_index": 0, "part": part})
			for _, p := range pieces(turn.Thinking) {
				send("response.reasoning_summary_text.delta", map[string]any{"item_id": id, "output_index": i, "summary_index": 0, "delta": p})
			}
			send("response.reasoning_summary_text.done", map[string]any{"item_id": id, "output_index": i, "summary_index": 0, "text": turn.Thinking})
			part = map[string]any{"type": "summary_text", "text": turn.Thinking}
			send("response.reasoning_summary_part.done", map[string]any{"item_id": id, "output_index": i, "summary_index": 0, "part": part})
			item := map[string]any{
				"id": id, "type": "reasoning", "summary": []any{part},
				"encrypted_content": "gAAAA" + base64.StdEncoding.EncodeToString([]byte(turn.Thinking)),
			}
			send("response.output_item.done", map[string]any{"output_index": i, "item": item})
			output = append(output, item)
		}
		if turn.Text != "" {
			i := len(output)
			id := "msg_fake"
			send("response.output_item.added", map[string]any{"output_index": i, "item": map[string]any{
				"id": id, "type": "message", "status": "in_progress", "role": "assistant", "content": []any{}}})
			send("response.content_part.added", map[string]any{"item_id": id, "output_index": i, "content_index": 0,
				"part": map[string]any{"type": "output_text", "text": "", "annotations": []any{}}})
			for _, p := range pieces(turn.Text) {
				send("response.output_text.delta", map[string]any{"item_id": id, "output_index": i, "content_index": 0, "delta": p, "logprobs": []any{}})
			}
			send("response.output_text.done", map[string]any{"item_id": id, "output_index": i, "content_index": 0, "text": turn.Text, "logprobs": []any{}})
			part := map[string]any{"type": "output_text", "text": turn.Text, "annotations": []any{}}
			send("response.content_part.done", map[string]any{"item_id": id, "output_index": i, "content_index": 0, "part": part})
			item := map[string]any{"id": id, "type": "message", "status": "completed", "role": "assistant", "content": []any{part}}
			send("response.output_item.done", map[string]any{"output_index": i, "item": item})
			output = append(output, item)
		}
		for n, c := range turn.Calls {
			i := len(output)
			id := fmt.Sprintf("fc_fake%d", n)
			item := map[string]any{"id": id, "type": "function_call", "status": "in_progress", "call_id": c.ID, "name": c.Name, "arguments": ""}
			send("response.output_item.added", map[string]any{"output_index": i, "item": item})
			for _, p := range pieces(c.Input) {
				send("response.function_call_arguments.delta", map[string]any{"item_id": id, "output_index": i, "delta": p})
			}
			send("response.function_call_arguments.done", map[string]any{"item_id": id, "output_index": i, "arguments": c.Input})
			item = map[string]any{"id": id, "type": "function_call", "status": "completed", "call_id": c.ID, "name": c.Name, "arguments": c.Input}
			send("response.output_item.done", map[string]any{"output_index": i, "item": item})
			output = append(output, item)
		}
		usage := map[string]any{
			"input_tokens": turn.InputTokens + turn.CacheReadTokens + turn.CacheWriteTokens,
			"input_tokens_details": map[string]any{
				"cached_tokens": turn.CacheReadTokens, "cache_write_tokens": turn.CacheWriteTokens,
			},
			"output_tokens":         turn.OutputTokens,
			"output_tokens_details": map[string]any{"reasoning_tokens": 0},
			"total_tokens":          turn.InputTokens + turn.CacheReadTokens + turn.CacheWriteTokens + turn.OutputTokens,
		}
		switch turn.Stop {
		case StopCut:
			panic(http.ErrAbortHandler)
		case StopNone:
			return
		case "":
			resp := response("completed", output)
			resp["usage"] = usage
			send("response.completed", map[string]any{"response": resp})
		case "failed":
			resp := response("failed", output)
			resp["error"] = map[string]any{"code": "server_error", "message": "The model failed to answer."}
			send("response.failed", map[string]any{"response": resp})
		case "error":
			send("error", map[string]any{"code": "rate_limit_exceeded", "message": "Slow down.", "param": nil})
		default:
			resp := response("incomplete", output)
			resp["incomplete_details"] = map[string]any{"reason": turn.Stop}
			resp["usage"] = usage
			send("response.incomplete", map[string]any{"response": resp})
		}
	})
}
