// Package models knows den's models: a built-in catalog (context window,
// output limit, modalities, thinking support, prices) that the config
// file can override, the built-in providers and the environment
// variables holding their keys, and the resolution of a model
// reference ("provider/model", a group's name, or a comma-separated
// chain) into concrete targets.
//
// # Names
//
// Users and providers write one model in many ways: dated snapshots
// (claude-sonnet-4-5-20250929, gpt-5-2025-08-07,
// gemini-2.5-flash-preview-05-20), aliases (claude-sonnet-4-0,
// grok-4-latest, kimi-k2-0905-preview) and gateway ids
// (anthropic/claude-sonnet-4.5, moonshotai/kimi-k2:free). A name finds
// its catalog entry when, after a gateway's "vendor/" prefix and any
// ":variant", "@version" or "[…]" tail are dropped and dots read as
// dashes, it equals a catalog name or an alias, or does so once
// recognised suffixes are dropped from its end: a date (20250929,
// 2025-08-07, 05-20, 09-2025), a snapshot number of three or four
// digits (0709, 001) or an alias word (latest, preview, exp, thinking,
// 0). Nothing else is dropped, so a variant den does not list —
// gpt-5-codex, gpt-6-luna-fast, claude-sonnet-4-7 — stays unknown
// rather than borrowing a sibling's window and prices.
//
// # Unknown models
//
// A model the catalog does not know gets a conservative 128k-token
// window and 8k output tokens, no thinking, image input when its
// provider takes images, and no prices: Info.Known and Info.PricesKnown
// are false and its Cost is 0. The config's [models."provider/model"] table fills
// in what den cannot know; Resolver.Explain says, for a person, what
// was assumed and which keys to set.
//
// # Listing
//
// Resolver.Providers and Resolver.Known list what den knows, for a
// settings page: every provider (built-in or configured) with where its
// key comes from and whether den can call it, never the key; every
// catalog model under the built-in provider that serves it, and every
// ref the config names.
//
// The catalog is package data, never written after start; a Resolver is
// safe for concurrent use as long as its Config is not changed.
package models
