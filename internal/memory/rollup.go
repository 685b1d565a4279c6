package memory

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"sort"
	"strings"
	"time"

	"den.dev/den/internal/hostfs"
)

// Archive is the folder rolled-up logs move to, inside the memory
// folder: still there to read and search, out of the way.
const Archive = "archive"

// RollupAge is how old a log must be to be rolled up.
const RollupAge = 7 * 24 * time.Hour

// Limits of one rollup.
const (
	maxRollupLogs   = 60 << 10 // characters of logs sent in one request
	maxRollupGlobal = 24 << 10 // characters of GLOBAL.md sent with them
)

// RollupSystem is the system prompt of a rollup request.
const RollupSystem = `You maintain the long-term memory of an AI agent: GLOBAL.md, a list of lasting facts about its user and their work (who they are, preferences, people, projects, decisions, conventions). You are given GLOBAL.md as it is and daily logs the agent wrote. Each log entry starts with a line like "[2026-11-20 14:03 · session 01abc]".

Answer with the facts from the logs that are worth keeping for months and are not already in GLOBAL.md, one per line, each as:
- <the fact, standing alone> (<date of its entry>, session <session id>)
Merge duplicates into one line with the latest date. Leave out what only mattered that day (passing tasks, greetings, tool output), anything already in GLOBAL.md, and secrets (passwords, keys, tokens). Write in the language of the logs. If nothing is worth keeping, answer with the single line NONE.`

// Rolled is what a rollup did.
type Rolled struct {
	Logs  []string // the logs rolled up (now in archive/)
	Facts []string // the lines added to GLOBAL.md
}

// Model answers one request: the system prompt and the user's prompt.
type Model func(ctx context.Context, system, prompt string) (string, error)

// Rollup merges the daily logs older than RollupAge into GLOBAL.md: the
// model picks the lasting facts (with the date and session of each),
// which are appended to GLOBAL.md under a heading with today's date,
// and the logs move to archive/. Logs are sent oldest first, as many as
// fit one request; the rest wait for the next rollup.
func (b *Book) Rollup(ctx context.Context, model Model, now time.Time) (Rolled, error) {
	var out Rolled
	d, err := b.open()
	if err != nil {
		return out, err
	}
	defer d.Close()
	entries, _, err := d.List(MaxFiles)
	if err != nil {
		return out, fmt.Errorf("memory: list: %w", err)
	}
	cutoff := now.In(b.loc()).Add(-RollupAge).Format(dayLayout)
	var old []string
	for _, e := range entries {
		if day := logDay(e.Name); day != "" && day < cutoff && e.Mode.IsRegular() {
			old = append(old, e.Name)
		}
	}
	sort.Strings(old)
	if len(old) == 0 {
		return out, nil
	}
	global, err := b.read(d, Global)
	if err != nil {
		return out, fmt.Errorf("memory: %s: %w", Global, err)
	}
	var logs strings.Builder
	for _, name := range old {
		text, err := b.read(d, name)
		if err != nil {
			return out, fmt.Errorf("memory: %s: %w", name, err)
		}
		part := "## " + name + "\n" + rollupView(name, text, b.loc()) + "\n\n"
		if logs.Len() > 0 && logs.Len()+len(part) > maxRollupLogs {
			break
		}
		logs.WriteString(clipTo(part, maxRollupLogs))
		out.Logs = append(out.Logs, name)
	}
	prompt := "# GLOBAL.md as it is\n\n" + clipTo(global, maxRollupGlobal) + "\n\n# Daily logs to merge\n\n" + logs.String()
	answer, err := model(ctx, RollupSystem, prompt)
	if err != nil {
		return Rolled{}, fmt.Errorf("memory: rollup: %w", err)
	}
	out.Facts = facts(answer)

	b.mu.Lock()
	defer b.mu.Unlock()
	if len(out.Facts) > 0 {
		// Read again under the lock: the agent may have written since.
		global, err := b.read(d, Global)
		if err != nil {
			return Rolled{}, fmt.Errorf("memory: %s: %w", Global, err)
		}
		var g strings.Builder
		if s := strings.TrimRight(global, "\n"); s != "" {
			g.WriteString(s + "\n\n")
		}
		fmt.Fprintf(&g, "## From the daily logs (rolled up %s)\n\n%s\n", now.In(b.loc()).Format(dayLayout), strings.Join(out.Facts, "\n"))
		if err := d.WriteFile(Global, []byte(g.String()), 0o644, b.Owner, false); err != nil {
			return Rolled{}, fmt.Errorf("memory: %w", err)
		}
	}
	if err := b.archive(d, out.Logs); err != nil {
		return out, err
	}
	if _, err := b.Sync(ctx); err != nil {
		return out, err
	}
	return out, nil
}

// archive moves logs into archive/: a copy written there, then the log
// removed.
func (b *Book) archive(d *hostfs.Dir, logs []string) error {
	a, _, err := d.Mkdir(Archive, 0o755, b.Owner)
	if err != nil {
		return fmt.Errorf("memory: %s: %w", Archive, err)
	}
	defer a.Close()
	for _, name := range logs {
		text, err := b.read(d, name)
		if err != nil {
			return fmt.Errorf("memory: %s: %w", name, err)
		}
		// A log of the same day already archived (rolled up, then
		// written to again) gets the new entries after its own.
		if old, err := a.ReadFileAs(name, MaxFile, b.As); err == nil {
			text = strings.TrimRight(string(old), "\n") + "\n\n" + text
		} else if !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("memory: %s/%s: %w", Archive, name, err)
		}
		if err := a.WriteFile(name, []byte(text), 0o644, b.Owner, false); err != nil {
			return fmt.Errorf("memory: %w", err)
		}
		if err := d.Remove(name); err != nil {
			return fmt.Errorf("memory: %w", err)
		}
	}
	return nil
}

// rollupView is a log as the rollup model reads it: each entry under a
// line with its date, time and session.
func rollupView(name, text string, loc *time.Location) string {
	var b strings.Builder
	for _, e := range parse(name, text) {
		stamp := e.Day
		if !e.At.IsZero() {
			stamp = e.At.In(loc).Format("2006-01-02 15:04")
		}
		if e.Session != "" {
			stamp += " · session " + e.Session
		}
		fmt.Fprintf(&b, "[%s]\n%s\n\n", stamp, e.Body)
	}
	return strings.TrimSpace(b.String())
}

// facts are the answer's fact lines ("- ..."), each one line.
func facts(answer string) []string {
	var out []string
	for _, line := range strings.Split(answer, "\n") {
		line = strings.TrimSpace(line)
		if strings.HasPrefix(line, "- ") && len(line) > 3 {
			out = append(out, defang(line))
		}
	}
	return out
}
