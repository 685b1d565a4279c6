package ctxwin

// Thresholds are the token levels, for one model, at which the request
// builder acts. They are compared with calibrated estimates of whole
// requests (system prompt, tools and messages) and satisfy
// OffloadTarget ≤ Offload < Compact < Limit < Window and
// CompactTarget ≤ OffloadTarget.
type Thresholds struct {
	Tier      string // "tiny", "small", "medium" or "large"
	Window    int    // the model's context window
	MaxOutput int    // the model's output limit
	// Offload: above it, old large tool outputs are offloaded, oldest
	// first, until the request is at most OffloadTarget. Above Compact,
	// recent ones are too (all but the last message's), before the loop
	// considers compacting.
	Offload, OffloadTarget int
	// Compact: above it (after offloading) the loop compacts, and the
	// compaction keeps as much recent history as lets the request fall
	// to OffloadTarget (with the last three user turns) or, when those
	// are too large, to CompactTarget.
	Compact, CompactTarget int
	// Limit is the largest request that may be sent: the rest of the
	// window is room for the answer. Above it, even the last message's
	// outputs are offloaded.
	Limit int
	// SummaryTokens is the output limit of a summary call.
	SummaryTokens int
}

// DefaultWindow is assumed of a model whose window is unknown (≤ 0), as
// models assumes of a model it does not know.
const DefaultWindow = 128_000

// MaxCompactions bounds the compactions of one run; the loop counts
// them. Past it, a request above Limit stops the run.
const MaxCompactions = 3

// The window sizes that separate the tiers.
const (
	smallWindow  = 32_000
	mediumWindow = 64_000
	largeWindow  = 128_000
)

// Budget returns the thresholds of a model with the given context
// window and output limit (≤ 0: unknown). The tiers follow OpenMinis'
// ContextPolicy (offload at, offload target and compact at, for windows
// of 64K and more), except that every tier offloads and compacts on its
// own, since den never asks the user to act:
//
//	tier    window      offload at  offload to  compact at  compact to  limit (output room)
//	tiny    < 32K       50% W       35% W       70% W       35% W       W − W/8
//	small   32K–64K     W − 10K     W − 15K     W − 6K      W/2         W − 2K
//	medium  64K–128K    W − 20K     W − 30K     W − 10K     W/2         W − 4K
//	large   ≥ 128K      W − 40K     W − 60K     W − 20K     W/2         W − 8K
//
// The output room below the limit is at most maxOutput. A 200K window
// thus offloads at 160K (down to 140K), compacts at 180K (keeping
// recent history worth at most 140K, or 100K when the last three user
// turns do not fit in 140K) and never sends more than 192K.
// SummaryTokens is W/16 clamped to [1024, 8192] and to maxOutput.
func Budget(window, maxOutput int) Thresholds {
	w := window
	if w <= 0 {
		w = DefaultWindow
	}
	t := Thresholds{Window: w, MaxOutput: maxOutput}
	var room int
	switch {
	case w < smallWindow:
		t.Tier = "tiny"
		t.Offload, t.OffloadTarget, t.Compact, t.CompactTarget = w/2, w*35/100, w*70/100, w*35/100
		room = w / 8
	case w < mediumWindow:
		t.Tier = "small"
		t.Offload, t.OffloadTarget, t.Compact, t.CompactTarget = w-10_000, w-15_000, w-6_000, w/2
		room = 2_000
	case w < largeWindow:
		t.Tier = "medium"
		t.Offload, t.OffloadTarget, t.Compact, t.CompactTarget = w-20_000, w-30_000, w-10_000, w/2
		room = 4_000
	default:
		t.Tier = "large"
		t.Offload, t.OffloadTarget, t.Compact, t.CompactTarget = w-40_000, w-60_000, w-20_000, w/2
		room = 8_000
	}
	if maxOutput > 0 {
		room = min(room, maxOutput)
	}
	t.Limit = w - room
	t.Compact = min(t.Compact, t.Limit-1)
	t.SummaryTokens = min(max(w/16, 1024), 8192)
	if maxOutput > 0 {
		t.SummaryTokens = min(t.SummaryTokens, maxOutput)
	}
	return t
}

// Action is what the loop does with a request it has built.
type Action int

// The actions.
const (
	// Send: the request fits; send it.
	Send Action = iota
	// CompactFirst: compact, then build the request again.
	CompactFirst
	// Stop: the request is above Limit and no compaction is left: end
	// the run (resumable) rather than send a request that would fail.
	Stop
)

// Decide says what to do with a request of the given calibrated
// estimate, when the run has already compacted compactions times.
func (t Thresholds) Decide(estimated, compactions int) Action {
	switch {
	case estimated > t.Compact && compactions < MaxCompactions:
		return CompactFirst
	case estimated > t.Limit:
		return Stop
	}
	return Send
}

// The bounds of a request's output limit.
const (
	MinOutputTokens = 1024
	MaxOutputTokens = 128_000
	// DefaultOutputTokens is the output limit of a model whose limit is
	// unknown.
	DefaultOutputTokens = 8192
)

// MaxTokens returns the output limit for a request of the given
// calibrated estimate: the model's limit, cut to the room left in the
// window, within [MinOutputTokens, MaxOutputTokens].
func (t Thresholds) MaxTokens(estimated int) int {
	out := t.MaxOutput
	if out <= 0 {
		out = DefaultOutputTokens
	}
	out = min(out, t.Window-estimated, MaxOutputTokens)
	return max(out, MinOutputTokens)
}
