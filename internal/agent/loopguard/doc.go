// Package loopguard notices when a run's tool calls go round in
// circles, warns the model, and finally refuses to run the call.
//
// A Guard belongs to one run. The loop asks it before each call
// (Before) and tells it each result (After):
//
//	block, warning := g.Before(call, known)
//	if block {
//		result = loopguard.Blocked(call, warning) // not run
//	} else {
//		result = run(call)
//		result = loopguard.Annotate(result, warning)
//		result = loopguard.Annotate(result, g.After(call, result))
//	}
//
// # Detectors, in priority order
//
// Calls are identified by a key: the tool's name and its arguments as
// JSON with keys sorted at every level and UI-only fields (tool_title)
// removed, so reordered keys or another title make the same call.
// Results are compared by a hash of their normalised text: timestamps,
// durations, UUIDs and long hex ids, epoch numbers near the present,
// process ids in ps-like output and den's offload file names are
// replaced by placeholders, so that the clock ticking is not progress.
//
//  1. Missing tool: the Unknown-th call (default 10) to the same
//     missing tool among the last History calls is blocked; a warning
//     comes at half of it.
//  2. Breaker: a call that returned the same result Breaker times in a
//     row (default 30) is blocked.
//  3. Polling without progress: a read-only call (file_read, or a shell
//     command made only of observers such as cat, tail, ps, sleep, ls,
//     grep, curl without a body) that returned the same result Critical
//     times in a row (default 20) is blocked; a warning comes at
//     Warning (default 10).
//  4. Repeats in the window: the Warning-th identical call among the
//     last History calls gives a warning, whatever its results were,
//     unless more than half of those results were new (a counter or a
//     growing log is progress).
//
// "In a row" counts the results of one call since the last progress:
// a call returns something it never returned before, or a call that is
// not read-only (a write, an edit, a build) does something new. Reading
// other files in between is not progress. Warnings for one call come at
// most once per level (10, 20, …), the last one saying that the next
// identical call will not run. A blocked call stays blocked until
// progress is made.
//
// # Concurrency
//
// A Guard is safe for concurrent use, but its answers depend on the
// order of calls: the loop should call Before in the model's call order
// and After in the same order, once the results are in.
package loopguard
