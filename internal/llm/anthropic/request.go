package anthropic

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/anthropics/anthropic-sdk-go/v2/packages/param"

	"den.dev/den/internal/llm"
)

const (
	// defaultMaxTokens is max_tokens when the request leaves it at 0,
	// and the room the answer keeps when thinking raises it.
	defaultMaxTokens = 8192
	// minBudget is the API's smallest thinking budget.
	minBudget = 1024
)

// budgets are the thinking budgets of the levels, in tokens.
var budgets = map[llm.ThinkingLevel]int64{
	llm.ThinkingLow:    1024,
	llm.ThinkingMedium: 4096,
	llm.ThinkingHigh:   16384,
	llm.ThinkingMax:    32768,
}

// newParams builds the Messages API request for req.
func newParams(req *llm.Request) (anthropic.MessageNewParams, error) {
	var p anthropic.MessageNewParams
	if req.Model == "" {
		return p, errors.New("anthropic: request names no model")
	}
	maxTokens, budget, err := tokens(req.MaxTokens, req.Thinking)
	if err != nil {
		return p, err
	}
	p.Model = anthropic.Model(req.Model)
	p.MaxTokens = maxTokens
	if budget > 0 {
		p.Thinking = anthropic.ThinkingConfigParamOfEnabled(budget)
	}
	if req.System != "" {
		p.System = []anthropic.TextBlockParam{{Text: req.System}}
	}
	for _, t := range req.Tools {
		tool, err := toolParam(t)
		if err != nil {
			return p, err
		}
		p.Tools = append(p.Tools, anthropic.ToolUnionParam{OfTool: tool})
	}
	msgs, err := messages(req.Messages)
	if err != nil {
		return p, err
	}
	p.Messages = msgs
	if budget > 0 && !thinkingReplayable(msgs) {
		p.Thinking = anthropic.ThinkingConfigParamUnion{}
	}
	if req.CacheKey != "" {
		markCache(&p)
	}
	return p, nil
}

// tokens returns max_tokens and the thinking budget (0: no thinking)
// for the request's MaxTokens and level; see the package doc.
func tokens(maxTokens int, level llm.ThinkingLevel) (int64, int64, error) {
	if maxTokens < 0 {
		return 0, 0, fmt.Errorf("anthropic: max tokens %d is negative", maxTokens)
	}
	var budget int64
	switch level {
	case "", llm.ThinkingOff:
	default:
		b, ok := budgets[level]
		if !ok {
			return 0, 0, fmt.Errorf("anthropic: unknown thinking level %q", level)
		}
		budget = b
	}
	if maxTokens == 0 {
		if budget > 0 {
			return budget + defaultMaxTokens, budget, nil
		}
		return defaultMaxTokens, 0, nil
	}
	limit := int64(maxTokens)
	if budget > limit-minBudget {
		budget = limit - minBudget
	}
	if budget < minBudget {
		budget = 0
	}
	return limit, budget, nil
}

func toolParam(t llm.Tool) (*anthropic.ToolParam, error) {
	tool := &anthropic.ToolParam{Name: t.Name}
	if t.Description != "" {
		tool.Description = anthropic.String(t.Description)
	}
	schema := t.Schema
	if len(bytes.TrimSpace(schema)) == 0 {
		schema = json.RawMessage(`{"type":"object","properties":{}}`)
	}
	if !isObject(schema) {
		return nil, fmt.Errorf("anthropic: tool %q: input schema is not a JSON object", t.Name)
	}
	// Sent verbatim: the SDK's typed schema would reorder keys (its
	// extra fields come from a map), and a prefix that changes from
	// request to request defeats the cache.
	tool.InputSchema = param.Override[anthropic.ToolInputSchemaParam](schema)
	return tool, nil
}

// turn is a message being assembled, before merging is done.
type turn struct {
	role   llm.Role
	blocks []anthropic.ContentBlockParamUnion
}

// messages maps the conversation, leaving out messages with nothing to
// send and merging consecutive messages with the same role.
func messages(msgs []llm.Message) ([]anthropic.MessageParam, error) {
	var turns []turn
	for i, m := range msgs {
		if m.Role != llm.User && m.Role != llm.Assistant {
			return nil, fmt.Errorf("anthropic: message %d: unknown role %q", i, m.Role)
		}
		blocks, err := contentBlocks(m.Parts)
		if err != nil {
			return nil, fmt.Errorf("anthropic: message %d: %w", i, err)
		}
		if len(blocks) == 0 {
			continue
		}
		if n := len(turns); n > 0 && turns[n-1].role == m.Role {
			turns[n-1].blocks = append(turns[n-1].blocks, blocks...)
			continue
		}
		turns = append(turns, turn{role: m.Role, blocks: blocks})
	}
	renameToolIDs(turns)
	out := make([]anthropic.MessageParam, 0, len(turns))
	for _, t := range turns {
		if t.role == llm.User {
			out = append(out, anthropic.NewUserMessage(resultsFirst(t.blocks)...))
		} else {
			out = append(out, anthropic.NewAssistantMessage(t.blocks...))
		}
	}
	return out, nil
}

// renameToolIDs makes the tool_use ids of the merged turns ones the API
// takes: they must match ^[a-zA-Z0-9_-]+$ and be unique in the request,
// and calls made through other APIs need not be (a compatible server's
// "functions.shell:0" has a dot and a colon and comes back every turn).
// A bad character becomes "_", an empty id "tool_call", and an id used
// before gets "_2", "_3", ... appended; each tool_result follows its
// call, looked up in the assistant turn just before it (the n-th result
// of an id that turn used twice follows the n-th call). Ids the API
// gave are valid and unique, so they are sent unchanged; the renaming
// depends only on the history before each call, so a growing
// conversation keeps the prefix it had (the prompt cache needs that).
func renameToolIDs(turns []turn) {
	used := map[string]bool{}
	var renamed map[string][]string // the previous assistant turn's ids, in call order
	for _, t := range turns {
		if t.role != llm.Assistant {
			for _, b := range t.blocks {
				r := b.OfToolResult
				if r == nil {
					continue
				}
				q := renamed[r.ToolUseID]
				if len(q) == 0 {
					r.ToolUseID = validToolID(r.ToolUseID)
					continue
				}
				if len(q) > 1 {
					renamed[r.ToolUseID] = q[1:]
				}
				r.ToolUseID = q[0]
			}
			renamed = nil
			continue
		}
		renamed = map[string][]string{}
		for _, b := range t.blocks {
			u := b.OfToolUse
			if u == nil {
				continue
			}
			base := validToolID(u.ID)
			id := base
			for n := 2; used[id]; n++ {
				id = base + "_" + strconv.Itoa(n)
			}
			used[id] = true
			renamed[u.ID] = append(renamed[u.ID], id)
			u.ID = id
		}
	}
}

// validToolID is id with the characters the API refuses replaced.
func validToolID(id string) string {
	if id == "" {
		return "tool_call"
	}
	return strings.Map(func(r rune) rune {
		if r == '_' || r == '-' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' {
			return r
		}
		return '_'
	}, id)
}

// thinkingReplayable reports whether extended thinking can be on for
// msgs. While a tool-use loop is under way (the last message returns
// tool results), the API wants the assistant message those results
// answer to start with its thinking block, and refuses the request
// otherwise. That message has none when another API made the calls (a
// fallback or a switch of model mid-loop), when thinking was off for
// it, or when its thinking could not be kept (no signature); the API's
// remedy is to leave thinking off, which this request then does: the
// next turn, which starts a new loop, thinks again.
func thinkingReplayable(msgs []anthropic.MessageParam) bool {
	n := len(msgs)
	if n < 2 || msgs[n-1].OfUser == nil || msgs[n-2].OfAssistant == nil {
		return true
	}
	last := msgs[n-1].OfUser.Content
	if len(last) == 0 || last[0].OfToolResult == nil {
		return true
	}
	prev := msgs[n-2].OfAssistant.Content
	return len(prev) > 0 && (prev[0].OfThinking != nil || prev[0].OfRedactedThinking != nil)
}

// resultsFirst moves tool_result blocks ahead of the others, keeping
// each group's order: the API wants a user turn's tool results before
// any text, which a merge of two user messages could break.
func resultsFirst(blocks []anthropic.ContentBlockParamUnion) []anthropic.ContentBlockParamUnion {
	out := make([]anthropic.ContentBlockParamUnion, 0, len(blocks))
	for _, b := range blocks {
		if b.OfToolResult != nil {
			out = append(out, b)
		}
	}
	for _, b := range blocks {
		if b.OfToolResult == nil {
			out = append(out, b)
		}
	}
	return out
}

// contentBlocks maps a message's parts; parts with nothing to send
// (empty text, other APIs' thinking) map to no block.
func contentBlocks(parts []llm.Part) ([]anthropic.ContentBlockParamUnion, error) {
	var out []anthropic.ContentBlockParamUnion
	for _, part := range parts {
		switch p := part.(type) {
		case *llm.Text:
			if p.Text != "" {
				out = append(out, anthropic.NewTextBlock(p.Text))
			}
		case *llm.Image:
			img, err := imageBlock(p)
			if err != nil {
				return nil, err
			}
			out = append(out, anthropic.ContentBlockParamUnion{OfImage: img})
		case *llm.Thinking:
			if b, ok := thinkingBlock(p); ok {
				out = append(out, b)
			}
		case *llm.ToolCall:
			input := p.Input
			if !isObject(input) {
				input = json.RawMessage("{}")
			}
			out = append(out, anthropic.NewToolUseBlock(p.ID, input, p.Name))
		case *llm.ToolResult:
			b, err := toolResultBlock(p)
			if err != nil {
				return nil, err
			}
			out = append(out, anthropic.ContentBlockParamUnion{OfToolResult: b})
		default:
			return nil, fmt.Errorf("unsupported part %T", part)
		}
	}
	return out, nil
}

// thinkingBlock replays an Anthropic thinking part unchanged; it
// reports false for other APIs' reasoning and for thinking that cannot
// be replayed (no signature, no redacted data).
func thinkingBlock(t *llm.Thinking) (anthropic.ContentBlockParamUnion, bool) {
	if t.API != api {
		return anthropic.ContentBlockParamUnion{}, false
	}
	if t.Redacted {
		var data string
		if json.Unmarshal(t.Opaque, &data) != nil || data == "" {
			return anthropic.ContentBlockParamUnion{}, false
		}
		return anthropic.NewRedactedThinkingBlock(data), true
	}
	if t.Signature == "" {
		return anthropic.ContentBlockParamUnion{}, false
	}
	return anthropic.NewThinkingBlock(t.Signature, t.Text), true
}

func imageBlock(img *llm.Image) (*anthropic.ImageBlockParam, error) {
	switch img.MediaType {
	case "image/jpeg", "image/png", "image/gif", "image/webp":
	default:
		return nil, fmt.Errorf("image media type %q is not one the API takes (jpeg, png, gif, webp)", img.MediaType)
	}
	return &anthropic.ImageBlockParam{
		Source: anthropic.ImageBlockParamSourceUnion{OfBase64: &anthropic.Base64ImageSourceParam{
			Data:      base64.StdEncoding.EncodeToString(img.Data),
			MediaType: anthropic.Base64ImageSourceMediaType(img.MediaType),
		}},
	}, nil
}

func toolResultBlock(r *llm.ToolResult) (*anthropic.ToolResultBlockParam, error) {
	b := &anthropic.ToolResultBlockParam{ToolUseID: r.CallID}
	if r.IsError {
		b.IsError = anthropic.Bool(true)
	}
	for _, part := range r.Content {
		switch p := part.(type) {
		case *llm.Text:
			if p.Text != "" {
				b.Content = append(b.Content, anthropic.ToolResultBlockParamContentUnion{OfText: &anthropic.TextBlockParam{Text: p.Text}})
			}
		case *llm.Image:
			img, err := imageBlock(p)
			if err != nil {
				return nil, fmt.Errorf("tool result %s: %w", r.CallID, err)
			}
			b.Content = append(b.Content, anthropic.ToolResultBlockParamContentUnion{OfImage: img})
		default:
			return nil, fmt.Errorf("tool result %s: unsupported part %T", r.CallID, part)
		}
	}
	return b, nil
}

// markCache places the cache breakpoints the package doc describes:
// last tool, system prompt, last block of each of the last two user
// turns — four at most, the API's limit.
func markCache(p *anthropic.MessageNewParams) {
	cc := anthropic.NewCacheControlEphemeralParam()
	if n := len(p.Tools); n > 0 {
		p.Tools[n-1].OfTool.CacheControl = cc
	}
	if n := len(p.System); n > 0 {
		p.System[n-1].CacheControl = cc
	}
	marked := 0
	for i := len(p.Messages) - 1; i >= 0 && marked < 2; i-- {
		u := p.Messages[i].OfUser
		if u == nil {
			continue
		}
		if setCache(&u.Content[len(u.Content)-1], cc) {
			marked++
		}
	}
}

// setCache sets a breakpoint on a block that can carry one.
func setCache(b *anthropic.ContentBlockParamUnion, cc anthropic.CacheControlEphemeralParam) bool {
	switch {
	case b.OfText != nil:
		b.OfText.CacheControl = cc
	case b.OfImage != nil:
		b.OfImage.CacheControl = cc
	case b.OfToolResult != nil:
		b.OfToolResult.CacheControl = cc
	case b.OfToolUse != nil:
		b.OfToolUse.CacheControl = cc
	default:
		return false
	}
	return true
}

// isObject reports whether raw is one valid JSON object.
func isObject(raw json.RawMessage) bool {
	t := bytes.TrimSpace(raw)
	return len(t) > 0 && t[0] == '{' && json.Valid(t)
}
