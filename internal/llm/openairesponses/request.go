package openairesponses

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/openai/openai-go/v3/packages/param"
	"github.com/openai/openai-go/v3/responses"
	"github.com/openai/openai-go/v3/shared"

	"den.dev/den/internal/llm"
	"den.dev/den/internal/llm/internal/openaiapi"
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
		schema, err := openaiapi.Parameters(t)
		if err != nil {
			return p, err
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
		if e := openaiapi.Effort(req.Thinking); e != "" {
			p.Reasoning = shared.ReasoningParam{Effort: e, Summary: shared.ReasoningSummaryAuto}
		}
	}
	if req.CacheKey != "" {
		p.PromptCacheKey = param.NewOpt(req.CacheKey)
	}
	return p, nil
}

// ReasoningModel reports whether model is an OpenAI reasoning model: the
// o-series (not o1-mini or o1-preview), gpt-5* and the GPT-6 family (not the -chat
// variants). A "vendor/" prefix is ignored.
func ReasoningModel(model string) bool {
	return openaiapi.ReasoningModel(model)
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
						Detail: responses.ResponseInputImageDetailAuto, ImageURL: param.NewOpt(openaiapi.DataURL(p)),
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
					args := openaiapi.Arguments(string(p.Input))
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
				ImageURL: param.NewOpt(openaiapi.DataURL(c)),
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
