package loopguard

import (
	"fmt"
	"strings"
	"sync"
	"time"

	"den.dev/den/internal/llm"
)

// Config sets a Guard's thresholds; a zero field takes its default,
// the numbers of the OpenMinis loop detector.
type Config struct {
	// History is how many recent calls the window detectors look at
	// (default 30).
	History int
	// Warning is when warnings start: the Warning-th identical result
	// in a row, or the Warning-th identical call in the window, gives
	// one, and so does each further multiple (default 10).
	Warning int
	// Critical blocks a read-only (polling) call that returned the
	// same result Critical times in a row (default 20).
	Critical int
	// Breaker blocks any call that returned the same result Breaker
	// times in a row (default 30).
	Breaker int
	// Unknown blocks the Unknown-th call to the same missing tool
	// among the last History calls; a warning comes at Unknown/2
	// (default 10).
	Unknown int
	// Ignore lists top-level argument fields that do not change what a
	// call does (default: tool_title).
	Ignore []string
	// Poll says whether a call only observes (default IsPoll).
	Poll func(call *llm.ToolCall) bool
}

// The defaults.
const (
	DefaultHistory  = 30
	DefaultWarning  = 10
	DefaultCritical = 20
	DefaultBreaker  = 30
	DefaultUnknown  = 10
)

// Guard watches one run's calls. Make it with New.
type Guard struct {
	cfg    Config
	now    time.Time // for telling epoch numbers from others
	ignore map[string]bool

	mu      sync.Mutex
	window  []*record          // the last History calls, oldest first
	streaks map[string]*streak // by call key
	warned  map[string]int     // window warning level reached, by key
}

type record struct {
	id, name, key string
	known, poll   bool
	done          bool
	result        string // the result hash, once done
}

// streak is how often a call returned the same result since the last
// progress.
type streak struct {
	last  string // the result hash
	count int
}

// New returns a Guard for one run.
func New(cfg Config) *Guard {
	def := func(v *int, d int) {
		if *v <= 0 {
			*v = d
		}
	}
	def(&cfg.History, DefaultHistory)
	def(&cfg.Warning, DefaultWarning)
	def(&cfg.Critical, DefaultCritical)
	def(&cfg.Breaker, DefaultBreaker)
	def(&cfg.Unknown, DefaultUnknown)
	if cfg.Ignore == nil {
		cfg.Ignore = []string{"tool_title"}
	}
	if cfg.Poll == nil {
		cfg.Poll = IsPoll
	}
	g := &Guard{cfg: cfg, now: time.Now(), ignore: map[string]bool{},
		streaks: map[string]*streak{}, warned: map[string]int{}}
	for _, k := range cfg.Ignore {
		g.ignore[k] = true
	}
	return g
}

// BlockedPrefix starts the text of every blocked call's result.
const BlockedPrefix = "[LOOP BLOCKED]"

// Before is called before call runs; known says whether its tool
// exists. When block is true the call must not run and is answered
// with Blocked(call, warning). Otherwise a non-empty warning is to be
// appended to the call's result (see Annotate).
func (g *Guard) Before(call *llm.ToolCall, known bool) (block bool, warning string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	rec := &record{id: call.ID, name: call.Name, key: callKey(call, g.ignore), known: known}
	if known {
		rec.poll = g.cfg.Poll(call)
	}
	g.push(rec)
	if !known {
		n := 0
		for _, r := range g.window {
			if !r.known && r.name == call.Name {
				n++
			}
		}
		switch {
		case n >= g.cfg.Unknown:
			return true, fmt.Sprintf("You called the tool %q %d times, and it does not exist. Stop retrying that missing tool: use one of the available tools, or tell the user what you cannot do.", call.Name, n)
		case n == max(g.cfg.Unknown/2, 2):
			return false, fmt.Sprintf("[LOOP WARNING] You called the tool %q %d times, and it does not exist. Stop retrying it; use one of the available tools instead. After %d calls it will be blocked.", call.Name, n, g.cfg.Unknown)
		}
		return false, ""
	}
	s := g.streaks[rec.key]
	if s == nil {
		return false, ""
	}
	switch {
	case s.count >= g.cfg.Breaker:
		return true, fmt.Sprintf("You made this %s call %d times in a row and got the same result every time (%s). It was not run again. Repeating it will not change the outcome: change your approach, or stop and report the task as failed with what you found.", call.Name, s.count, describe(call))
	case rec.poll && s.count >= g.cfg.Critical:
		return true, fmt.Sprintf("You checked the same thing with %s %d times in a row and nothing changed (%s). It was not run again. Stop polling: wait much longer in one call, look at a different signal (an error log, the process's state), or stop and report that it is not finishing.", call.Name, s.count, describe(call))
	}
	return false, ""
}

// After is told the result of a call that ran (not of a blocked one).
// A non-empty warning is to be appended to the result (see Annotate).
func (g *Guard) After(call *llm.ToolCall, result llm.ToolResult) (warning string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	key := callKey(call, g.ignore)
	var rec *record
	for i := len(g.window) - 1; i >= 0; i-- {
		if r := g.window[i]; !r.done && r.id == call.ID && r.key == key {
			rec = r
			break
		}
	}
	if rec == nil { // After without Before: a known tool
		rec = &record{id: call.ID, name: call.Name, key: key, known: true, poll: g.cfg.Poll(call)}
		g.push(rec)
	}
	rec.done = true
	rec.result = g.resultHash(call, result)
	if !rec.known {
		return ""
	}

	s := g.streaks[key]
	if s == nil {
		s = &streak{}
		g.streaks[key] = s
	}
	switch {
	case s.last == rec.result:
		// The same again (after progress elsewhere, count is 0 and the
		// streak starts over).
		s.count++
	default:
		s.last, s.count = rec.result, 1
		if !rec.poll {
			// Something new happened: repeats of other calls start over.
			for k, o := range g.streaks {
				if k != key {
					o.count = 0
				}
			}
		}
	}

	same, distinct := g.windowCount(key)
	w, limit := g.cfg.Warning, g.cfg.Breaker
	if rec.poll {
		limit = min(g.cfg.Critical, g.cfg.Breaker)
	}
	switch {
	case s.count <= limit && (s.count >= w && s.count%w == 0 || s.count == limit):
		g.warned[key] = max(g.warned[key], same/w)
		return g.repeatWarning(call, s.count, limit, rec.poll)
	case same >= w && distinct*2 <= same && same/w > g.warned[key]:
		g.warned[key] = same / w
		return fmt.Sprintf("[LOOP WARNING] You made this %s call with identical arguments %d times in your last %d calls (%s), and its results keep repeating. Calling it again will not change the outcome: change your approach, or if you cannot make progress, stop and report the task as failed with what you found.",
			call.Name, same, len(g.window), describe(call))
	}
	return ""
}

// repeatWarning is the warning for the n-th identical result in a row;
// limit is where the call gets blocked.
func (g *Guard) repeatWarning(call *llm.ToolCall, n, limit int, poll bool) string {
	var what, advice string
	if poll {
		what = fmt.Sprintf("You checked the same thing with %s %d times in a row and nothing changed (%s).", call.Name, n, describe(call))
		advice = "Stop polling and either increase the wait time (one longer sleep, or wait for the condition in a single command) or report failure."
	} else {
		what = fmt.Sprintf("You made this %s call %d times in a row and got the same result every time (%s).", call.Name, n, describe(call))
		advice = "Repeating it will not change the outcome: change your approach, or if you cannot make progress, stop and report the task as failed."
	}
	if n >= limit {
		return "[LOOP WARNING — FINAL] " + what + " The next identical call will not run. " + advice
	}
	return fmt.Sprintf("[LOOP WARNING] %s %s After %d identical results the call will be blocked.", what, advice, limit)
}

// push adds a record, dropping the oldest beyond History and
// forgetting calls no longer in the window.
func (g *Guard) push(r *record) {
	g.window = append(g.window, r)
	for len(g.window) > g.cfg.History {
		old := g.window[0]
		g.window[0] = nil
		g.window = g.window[1:]
		if !g.inWindow(old.key) {
			delete(g.streaks, old.key)
			delete(g.warned, old.key)
		}
	}
}

func (g *Guard) inWindow(key string) bool {
	for _, r := range g.window {
		if r.key == key {
			return true
		}
	}
	return false
}

// windowCount counts the finished calls with key in the window, and
// their distinct results.
func (g *Guard) windowCount(key string) (same, distinct int) {
	seen := map[string]bool{}
	for _, r := range g.window {
		if r.done && r.key == key {
			same++
			if !seen[r.result] {
				seen[r.result] = true
				distinct++
			}
		}
	}
	return same, distinct
}

// Blocked answers a call that was not run because it loops; reason is
// what Before said. The result names the call, so that call and result
// stay paired in history.
func Blocked(call *llm.ToolCall, reason string) llm.ToolResult {
	if !strings.HasPrefix(reason, BlockedPrefix) {
		reason = BlockedPrefix + " " + reason
	}
	return llm.ToolResult{CallID: call.ID, Name: call.Name, IsError: true,
		Content: []llm.Part{&llm.Text{Text: reason}}}
}

// Annotate returns r with warning appended as a text part, after a
// blank line; an empty warning leaves r as it is. r's parts are not
// modified.
func Annotate(r llm.ToolResult, warning string) llm.ToolResult {
	if warning == "" {
		return r
	}
	r.Content = append(append([]llm.Part(nil), r.Content...), &llm.Text{Text: "\n\n" + warning})
	return r
}

// describe shows a call briefly: a shell command or a path, else its
// arguments.
func describe(call *llm.ToolCall) string {
	s := strings.TrimSpace(string(call.Input))
	for _, f := range []string{"command", "path", "url"} {
		if v, ok := stringField(call.Input, f); ok {
			s = f + ": " + v
			break
		}
	}
	s = strings.Join(strings.Fields(s), " ")
	if r := []rune(s); len(r) > 100 {
		s = string(r[:100]) + "…"
	}
	return s
}
