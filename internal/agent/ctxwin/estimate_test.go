package ctxwin

import (
	"bytes"
	"encoding/json"
	"image"
	"image/png"
	"math"
	"strings"
	"testing"

	"den.dev/den/internal/llm"
)

func pngOf(t *testing.T, w, h int) []byte {
	t.Helper()
	var b bytes.Buffer
	if err := png.Encode(&b, image.NewGray(image.Rect(0, 0, w, h))); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

func TestEstimateText(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want int
	}{
		{"", 0},
		{"abcd", 1},
		{"abcde", 2},
		{strings.Repeat("a", 4000), 1000},
		{"日本語", 3},    // 9 bytes + 3 characters
		{"привет", 5}, // 12 bytes + 6 characters = 18 → 4.5
		{"héllo", 2},  // 6 bytes + 1
		{"🙂🙂🙂🙂", 5},   // 16 bytes + 4
	} {
		if got := EstimateText(tc.in); got != tc.want {
			t.Errorf("EstimateText(%q) = %d, want %d", tc.in, got, tc.want)
		}
	}
}

func TestEstimateImage(t *testing.T) {
	for _, tc := range []struct {
		name string
		data []byte
		want int
	}{
		{"1000x1000", pngOf(t, 1000, 1000), 1334},
		{"200x100: 27, below the floor", pngOf(t, 200, 100), ImageMinTokens},
		{"400x300", pngOf(t, 400, 300), 160},
		{"4000x3000 scaled to 1568x1176, capped", pngOf(t, 4000, 3000), ImageMaxTokens},
		{"unreadable", []byte("RIFF....WEBPVP8 "), ImageMaxTokens},
	} {
		if got := EstimateImage(&llm.Image{MediaType: "image/png", Data: tc.data}); got != tc.want {
			t.Errorf("%s: %d tokens, want %d", tc.name, got, tc.want)
		}
	}
}

func TestEstimate(t *testing.T) {
	input := json.RawMessage(`{"path":"/workspace/a.txt"}`) // 28 bytes → 7
	msgs := []llm.Message{
		{Role: llm.User, Parts: []llm.Part{&llm.Text{Text: "abcdefgh"}}},                                  // 4 + 4 + 2
		{Role: llm.Assistant, Parts: []llm.Part{&llm.ToolCall{ID: "x", Name: "file_read", Input: input}}}, // 4 + 4 + 3 + 7
		{Role: llm.User, Parts: []llm.Part{&llm.ToolResult{CallID: "x", Name: "file_read",
			Content: []llm.Part{&llm.Text{Text: strings.Repeat("z", 400)}}}}}, // 4 + 4 + 3 + (4 + 100)
	}
	tools := []llm.Tool{{Name: "file_read", Description: "Read a file.", Schema: json.RawMessage(`{"type":"object"}`)}} // 10 + 3 + 3 + 5
	got := Estimate(msgs, "You are den.", tools)                                                                        // 4 + 3
	want := 10 + 18 + 115 + 21 + 7
	if got != want {
		t.Errorf("Estimate = %d, want %d", got, want)
	}
	// A 256 KB tool output is about 64K tokens, as on real tokenizers
	// (3.5–4.5 bytes a token for logs and code).
	big := EstimatePart(&llm.Text{Text: strings.Repeat("log line 17: ok\n", 16384)})
	if big < 58_000 || big > 75_000 {
		t.Errorf("256 KB of text: %d tokens", big)
	}
	// Thinking counts text and opaque payload, not the signature.
	th := EstimatePart(&llm.Thinking{Text: "abcd", Signature: strings.Repeat("s", 1000), Opaque: json.RawMessage(`"abcdefg"`)})
	if th != PartOverhead+1+3 {
		t.Errorf("thinking: %d", th)
	}
}

func TestCalibratorConverges(t *testing.T) {
	var c Calibrator
	if r := c.Ratio("m"); r != 1 {
		t.Fatalf("unobserved ratio %v, want 1", r)
	}
	// The provider counts 30% more than den estimates, with noise.
	for i := range 30 {
		est := 20_000 + 1000*i
		noise := []float64{1.25, 1.35, 1.28, 1.32}[i%4]
		c.Observe("m", est, llm.Usage{InputTokens: int64(float64(est) * noise * 0.2), CacheReadTokens: int64(float64(est) * noise * 0.8)})
	}
	if r := c.Ratio("m"); math.Abs(r-1.3) > 0.03 {
		t.Errorf("ratio %v after 30 observations, want 1.3 ± 0.03", r)
	}
	// It follows a change (a new tokenizer behind the same name).
	for range 15 {
		c.Observe("m", 50_000, llm.Usage{InputTokens: 40_000})
	}
	if r := c.Ratio("m"); math.Abs(r-0.8) > 0.01 {
		t.Errorf("ratio %v after the change, want 0.8 ± 0.01", r)
	}
	if got := c.Apply("m", 1000); got < 795 || got > 810 {
		t.Errorf("Apply(1000) = %d", got)
	}
	// Other models are unaffected; absurd reports are clamped; small
	// requests are ignored.
	if r := c.Ratio("other"); r != 1 {
		t.Errorf("other model: %v", r)
	}
	c.Observe("wild", 10_000, llm.Usage{InputTokens: 1_000_000})
	if r := c.Ratio("wild"); r != MaxRatio {
		t.Errorf("clamped high: %v", r)
	}
	c.Observe("tiny", 10_000, llm.Usage{InputTokens: 10})
	if r := c.Ratio("tiny"); r != MinRatio {
		t.Errorf("clamped low: %v", r)
	}
	c.Observe("small", MinCalibrationTokens-1, llm.Usage{InputTokens: 5000})
	if r := c.Ratio("small"); r != 1 {
		t.Errorf("small request counted: %v", r)
	}
	var nilc *Calibrator
	nilc.Observe("m", 10_000, llm.Usage{InputTokens: 20_000})
	if r := nilc.Ratio("m"); r != 1 {
		t.Errorf("nil calibrator: %v", r)
	}
}
