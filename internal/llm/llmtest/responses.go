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
func NewResponses(t testing.TB, turns ...Turn) *Server {
	return NewServer(t, turns, func(w http.ResponseWriter, r *http.Request, turn Turn) {
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
