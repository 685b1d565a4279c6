package openairesponses

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/openai/openai-go/v3/packages/param"
	"github.com/openai/openai-go/v3/responses"
	"github.com/openai/openai-go/v3/shared"

	"den.dev/den/internal/llm"
)

// params builds the request body for req.
func params(req *llm.Request) (responses.ResponseNewParams, error) {
	p := responses.ResponseNewParams{
		Model: req.Model,
		Store: param.NewOpt(false),
	}
	if req.System != "" {
		p.Instructions = param.NewOpt(req.System)
	}
	items, err := input(req.Model, req.Messages)
	if err != nil {
		return p, err
	}
	p.Input = responses.ResponseNewParamsInputUnion{OfInputItemList: items}
	for _, t := range req.Tools {
		schema := map[string]any{"type": "object", "properties": map[string]any{}}
		if len(t.Schema) > 0 {
			var raw map[string]json.RawMessage
			if err := json.Unmarshal(t.Schema, &raw); err != nil {
				return p, fmt.Errorf("tool %s: schema: %w", t.Name, err)
			}
			schema = make(map[string]any, len(raw))
			for k, v := range raw {
				schema[k] = v
			}
		}
		tool := responses.ToolParamOfFunction(t.Name, schema, false)
		if t.Description != "" {
			tool.OfFunction.Description = param.NewOpt(t.Description)
		}
		p.Tools = append(p.Tools, tool)
	}
	if req.MaxTokens > 0 {
		p.MaxOutputTokens = param.NewOpt(int64(req.MaxTokens))
	}
	if ReasoningModel(req.Model) {
		p.Include = []responses.ResponseIncludable{responses.ResponseIncludableReasoningEncryptedContent}
		if e := effort(req.Thinking); e != "" {
			p.Reasoning = shared.ReasoningParam{Effort: e, Summary: shared.ReasoningSummaryAuto}
		}
	}
	if req.CacheKey != "" {
		p.PromptCacheKey = param.NewOpt(req.CacheKey)
	}
	return p, nil
}

// effort maps a thinking level to reasoning.effort, "" for off.
func effort(level llm.ThinkingLevel) shared.ReasoningEffort {
	switch level {
	case llm.ThinkingLow:
		return shared.ReasoningEffortLow
	case llm.ThinkingMedium:
		return shared.ReasoningEffortMedium
	case llm.ThinkingHigh, llm.ThinkingMax:
		return shared.ReasoningEffortHigh
	}
	return ""
}

// ReasoningModel reports whether model is an OpenAI reasoning model: the
// o-series (not o1-mini or o1-preview) and gpt-5* (not the -chat
// variants). A "vendor/" prefix is ignored.
func ReasoningModel(model string) bool {
	m := strings.ToLower(model)
	if i := strings.LastIndexByte(m, '/'); i >= 0 {
		m = m[i+1:]
	}
	switch {
	case strings.HasPrefix(m, "o1-mini"), strings.HasPrefix(m, "o1-preview"), strings.Contains(m, "-chat"):
		return false
	case strings.HasPrefix(m, "gpt-5"):
		return true
	case len(m) >= 2 && m[0] == 'o' && m[1] >= '1' && m[1] <= '9':
		return true
	}
	return false
}

// input converts den's conversation into input items, in order.
func input(model string, msgs []llm.Message) (responses.ResponseInputParam, error) {
	var items responses.ResponseInputParam
	for i, msg := range msgs {
		switch msg.Role {
		case llm.User:
			var content responses.ResponseInputMessageContentListParam
			for _, part := range msg.Parts {
				switch p := part.(type) {
				case *llm.Text:
					content = append(content, responses.ResponseInputContentParamOfInputText(p.Text))
				case *llm.Image:
					content = append(content, responses.ResponseInputContentUnionParam{OfInputImage: &responses.ResponseInputImageParam{
						Detail: responses.ResponseInputImageDetailAuto, ImageURL: param.NewOpt(dataURL(p)),
					}})
				case *llm.ToolResult:
					items = append(items, toolResult(p))
				default:
					return nil, fmt.Errorf("message %d: %T in a user message", i, part)
				}
			}
			if len(content) > 0 {
				items = append(items, message(responses.ResponseInputItemParamOfMessage(content, responses.EasyInputMessageRoleUser)))
			}
		case llm.Assistant:
			var text strings.Builder
			flush := func() {
				if text.Len() > 0 {
					items = append(items, message(responses.ResponseInputItemParamOfMessage(text.String(), responses.EasyInputMessageRoleAssistant)))
					text.Reset()
				}
			}
			for _, part := range msg.Parts {
				switch p := part.(type) {
				case *llm.Text:
					text.WriteString(p.Text)
				case *llm.Thinking:
					if p.API != API || p.Signature != model || !replayable(p.Opaque) {
						continue
					}
					flush()
					items = append(items, param.Override[responses.ResponseInputItemUnionParam](p.Opaque))
				case *llm.ToolCall:
					flush()
					args := string(p.Input)
					if strings.TrimSpace(args) == "" {
						args = "{}"
					}
					items = append(items, responses.ResponseInputItemParamOfFunctionCall(args, p.ID, p.Name))
				default:
					return nil, fmt.Errorf("message %d: %T in an assistant message", i, part)
				}
			}
			flush()
		default:
			return nil, fmt.Errorf("message %d: unknown role %q", i, msg.Role)
		}
	}
	return items, nil
}

// message marks a message item's type, which the API would infer but
// not every compatible server does.
func message(item responses.ResponseInputItemUnionParam) responses.ResponseInputItemUnionParam {
	item.OfMessage.Type = responses.EasyInputMessageTypeMessage
	return item
}

// replayable reports whether a stored reasoning item carries the
// encrypted content a stateless request needs.
func replayable(item json.RawMessage) bool {
	var v struct {
		Type             string `json:"type"`
		EncryptedContent string `json:"encrypted_content"`
	}
	return json.Unmarshal(item, &v) == nil && v.Type == "reasoning" && v.EncryptedContent != ""
}

// toolResult is a function_call_output item: text, or a content list
// when the result has images.
func toolResult(r *llm.ToolResult) responses.ResponseInputItemUnionParam {
	var text strings.Builder
	if r.IsError {
		text.WriteString("Error: ")
	}
	var list responses.ResponseFunctionCallOutputItemListParam
	for _, c := range r.Content {
		switch c := c.(type) {
		case *llm.Text:
			if text.Len() > 0 && !(r.IsError && text.Len() == len("Error: ")) {
				text.WriteString("\n")
			}
			text.WriteString(c.Text)
		case *llm.Image:
			list = append(list, responses.ResponseFunctionCallOutputItemUnionParam{OfInputImage: &responses.ResponseInputImageContentParam{
				ImageURL: param.NewOpt(dataURL(c)),
			}})
		}
	}
	var item responses.ResponseInputItemUnionParam
	if len(list) == 0 {
		item = responses.ResponseInputItemParamOfFunctionCallOutput(text.String())
	} else {
		if text.Len() > 0 {
			list = append(responses.ResponseFunctionCallOutputItemListParam{
				responses.ResponseFunctionCallOutputItemParamOfInputText(text.String()),
			}, list...)
		}
		item = responses.ResponseInputItemParamOfFunctionCallOutput(list)
	}
	item.OfFunctionCallOutput.CallID = param.NewOpt(r.CallID)
	return item
}

// dataURL is an image as a data: URL.
func dataURL(img *llm.Image) string {
	return "data:" + img.MediaType + ";base64," + base64.StdEncoding.EncodeToString(img.Data)
}
