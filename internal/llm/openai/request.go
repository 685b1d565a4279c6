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
	cache := req.CacheKey != "" && !m.official && claudeModel(req.Model)
	msgs, err := messages(req.System, req.Messages, cache)
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
		if len(p.Tools) > 0 && openaiapi.ToolsNeedNoReasoning(req.Model) {
			// GPT-6 calls functions in Chat Completions only without
			// reasoning; the openai-responses provider reasons with tools.
			p.ReasoningEffort = "none"
		}
	}
	if req.CacheKey != "" && m.official {
		p.PromptCacheKey = param.NewOpt(req.CacheKey)
	}
	return p, nil
}

// ReasoningModel reports whether model is an OpenAI reasoning model that
// takes reasoning_effort: the o-series (not o1-mini or o1-preview) and
// gpt-5* and later (not the -chat variants). A "vendor/" prefix is
// ignored.
func ReasoningModel(model string) bool {
	return openaiapi.ReasoningModel(model)
}

// claudeModel reports whether model names one of Anthropic's Claude
// models, as gateways spell them: "claude-...", "anthropic/claude-...",
// "~anthropic/claude-...-latest" (OpenRouter) or a Bedrock-style
// "[region.]anthropic.claude-...".
func claudeModel(model string) bool {
	m := strings.ToLower(model)
	if i := strings.LastIndexByte(m, '/'); i >= 0 {
		m = m[i+1:]
	}
	return strings.HasPrefix(m, "claude") || strings.Contains(m, "anthropic.claude")
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
	cache     bool             // carries a cache breakpoint (see markCache)
}

// sent reports whether m goes on the wire: empty user and assistant
// messages are left out.
func (m *message) sent() bool {
	switch m.role {
	case "user":
		return len(m.parts) > 0
	case "assistant":
		return m.text.Len() > 0 || len(m.calls) > 0
	}
	return true
}

// messages converts den's conversation into Chat Completions messages;
// with cache set it places the cache breakpoints markCache describes.
func messages(system string, in []llm.Message, cache bool) ([]openai.ChatCompletionMessageParamUnion, error) {
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
	if cache {
		markCache(out)
	}
	params := make([]openai.ChatCompletionMessageParamUnion, 0, len(out))
	for _, m := range out {
		if !m.sent() {
			continue // nothing a server would accept
		}
		switch m.role {
		case "system":
			if m.cache {
				params = append(params, openai.SystemMessage([]openai.ChatCompletionContentPartTextParam{cachedText(m.text.String())}))
			} else {
				params = append(params, openai.SystemMessage(m.text.String()))
			}
		case "user":
			params = append(params, openai.UserMessage(m.parts))
		case "tool":
			if m.cache {
				params = append(params, openai.ToolMessage([]openai.ChatCompletionContentPartTextParam{cachedText(m.text.String())}, m.callID))
			} else {
				params = append(params, openai.ToolMessage(m.text.String(), m.callID))
			}
		case "assistant":
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

// markCache places Anthropic prompt-cache breakpoints, for a Claude
// model behind a Chat Completions gateway, the way OpenRouter documents
// them (openrouter.ai/docs/guides/best-practices/prompt-caching,
// "Anthropic Claude"): cache_control {"type": "ephemeral"} on a text
// content part, the message's content sent as an array of parts; at
// most four breakpoints. At most three are used, placed as the anthropic
// adapter places them on its native API:
//
//   - the system prompt, sent as one text part: Anthropic's prefix runs
//     tools, system, messages, so this caches the tool definitions too;
//   - the last message of each of the last two user turns, a user turn
//     being the run of user and tool messages between two assistant
//     messages (a gateway folds the run into one Anthropic user
//     message). The earlier one reads the prefix the previous request
//     wrote; the last one writes the prefix the next request of an agent
//     loop reads. A user message carries the breakpoint on its last text
//     part; a tool message's text becomes one text part carrying it
//     (OpenRouter accepts cache_control on text parts of tool messages;
//     its maintainers confirm it in earendil-works/pi#6941). A message
//     with no text to mark passes the breakpoint to the one before it in
//     the turn.
//
// Images are never marked: OpenRouter documents breakpoints on text
// parts only. The markers depend only on the conversation, so the same
// history gets the same bytes on every request, which the cache needs.
func markCache(out []*message) {
	for _, m := range out {
		if m.role == "system" && m.text.Len() > 0 {
			m.cache = true
		}
	}
	turns := 0
	marked := false // the current turn has its breakpoint
	for i := len(out) - 1; i >= 0 && turns < 2; i-- {
		m := out[i]
		if !m.sent() {
			continue
		}
		switch m.role {
		case "assistant", "system":
			if marked {
				turns++
			}
			marked = false
			continue
		}
		if marked {
			continue
		}
		switch m.role {
		case "tool":
			marked = m.text.Len() > 0
			m.cache = marked
		case "user":
			for j := len(m.parts) - 1; j >= 0 && !marked; j-- {
				if t := m.parts[j].OfText; t != nil && t.Text != "" {
					t.SetExtraFields(cacheControl())
					marked = true
				}
			}
		}
	}
}

// cacheControl is the extra field that makes a content part a cache
// breakpoint.
func cacheControl() map[string]any {
	return map[string]any{"cache_control": map[string]string{"type": "ephemeral"}}
}

// cachedText is a text part carrying a cache breakpoint.
func cachedText(text string) openai.ChatCompletionContentPartTextParam {
	p := openai.ChatCompletionContentPartTextParam{Text: text}
	p.SetExtraFields(cacheControl())
	return p
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
