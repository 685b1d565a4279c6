package ctxwin

import (
	"bytes"
	"image"
	_ "image/gif" // image.DecodeConfig reads GIF headers
	_ "image/jpeg"
	_ "image/png"
	"math"
	"sync"

	"den.dev/den/internal/llm"
)

// The estimator's constants. den has no tokenizer: it counts bytes and
// adds a fixed overhead for the framing each provider wraps around
// messages, parts and tool definitions. The Calibrator corrects the
// result per model from what providers report.
const (
	// BytesPerToken is the ASCII rate: English prose and code run at
	// 3.5–4.5 bytes a token on current tokenizers.
	BytesPerToken = 4
	// MessageOverhead is added per message (role, separators).
	MessageOverhead = 4
	// PartOverhead is added per part, and per content part of a tool
	// result (block framing, a call's id).
	PartOverhead = 4
	// ToolOverhead is added per tool definition, besides its name,
	// description and schema.
	ToolOverhead = 10
	// SystemOverhead is added for a non-empty system prompt.
	SystemOverhead = 4
	// ImageMinTokens and ImageMaxTokens bound an image's cost. An image
	// costs its pixels / 750 after scaling its long edge to at most
	// 1568 px (Anthropic's rule; OpenAI's and Gemini's tiles come out
	// lower), and ImageMaxTokens when its size cannot be read (WebP, or
	// a broken file).
	ImageMinTokens = 85
	ImageMaxTokens = 1600
)

const (
	imagePixelsPerToken = 750
	imageMaxEdge        = 1568
)

// EstimateText estimates the tokens of s: its bytes plus one per
// non-ASCII character, divided by BytesPerToken, rounded up. ASCII text
// costs a token per 4 bytes; a CJK character (3 bytes) costs 1, a
// Cyrillic or Greek one (2 bytes) 0.75, which errs on the safe side.
func EstimateText(s string) int { return estimate(s) }

func estimate[T string | []byte](s T) int {
	n := len(s)
	i := 0
	for ; i+8 <= len(s); i += 8 {
		// Eight bytes at a time: all ASCII is the common case.
		w := uint64(s[i]) | uint64(s[i+1])<<8 | uint64(s[i+2])<<16 | uint64(s[i+3])<<24 |
			uint64(s[i+4])<<32 | uint64(s[i+5])<<40 | uint64(s[i+6])<<48 | uint64(s[i+7])<<56
		if w&0x8080808080808080 == 0 {
			continue
		}
		for j := i; j < i+8; j++ {
			if s[j] >= 0xC0 { // the first byte of a multi-byte character
				n++
			}
		}
	}
	for ; i < len(s); i++ {
		if s[i] >= 0xC0 {
			n++
		}
	}
	return (n + BytesPerToken - 1) / BytesPerToken
}

func estimateBytes(b []byte) int { return estimate(b) }

// EstimateImage estimates the tokens of an image from its dimensions.
func EstimateImage(img *llm.Image) int {
	cfg, _, err := image.DecodeConfig(bytes.NewReader(img.Data))
	if err != nil || cfg.Width <= 0 || cfg.Height <= 0 {
		return ImageMaxTokens
	}
	w, h := float64(cfg.Width), float64(cfg.Height)
	if long := math.Max(w, h); long > imageMaxEdge {
		w, h = w*imageMaxEdge/long, h*imageMaxEdge/long
	}
	t := int(math.Ceil(w * h / imagePixelsPerToken))
	return min(max(t, ImageMinTokens), ImageMaxTokens)
}

// EstimatePart estimates the tokens of one part, its overhead included.
// Thinking counts its text and opaque payload, not its signature.
func EstimatePart(p llm.Part) int {
	t := PartOverhead
	switch p := p.(type) {
	case *llm.Text:
		t += EstimateText(p.Text)
	case *llm.Image:
		t += EstimateImage(p)
	case *llm.Thinking:
		t += EstimateText(p.Text) + estimateBytes(p.Opaque)
	case *llm.ToolCall:
		t += EstimateText(p.Name) + estimateBytes(p.Input)
	case *llm.ToolResult:
		t += EstimateText(p.Name)
		for _, c := range p.Content {
			t += EstimatePart(c)
		}
	}
	return t
}

// EstimateMessage estimates the tokens of one message.
func EstimateMessage(m llm.Message) int {
	t := MessageOverhead
	for _, p := range m.Parts {
		t += EstimatePart(p)
	}
	return t
}

// EstimateFixed estimates what every request carries besides its
// messages: the system prompt and the tool definitions.
func EstimateFixed(system string, tools []llm.Tool) int {
	t := 0
	if system != "" {
		t += SystemOverhead + EstimateText(system)
	}
	for _, tl := range tools {
		t += ToolOverhead + EstimateText(tl.Name) + EstimateText(tl.Description) + estimateBytes(tl.Schema)
	}
	return t
}

// Estimate estimates the input tokens of a request made of msgs, system
// and tools, before calibration.
func Estimate(msgs []llm.Message, system string, tools []llm.Tool) int {
	t := EstimateFixed(system, tools)
	for _, m := range msgs {
		t += EstimateMessage(m)
	}
	return t
}

// Calibration constants.
const (
	// CalibrationWeight is the weight of a new observation in the
	// moving average of a model's ratio.
	CalibrationWeight = 0.3
	// MinRatio and MaxRatio bound a ratio: an observation outside them
	// is clamped (a provider reporting nonsense must not make den
	// believe the window is twice as large, nor freeze it).
	MinRatio = 0.5
	MaxRatio = 2.0
	// MinCalibrationTokens is the smallest estimate an observation is
	// taken from: on small requests the provider's hidden framing (tool
	// use preambles) dominates and would skew the ratio.
	MinCalibrationTokens = 1000
)

// Calibrator learns, per model, the ratio of the input tokens a
// provider reports to den's estimate of the same request, as an
// exponential moving average: the first observation sets the ratio, each
// later one moves it CalibrationWeight of the way. A model never
// observed has ratio 1. The zero value is ready to use; a nil
// *Calibrator always answers 1. It is safe for concurrent use.
type Calibrator struct {
	mu     sync.Mutex
	ratios map[string]float64
}

// Observe records that a request den estimated at estimated tokens
// (uncalibrated: Use.Raw) was reported as u: input, cache reads and
// cache writes together.
func (c *Calibrator) Observe(model string, estimated int, u llm.Usage) {
	reported := u.InputTokens + u.CacheReadTokens + u.CacheWriteTokens
	if c == nil || estimated < MinCalibrationTokens || reported <= 0 {
		return
	}
	sample := min(max(float64(reported)/float64(estimated), MinRatio), MaxRatio)
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.ratios == nil {
		c.ratios = map[string]float64{}
	}
	r, ok := c.ratios[model]
	if !ok {
		r = sample
	} else {
		r += CalibrationWeight * (sample - r)
	}
	c.ratios[model] = r
}

// Ratio returns the model's ratio of reported to estimated tokens.
func (c *Calibrator) Ratio(model string) float64 {
	if c == nil {
		return 1
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if r, ok := c.ratios[model]; ok {
		return r
	}
	return 1
}

// Apply returns raw, an uncalibrated estimate, scaled by the model's
// ratio and rounded up.
func (c *Calibrator) Apply(model string, raw int) int {
	return scale(raw, c.Ratio(model))
}

func scale(raw int, ratio float64) int { return int(math.Ceil(float64(raw) * ratio)) }
