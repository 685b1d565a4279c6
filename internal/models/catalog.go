package models

// spec is one catalog row: the context window and output limit in
// tokens, image input, thinking, and list prices in USD per million
// tokens (input, output, cache read, cache write).
type spec struct {
	window, output         int
	images, thinking       bool
	in, out, read, written float64
}

// info is the row as den's Info, known in full.
func (s spec) info() Info {
	return Info{
		ContextWindow: s.window, MaxOutput: s.output, Images: s.images, Thinking: s.thinking,
		PriceInput: s.in, PriceOutput: s.out, PriceCacheRead: s.read, PriceCacheWrite: s.written,
		Known: true, PricesKnown: true,
	}
}

// catalog holds models by their API name (dots as the provider writes
// them; lookup reads dots as dashes). Prices are standard-tier list
// prices for short prompts; the config file overrides them.
//
// Checked on 2026-12-01 against the providers' own pages as stored for
// den's search tool, unless a row says otherwise:
//   - Anthropic: platform.claude.com models overview, the per-model
//     overview pages, about-claude/pricing and model-deprecations. Cache
//     write is the 5-minute rate. Sonnet 5.5's cache read is $0.10: two
//     price trackers record Anthropic's cut of 2026-10-07, while the
//     stored Sonnet 5.5 page (older) still says $0.20. Haiku 5.5 is
//     priced by prompt length; the row has the rate for prompts up to
//     100k tokens (5x more above). Fable 5.2's cache rates come from a
//     reseller quoting Anthropic's list price; Opus 4.7's output limit
//     is taken from Opus 4.6 and 4.8 (its own page is not stored).
//     Retired on the Claude API: Sonnet 3.7 (2026-02-19), Sonnet 4 and
//     Opus 4 (2026-06-15), Opus 4.1 (2026-08-05), Sonnet 4.5
//     (2026-11-30); kept for Bedrock, Vertex and old configs.
//   - OpenAI: developers.openai.com models pages (gpt-6.2-sol,
//     gpt-6-luna, the models index) and deprecations. GPT-5.4 and later
//     cost 2x input and 1.5x output above 272k input tokens; rows have
//     the short-prompt rate. GPT-6.2 Astra's cache rates, GPT-6 Astra's,
//     GPT-6.1 Terra's and the GPT-5.x rows come from price trackers
//     quoting the OpenAI pricing page; GPT-5.6's cache-write rate is not
//     in the stored docs (0 here). gpt-5, gpt-5-mini, gpt-5-nano and o3
//     shut down 2026-12-11; o3-mini and o4-mini shut down 2026-10-23;
//     GPT-4o and GPT-4.1 shut down 2027-01-14.
//   - Google: ai.google.dev deprecations and pricing (via trackers
//     quoting it), the Gemini Enterprise model pages for Gemini 4.
//     Gemini 3.8 Flash is at half price until 2026-12-31; the row has
//     the standard rate. Gemini 4 Argon and Carbon rose to $4/$20 on
//     2026-12-01. gemini-2.5-pro and gemini-2.5-flash shut down on
//     2026-12-01. The 2.5 and 2.0 rows are den's earlier values, not
//     re-checked (the stored pricing page lists only a subset).
//   - DeepSeek: api-docs.deepseek.com quick_start/pricing. Prices are
//     the peak-hour rate (off-peak is half). deepseek-chat and
//     deepseek-reasoner (retired 2026-07-24) keep their last prices
//     from a tracker that quotes DeepSeek's page of 2025-12.
//   - Moonshot: platform.kimi.ai pricing (Kimi K3, quoted by a tracker);
//     K2.6 and K2.7 Code prices from a price library, not the stored
//     page (its table did not survive). The kimi-k2 series was retired
//     2026-05-25; its rows keep the 0905 and turbo list prices.
//   - xAI: docs.x.ai model pages (grok-4.7, grok-4.5) and the migration
//     guide; grok-4-0709 and grok-3 retired 2026-05-15. Prompts of 200k
//     tokens or more cost twice as much. xAI states no output limit for
//     grok-4.7; 128k is den's cap.
//   - Groq: console.groq.com models and deprecations (via trackers
//     quoting them). Groq publishes no cache price; the row charges
//     cached tokens as input. llama-3.3-70b-versatile was decommissioned
//     2026-08-16.
var catalog = map[string]spec{
	// Anthropic.
	"claude-fable-5-2":  {1_000_000, 128_000, true, true, 8, 40, 0.2, 10},
	"claude-fable-5-1":  {1_000_000, 128_000, true, true, 10, 50, 0.25, 12.5},
	"claude-fable-5":    {1_000_000, 128_000, true, true, 10, 50, 1, 12.5},
	"claude-opus-5-5":   {1_000_000, 128_000, true, true, 4, 20, 0.2, 5},
	"claude-opus-5":     {1_000_000, 128_000, true, true, 5, 25, 0.5, 6.25},
	"claude-opus-4-8":   {1_000_000, 128_000, true, true, 5, 25, 0.5, 6.25},
	"claude-opus-4-7":   {1_000_000, 128_000, true, true, 5, 25, 0.5, 6.25},
	"claude-opus-4-6":   {1_000_000, 128_000, true, true, 5, 25, 0.5, 6.25},
	"claude-opus-4-5":   {200_000, 64_000, true, true, 5, 25, 0.5, 6.25},
	"claude-opus-4-1":   {200_000, 32_000, true, true, 15, 75, 1.5, 18.75},
	"claude-opus-4":     {200_000, 32_000, true, true, 15, 75, 1.5, 18.75},
	"claude-sonnet-5-5": {1_000_000, 128_000, true, true, 2, 10, 0.1, 2.5},
	"claude-sonnet-5":   {1_000_000, 128_000, true, true, 2, 10, 0.2, 2.5},
	"claude-sonnet-4-6": {1_000_000, 128_000, true, true, 3, 15, 0.3, 3.75},
	"claude-sonnet-4-5": {200_000, 64_000, true, true, 3, 15, 0.3, 3.75},
	"claude-sonnet-4":   {200_000, 64_000, true, true, 3, 15, 0.3, 3.75},
	"claude-3-7-sonnet": {200_000, 64_000, true, true, 3, 15, 0.3, 3.75},
	"claude-haiku-5-5":  {1_000_000, 128_000, true, true, 0.1, 0.5, 0.01, 0.125},
	"claude-haiku-4-5":  {200_000, 64_000, true, true, 1, 5, 0.1, 1.25},
	"claude-3-5-haiku":  {200_000, 8_192, true, false, 0.8, 4, 0.08, 1},

	// OpenAI.
	"gpt-6.2-astra":     {1_050_000, 128_000, true, true, 8, 40, 0.4, 10},
	"gpt-6.2-sol":       {1_050_000, 128_000, true, true, 2, 10, 0.1, 2.5},
	"gpt-6.1-sol":       {1_050_000, 128_000, true, true, 2, 10, 0.1, 2.5},
	"gpt-6.1-terra":     {1_050_000, 128_000, true, true, 1, 5, 0.05, 1.25},
	"gpt-6-astra":       {1_050_000, 128_000, true, true, 10, 50, 1, 12.5},
	"gpt-6-sol":         {1_050_000, 128_000, true, true, 2, 10, 0.2, 2.5},
	"gpt-6-luna":        {1_050_000, 128_000, true, true, 0.1, 0.5, 0.01, 0.125},
	"gpt-5.6-sol":       {1_050_000, 128_000, true, true, 4, 20, 0.4, 0},
	"gpt-5.6-terra":     {1_050_000, 128_000, true, true, 2, 12, 0.2, 0},
	"gpt-5.6-luna":      {1_050_000, 128_000, true, true, 0.2, 1.2, 0.02, 0},
	"gpt-5.5":           {1_050_000, 128_000, true, true, 5, 30, 0.5, 0},
	"gpt-5.4":           {1_050_000, 128_000, true, true, 2.5, 15, 0.25, 0},
	"gpt-5.2":           {400_000, 128_000, true, true, 1.75, 14, 0.175, 0},
	"gpt-5.1":           {400_000, 128_000, true, true, 1.25, 10, 0.125, 0},
	"gpt-5":             {400_000, 128_000, true, true, 1.25, 10, 0.125, 0},
	"gpt-5-mini":        {400_000, 128_000, true, true, 0.25, 2, 0.025, 0},
	"gpt-5-nano":        {400_000, 128_000, true, true, 0.05, 0.4, 0.005, 0},
	"gpt-5-chat":        {128_000, 16_384, true, false, 1.25, 10, 0.125, 0},
	"gpt-4.1":           {1_047_576, 32_768, true, false, 2, 8, 0.5, 0},
	"gpt-4.1-mini":      {1_047_576, 32_768, true, false, 0.4, 1.6, 0.1, 0},
	"gpt-4.1-nano":      {1_047_576, 32_768, true, false, 0.1, 0.4, 0.025, 0},
	"gpt-4o":            {128_000, 16_384, true, false, 2.5, 10, 1.25, 0},
	"gpt-4o-mini":       {128_000, 16_384, true, false, 0.15, 0.6, 0.075, 0},
	"chatgpt-4o-latest": {128_000, 16_384, true, false, 5, 15, 5, 0},
	"o3":                {200_000, 100_000, true, true, 2, 8, 0.5, 0},
	"o3-mini":           {200_000, 100_000, false, true, 1.1, 4.4, 0.55, 0},
	"o4-mini":           {200_000, 100_000, true, true, 1.1, 4.4, 0.275, 0},

	// Google.
	"gemini-4-carbon":       {1_048_576, 65_536, true, true, 4, 20, 0.2, 0},
	"gemini-4-argon":        {1_048_576, 65_536, true, true, 4, 20, 0.2, 0},
	"gemini-4-hydrogen":     {1_048_576, 65_536, true, true, 1.5, 7.5, 0.075, 0},
	"gemini-3.8-flash":      {1_048_576, 65_536, true, true, 1.5, 7.5, 0.15, 0},
	"gemini-2.5-pro":        {1_048_576, 65_536, true, true, 1.25, 10, 0.31, 0},
	"gemini-2.5-flash":      {1_048_576, 65_536, true, true, 0.3, 2.5, 0.075, 0},
	"gemini-2.5-flash-lite": {1_048_576, 65_536, true, true, 0.1, 0.4, 0.025, 0},
	"gemini-2.0-flash":      {1_048_576, 8_192, true, false, 0.1, 0.4, 0.025, 0},

	// DeepSeek.
	"deepseek-flash":    {1_000_000, 384_000, true, true, 0.3, 1.2, 0.006, 0},
	"deepseek-v4-pro":   {1_000_000, 384_000, false, true, 1.32, 3.96, 0.044, 0},
	"deepseek-chat":     {128_000, 8_000, false, false, 0.28, 0.42, 0.028, 0},
	"deepseek-reasoner": {128_000, 64_000, false, true, 0.28, 0.42, 0.028, 0},

	// Moonshot.
	"kimi-k3":          {1_048_576, 131_072, true, true, 3, 15, 0.3, 0},
	"kimi-k2.7-code":   {262_144, 65_536, true, true, 0.95, 4, 0.19, 0},
	"kimi-k2.6":        {262_144, 65_536, true, true, 0.95, 4, 0.16, 0},
	"kimi-k2":          {262_144, 16_384, false, false, 0.6, 2.5, 0.15, 0},
	"kimi-k2-turbo":    {262_144, 16_384, false, false, 1.15, 8, 0.15, 0},
	"kimi-k2-thinking": {262_144, 16_384, false, true, 0.6, 2.5, 0.15, 0},

	// xAI.
	"grok-4.7":    {500_000, 128_000, true, true, 2, 6, 0.5, 0},
	"grok-4.5":    {500_000, 128_000, true, true, 2, 6, 0.5, 0},
	"grok-4.3":    {1_000_000, 131_072, true, true, 1.25, 2.5, 0.2, 0},
	"grok-4":      {256_000, 64_000, true, true, 3, 15, 0.75, 0},
	"grok-3":      {131_072, 16_384, false, false, 3, 15, 0.75, 0},
	"grok-3-mini": {131_072, 16_384, false, true, 0.3, 0.5, 0.075, 0},

	// Groq.
	"gpt-oss-120b":            {131_072, 65_536, false, true, 0.15, 0.6, 0.15, 0},
	"llama-3.3-70b-versatile": {131_072, 32_768, false, false, 0.59, 0.79, 0.59, 0},
}

// aliases name catalog entries by names that no suffix rule derives,
// in lookup's normalized form (lower case, dots as dashes).
var aliases = map[string]string{
	"gemini-flash-latest": "gemini-3.8-flash", // Google's alias for its newest Flash
	"gpt-5-6":             "gpt-5.6-sol",      // OpenAI's alias
	"deepseek-v4-flash":   "deepseek-flash",   // DeepSeek's legacy name, served by V4.1 Flash
	"deepseek-chat-v3-1":  "deepseek-chat",    // OpenRouter's names for what deepseek-chat served
	"deepseek-chat-v3":    "deepseek-chat",
	"deepseek-v3":         "deepseek-chat",
	"deepseek-v3-1":       "deepseek-chat",
	"deepseek-v3-2":       "deepseek-chat",
	"deepseek-r1":         "deepseek-reasoner",
	"kimi-k2-instruct":    "kimi-k2",
}
