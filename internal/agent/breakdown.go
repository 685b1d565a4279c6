package agent

import (
	"sort"

	"den.dev/den/internal/agent/ctxwin"
	"den.dev/den/internal/llm"
)

// Section is a named part of the system prompt, for the breakdown of a
// request: "system" (den's own prompt and the user's instructions),
// "skills", "memory", "context_files", "mcp".
type Section struct {
	Name string
	Text string
}

// The parts of a request a breakdown names, besides the system
// prompt's sections.
const (
	PartSystem      = "system"
	PartTools       = "tools"
	PartHistory     = "history"
	PartAttachments = "attachments" // images in the messages
)

// breakdown estimates the tokens of each part of a request: the
// sections of the system prompt (all of it as "system" without
// sections), the tool definitions, the messages' images
// ("attachments") and the rest of the messages ("history").
func breakdown(cfg Config, msgs []llm.Message, tools []llm.Tool) map[string]int {
	out := map[string]int{}
	if len(cfg.Sections) == 0 {
		if cfg.System != "" {
			out[PartSystem] = ctxwin.EstimateText(cfg.System) + ctxwin.SystemOverhead
		}
	}
	for _, s := range cfg.Sections {
		if s.Text != "" {
			out[s.Name] += ctxwin.EstimateText(s.Text)
		}
	}
	if len(cfg.Sections) > 0 {
		out[PartSystem] += ctxwin.SystemOverhead
	}
	if len(tools) > 0 {
		out[PartTools] = ctxwin.EstimateFixed("", tools)
	}
	for _, m := range msgs {
		images := 0
		for _, p := range m.Parts {
			images += imageTokens(p)
		}
		out[PartAttachments] += images
		out[PartHistory] += ctxwin.EstimateMessage(m) - images
	}
	for k, v := range out {
		if v <= 0 {
			delete(out, k)
		}
	}
	return out
}

// imageTokens is the estimate of the images in p (a tool result's
// images included).
func imageTokens(p llm.Part) int {
	switch p := p.(type) {
	case *llm.Image:
		return ctxwin.EstimateImage(p)
	case *llm.ToolResult:
		n := 0
		for _, c := range p.Content {
			n += imageTokens(c)
		}
		return n
	}
	return 0
}

// apportion shares total (the input tokens the provider reported: its
// uncached, cache-read and cache-written tokens together) among the
// parts in proportion to their estimates, so that the parts add up to
// exactly what the provider counted. The remainder of the rounding
// goes to the largest part.
func apportion(est map[string]int, total int64) map[string]int64 {
	out := map[string]int64{}
	sum := 0
	for _, v := range est {
		sum += v
	}
	if sum == 0 || total <= 0 {
		return out
	}
	names := make([]string, 0, len(est))
	for k := range est {
		names = append(names, k)
	}
	sort.Slice(names, func(i, j int) bool {
		return est[names[i]] > est[names[j]] || est[names[i]] == est[names[j]] && names[i] < names[j]
	})
	var given int64
	for _, k := range names {
		v := total * int64(est[k]) / int64(sum)
		out[k] = v
		given += v
	}
	out[names[0]] += total - given
	return out
}
