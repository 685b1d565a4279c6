// Package metrics is den's GET /metrics: a handful of counters, gauges
// and one histogram about turns, tools, models, approvals and the
// daemon's load, in the Prometheus text exposition format (version
// 0.0.4).
//
// The format is written by hand (expose.go) rather than with the
// official client library: den needs a dozen series, and
// prometheus/client_golang would bring in many modules (protobuf among
// them) and their memory to a daemon whose idle resident size budget is
// 30 MB.
//
// # Where the numbers come from
//
// The counters are fed by den's events: the daemon runs one subscriber
// to every session's stored events and hands each to Observe, so every
// face's sessions count, and other den processes' (den run in a
// terminal) too, as the daemon's hub reads their events. The counters
// start at zero when the daemon starts, as Prometheus counters do
// after a restart. The gauges are read at scrape time through the
// callbacks in Gauges.
//
// # Bounds
//
// Memory stays bounded whatever the events say: each label of a family
// takes at most MaxLabelValues distinct values, after which new ones
// are counted as "other"; the tool calls waiting for their result (to
// name the tool of an error) and the sessions' last statuses (to tell
// a new turn from one resuming after an approval) are kept for at most
// the last few thousand.
//
// # Concurrency
//
// Observe and the handler may be called from any goroutine; a scrape
// renders under the collector's lock into a buffer and writes it after
// releasing it, so a slow scraper never holds up Observe. The Gauges'
// callbacks are called outside that lock.
package metrics
