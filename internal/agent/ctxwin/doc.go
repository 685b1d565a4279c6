// Package ctxwin decides what of a session's stored history is sent to
// the model each turn, so that a session of any length fits the
// model's context window with no action from the user, while the stored
// history is never rewritten.
//
// # Sent versus stored
//
// The store keeps every message, whole, forever (a tree; the history is
// the path from the root to the head). A request is built from that
// path each turn by Window.Build, and differs from it in two ways only:
//
//   - Offloading. A large tool output (at least MinOffloadBytes, text or
//     image) is written once to a file in the computer's /den/offloads
//     through a Saver, and from then on every request carries in its
//     place a stub: "[tool output of N bytes saved to
//     /den/offloads/<tool>-<message id>-<part>.txt; read it with file_read
//     if needed]". The Window remembers what it saved (by message id,
//     part and content index), so an output is saved once per session
//     and its stub, once used, is used in every later request, byte for
//     byte: the prefix the provider caches stays the same. File names are
//     derived from the message, so a new process that offloads the same
//     output writes the same file and shows the same stub.
//   - Compaction. When offloading is not enough, Window.Compact asks the
//     model for a summary of the oldest part of the history. The loop
//     stores the Summary beside the history, keyed by the id of the last
//     message it covers (its anchor). Build then sends the latest summary
//     whose anchor is on the current path (a summary of another branch
//     is ignored) as a user message, "[Summary of the conversation so
//     far] …", followed by an assistant acknowledgement when the next
//     message is the user's (roles alternate), then the messages after
//     the anchor. A later compaction merges the previous summary into
//     the new one, so the latest summary always covers everything from
//     the root to its anchor.
//
// # Estimates and tiers
//
// There is no tokenizer. Estimate counts a token per 4 bytes of text
// (plus one per non-ASCII character), a fixed overhead per message,
// part and tool, and an image's pixels / 750 (85 to 1600). A Calibrator
// learns per model the ratio of the provider's reported input tokens to
// that estimate (a moving average, clamped to [0.5, 2]), and every
// threshold is compared with the calibrated estimate.
//
// Budget turns a model's window and output limit into Thresholds, by
// tier (see Budget for the table; a 200K window offloads above 160K,
// compacts above 180K, never sends more than 192K).
//
// # Guarantees
//
//   - Build never modifies the history it is given, and the messages it
//     returns are valid wherever the stored history was: every tool
//     call is followed by its results, roles alternate.
//   - A stub appears only after its output was saved; a Saver error is
//     returned, not hidden.
//   - Compact never separates a tool call from its result, and keeps the
//     last KeepUserTurns (3) user turns verbatim whenever they fit in the
//     offload target; when they do not (a long run of tool calls after
//     one prompt), it keeps the longest recent stretch that fits in the
//     compact target.
//   - When a summary call fails on its input (a context overflow, an
//     empty answer), the input is halved and each half summarized, and
//     so on, then the summaries are merged.
//   - The loop compacts at most MaxCompactions (3) times per run;
//     Thresholds.Decide says when to compact, send, or stop because the
//     request would exceed Limit.
//
// # Concurrency
//
// A Window and a Calibrator are safe for concurrent use. A session's
// loop owns its Window; Compact holds the Window for the length of its
// summary calls.
//
// The package imports only llm among den's packages.
package ctxwin
