package openai

import (
	"fmt"
	"strings"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/packages/param"
	"github.com/openai/openai-go/v3/shared"

	"den.dev/den/internal/llm"
	"den.dev/den/internal/llm/internal/openaiapi"
)

// params builds the request body for req.
func (m *Model) params(req *llm.Request) (openai.ChatCompletionNewParams, error) {
	p := openai.ChatCompletionNewParams{
		Model:         req.Model,
		StreamOptions: openai.ChatCompletionStreamOptionsParam{IncludeUsage: param.NewOpt(true)},
	}
	msgs, err := messages(req.System, req.Messages)
	if err != nil {
		return p, err
	}
	p.Messages = msgs
	for _, t := range req.Tools {
		params, err := openaiapi.Parameters(t)
		if err != nil {
			return p, err
		}
		fn := shared.FunctionDefinitionParam{Name: t.Name, Parameters: params}
		if t.Description != "" {
			fn.Description = param.NewOpt(t.Description)
		}
		p.Tools = append(p.Tools, openai.ChatCompletionFunctionTool(fn))
	}
	if req.MaxTokens > 0 {
		if m.official {
			p.MaxCompletionTokens = param.NewOpt(int64(req.MaxTokens))
		} else {
			p.MaxTokens = param.NewOpt(int64(req.MaxTokens))
		}
	}
	if ReasoningModel(req.Model) {
		p.ReasoningEffort = openaiapi.Effort(req.Thinking)
	}
	if req.CacheKey != "" && m.official {
		p.PromptCacheKey = param.NewOpt(req.CacheKey)
	}
	return p, nil
}

// ReasoningModel reports whether model is an OpenAI reasoning model that
// takes reasoning_effort: the o-series (not o1-mini or o1-preview) and
// gpt-5* (not the -chat variants). A "vendor/" prefix is ignored.
func ReasoningModel(model string) bool {
	return openaiapi.ReasoningModel(model)
}

// message is one wire message before conversion, so that consecutive
// messages of one role can merge.
type message struct {
	role      string // system, user, assistant, tool
	text      strings.Builder
	parts     []openai.ChatCompletionContentPartUnionParam // user
	calls     []openai.ChatCompletionMessageToolCallUnionParam
	reasoning *strings.Builder // assistant; nil: no echo
	callID    string           // tool
}

// messages converts den's conversation into Chat Completions messages.
func messages(system string, in []llm.Message) ([]openai.ChatCompletionMessageParamUnion, error) {
	var out []*message
	last := func(role string) *message {
		if n := len(out); n > 0 && out[n-1].role == role {
			return out[n-1]
		}
		m := &message{role: role}
		out = append(out, m)
		return m
	}
	if system != "" {
		last("system").text.WriteString(system)
	}
	for i, msg := range in {
		switch msg.Role {
		case llm.User:
			var images []openai.ChatCompletionContentPartUnionParam
			for _, part := range msg.Parts {
				r, ok := part.(*llm.ToolResult)
				if !ok {
					continue
				}
				t := &message{role: "tool", callID: r.CallID}
				if r.IsError {
					t.text.WriteString("Error: ")
				}
				t.text.WriteString(toolText(r))
				var imgs []openai.ChatCompletionContentPartUnionParam
				for _, c := range r.Content {
					if img, ok := c.(*llm.Image); ok {
						imgs = append(imgs, imagePart(img))
					}
				}
				if len(imgs) > 0 {
					if t.text.Len() == 0 {
						t.text.WriteString("(image attached below)")
					}
					images = append(images, openai.TextContentPart("Images returned by tool call "+r.CallID+":"))
					images = append(images, imgs...)
				}
				out = append(out, t)
			}
			if len(images) > 0 {
				u := last("user")
				u.parts = append(u.parts, images...)
			}
			for _, part := range msg.Parts {
				switch p := part.(type) {
				case *llm.Text:
					u := last("user")
					u.parts = append(u.parts, openai.TextContentPart(p.Text))
				case *llm.Image:
					u := last("user")
					u.parts = append(u.parts, imagePart(p))
				case *llm.ToolResult:
				default:
					return nil, fmt.Errorf("message %d: %T in a user message", i, part)
				}
			}
		case llm.Assistant:
			a := last("assistant")
			for _, part := range msg.Parts {
				switch p := part.(type) {
				case *llm.Text:
					a.text.WriteString(p.Text)
				case *llm.Thinking:
					if p.API != API {
						continue
					}
					if a.reasoning == nil {
						a.reasoning = new(strings.Builder)
					}
					a.reasoning.WriteString(p.Text)
				case *llm.ToolCall:
					args := openaiapi.Arguments(string(p.Input))
					a.calls = append(a.calls, openai.ChatCompletionMessageToolCallUnionParam{
						OfFunction: &openai.ChatCompletionMessageFunctionToolCallParam{
							ID:       p.ID,
							Function: openai.ChatCompletionMessageFunctionToolCallFunctionParam{Name: p.Name, Arguments: args},
						},
					})
				default:
					return nil, fmt.Errorf("message %d: %T in an assistant message", i, part)
				}
			}
		default:
			return nil, fmt.Errorf("message %d: unknown role %q", i, msg.Role)
		}
	}
	params := make([]openai.ChatCompletionMessageParamUnion, 0, len(out))
	for _, m := range out {
		switch m.role {
		case "system":
			params = append(params, openai.SystemMessage(m.text.String()))
		case "user":
			if len(m.parts) > 0 {
				params = append(params, openai.UserMessage(m.parts))
			}
		case "tool":
			params = append(params, openai.ToolMessage(m.text.String(), m.callID))
		case "assistant":
			if m.text.Len() == 0 && len(m.calls) == 0 {
				continue // nothing a server would accept
			}
			a := openai.ChatCompletionAssistantMessageParam{ToolCalls: m.calls}
			if m.text.Len() > 0 {
				a.Content.OfString = param.NewOpt(m.text.String())
			}
			if m.reasoning != nil {
				a.SetExtraFields(map[string]any{"reasoning_content": m.reasoning.String()})
			}
			params = append(params, openai.ChatCompletionMessageParamUnion{OfAssistant: &a})
		}
	}
	return params, nil
}

// toolText is a tool result's text parts, joined by newlines.
func toolText(r *llm.ToolResult) string {
	var b strings.Builder
	for _, c := range r.Content {
		if t, ok := c.(*llm.Text); ok {
			if b.Len() > 0 {
				b.WriteString("\n")
			}
			b.WriteString(t.Text)
		}
	}
	return b.String()
}

// imagePart is an image as a data: URL content part.
func imagePart(img *llm.Image) openai.ChatCompletionContentPartUnionParam {
	return openai.ImageContentPart(openai.ChatCompletionContentPartImageImageURLParam{URL: openaiapi.DataURL(img)})
}
