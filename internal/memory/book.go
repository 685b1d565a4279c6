package memory

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"sort"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"den.dev/den/internal/hostfs"
	"den.dev/den/internal/store"
)

// Index is what memory keeps in den's store.
type Index interface {
	MemoryFiles(ctx context.Context, agent string) (map[string]store.MemoryFile, error)
	IndexMemoryFile(ctx context.Context, agent, name string, f store.MemoryFile, entries []store.MemoryEntry) error
	ForgetMemoryFile(ctx context.Context, agent, name string) error
	SearchMemory(ctx context.Context, agent string, q store.MemoryQuery) ([]store.MemoryHit, error)
	MemoryFilesWith(ctx context.Context, agent, session string, messages []string) ([]string, error)
}

// Limits of what den reads and writes.
const (
	// MaxFile bounds a memory file den reads; a larger one is left out
	// of the index and the prompt, and said so.
	MaxFile = 4 << 20
	// MaxFiles bounds the files of a memory folder den indexes.
	MaxFiles = 5000
	// MaxWrite bounds one memory_write.
	MaxWrite = 16 << 10
	// maxSummary bounds a compaction summary kept in a log.
	maxSummary = 16 << 10
)

// ErrTooLong is Write's error for an entry over MaxWrite; ErrEmpty for
// one with no text.
var (
	ErrTooLong = errors.New("memory: the entry is too long")
	ErrEmpty   = errors.New("memory: the entry is empty")
)

// Book is one agent's memory.
type Book struct {
	Agent string
	// Dir is the host side of the agent's /den/memory.
	Dir string
	// Owner is whom files den writes there belong to (the computer's
	// root); As reads as that root. nil: den's own ids.
	Owner *hostfs.Owner
	As    *hostfs.Identity
	Index Index
	// Loc is the time zone of the daily logs (nil: the host's).
	Loc *time.Location

	mu sync.Mutex // den's own writes, one at a time
}

func (b *Book) loc() *time.Location {
	if b.Loc == nil {
		return time.Local
	}
	return b.Loc
}

// open opens the memory folder, making it when it is missing.
func (b *Book) open() (*hostfs.Dir, error) {
	d, err := hostfs.OpenDirNamed(b.Dir, "/den/memory")
	if err != nil {
		return nil, fmt.Errorf("memory: %w", err)
	}
	return d, nil
}

// read reads a file of the folder, "" when there is none.
func (b *Book) read(d *hostfs.Dir, name string) (string, error) {
	data, err := d.ReadFileAs(name, MaxFile, b.As)
	if errors.Is(err, fs.ErrNotExist) {
		return "", nil
	}
	if err != nil {
		return "", err
	}
	if !utf8.Valid(data) {
		return strings.ToValidUTF8(string(data), "\uFFFD"), nil
	}
	return string(data), nil
}

// Read returns the text of a file of the memory ("" when it does not
// exist).
func (b *Book) Read(name string) (string, error) {
	d, err := b.open()
	if err != nil {
		return "", err
	}
	defer d.Close()
	return b.read(d, name)
}

// Sync brings the index up to date with the folder: files that changed
// since they were indexed are read again, files that went are dropped.
// It reports the files it could not index (too large, not text, a
// link), which stay out of the index.
func (b *Book) Sync(ctx context.Context) (skipped []string, err error) {
	d, err := b.open()
	if err != nil {
		return nil, err
	}
	defer d.Close()
	entries, _, err := d.List(MaxFiles)
	if err != nil {
		return nil, fmt.Errorf("memory: list: %w", err)
	}
	known, err := b.Index.MemoryFiles(ctx, b.Agent)
	if err != nil {
		return nil, err
	}
	// Rolled-up logs are searched too, as archive/NAME.
	for _, e := range entries {
		if e.Name != Archive || !e.Mode.IsDir() {
			continue
		}
		a, err := d.Sub(Archive)
		if err != nil {
			skipped = append(skipped, Archive)
			break
		}
		archived, _, err := a.List(MaxFiles)
		a.Close()
		if err != nil {
			skipped = append(skipped, Archive)
			break
		}
		for _, x := range archived {
			x.Name = Archive + "/" + x.Name
			entries = append(entries, x)
		}
		break
	}
	seen := map[string]bool{}
	for _, e := range entries {
		if !strings.HasSuffix(e.Name, ".md") || strings.HasPrefix(e.Name, ".") || strings.HasPrefix(e.Name, Archive+"/.") {
			continue
		}
		if !e.Mode.IsRegular() || e.Size > MaxFile {
			skipped = append(skipped, e.Name)
			continue
		}
		seen[e.Name] = true
		f := store.MemoryFile{Size: e.Size, MTime: e.ModTime.UnixNano()}
		if k, ok := known[e.Name]; ok && k == f {
			continue
		}
		if err := b.index(ctx, d, e.Name, f); err != nil {
			skipped = append(skipped, e.Name)
		}
	}
	for name := range known {
		if !seen[name] {
			if err := b.Index.ForgetMemoryFile(ctx, b.Agent, name); err != nil {
				return skipped, err
			}
		}
	}
	return skipped, nil
}

// index reads one file and indexes its entries as of f.
func (b *Book) index(ctx context.Context, d *hostfs.Dir, name string, f store.MemoryFile) error {
	text, err := b.read(d, name)
	if err != nil {
		return err
	}
	return b.Index.IndexMemoryFile(ctx, b.Agent, name, f, parse(name, text))
}

// reindex indexes one file as it is now.
func (b *Book) reindex(ctx context.Context, d *hostfs.Dir, name string) error {
	e, err := d.Lstat(name)
	if errors.Is(err, fs.ErrNotExist) {
		return b.Index.ForgetMemoryFile(ctx, b.Agent, name)
	}
	if err != nil {
		return err
	}
	return b.index(ctx, d, name, store.MemoryFile{Size: e.Size, MTime: e.ModTime.UnixNano()})
}

// Write appends an entry to the log of the day now falls on, marked
// with now, the session and the message that wrote it, and indexes it.
// It returns the log's name.
func (b *Book) Write(ctx context.Context, session, message, text string, now time.Time) (string, error) {
	text = strings.TrimSpace(text)
	switch {
	case text == "":
		return "", ErrEmpty
	case len(text) > MaxWrite:
		return "", fmt.Errorf("%w: %d bytes, at most %d", ErrTooLong, len(text), MaxWrite)
	}
	return b.appendEntry(ctx, now, marker(now.In(b.loc()), session, message), defang(strings.ToValidUTF8(text, "\uFFFD")))
}

// AppendSummary keeps in today's log the summary of a part of a
// session's conversation that den compacted, so that memory holds what
// the session learned whatever the model chose to write.
func (b *Book) AppendSummary(ctx context.Context, session, summary string, now time.Time) (string, error) {
	summary = strings.TrimSpace(summary)
	if summary == "" {
		return "", ErrEmpty
	}
	if len(summary) > maxSummary {
		summary = clipTo(summary, maxSummary)
	}
	return b.appendEntry(ctx, now, marker(now.In(b.loc()), session, "", "summary"),
		"Summary of an earlier part of a conversation (session "+session+"), kept when den compacted it:\n\n"+defang(summary))
}

func (b *Book) appendEntry(ctx context.Context, now time.Time, mark, text string) (string, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	d, err := b.open()
	if err != nil {
		return "", err
	}
	defer d.Close()
	name := LogName(now, b.loc())
	old, err := b.read(d, name)
	if err != nil {
		return "", fmt.Errorf("memory: %s: %w", name, err)
	}
	if old == "" {
		old = "# " + strings.TrimSuffix(name, ".md") + "\n"
	}
	var nb strings.Builder
	nb.WriteString(strings.TrimRight(old, "\n"))
	nb.WriteString("\n\n" + mark + "\n" + text + "\n")
	if nb.Len() > MaxFile {
		return "", fmt.Errorf("memory: %s would grow over %d bytes: roll the logs up (den memory rollup) or keep less", name, MaxFile)
	}
	if err := d.WriteFile(name, []byte(nb.String()), 0o644, b.Owner, false); err != nil {
		return "", fmt.Errorf("memory: %w", err)
	}
	if err := b.reindex(ctx, d, name); err != nil {
		return name, fmt.Errorf("memory: index %s: %w", name, err)
	}
	return name, nil
}

// Revoke takes out of the logs every entry written by one of messages
// (a message the user regenerated or edited away), and returns how many
// it took out.
func (b *Book) Revoke(ctx context.Context, messages []string) (int, error) {
	if len(messages) == 0 {
		return 0, nil
	}
	want := map[string]bool{}
	for _, m := range messages {
		want[m] = true
	}
	return b.revoke(ctx, func(ctx context.Context) ([]string, error) {
		return b.Index.MemoryFilesWith(ctx, b.Agent, "", messages)
	}, func(_, message string) bool { return want[message] })
}

// RevokeSession takes out of the logs every entry written in a session
// (one the user deleted), summaries of its compactions included.
func (b *Book) RevokeSession(ctx context.Context, session string) (int, error) {
	return b.revoke(ctx, func(ctx context.Context) ([]string, error) {
		return b.Index.MemoryFilesWith(ctx, b.Agent, session, nil)
	}, func(s, _ string) bool { return s == session })
}

// revoke rewrites the files find names without the entries drop picks.
func (b *Book) revoke(ctx context.Context, find func(context.Context) ([]string, error), drop func(session, message string) bool) (int, error) {
	if _, err := b.Sync(ctx); err != nil {
		return 0, err
	}
	files, err := find(ctx)
	if err != nil {
		return 0, err
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	d, err := b.open()
	if err != nil {
		return 0, err
	}
	defer d.Close()
	total := 0
	for _, name := range files {
		text, err := b.read(d, name)
		if err != nil {
			return total, fmt.Errorf("memory: %s: %w", name, err)
		}
		kept, n := without(text, drop)
		if n == 0 {
			continue
		}
		if err := d.WriteFile(name, []byte(kept), 0o644, b.Owner, false); err != nil {
			return total, fmt.Errorf("memory: %w", err)
		}
		total += n
		if err := b.reindex(ctx, d, name); err != nil {
			return total, fmt.Errorf("memory: index %s: %w", name, err)
		}
	}
	return total, nil
}

// clipTo cuts s to at most n bytes on a character boundary, marking the
// cut.
func clipTo(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && s[n]&0xC0 == 0x80 {
		n--
	}
	return s[:n] + "…"
}

// Replace writes text as the whole of one file of the memory (a name
// at the top of the folder, ending in .md), as the user's editor left
// it, and indexes it.
func (b *Book) Replace(ctx context.Context, name, text string) error {
	if !strings.HasSuffix(name, ".md") || strings.ContainsAny(name, "/\x00") || strings.HasPrefix(name, ".") {
		return fmt.Errorf("memory: %q: a memory file is a name ending in .md, at the top of /den/memory", name)
	}
	if len(text) > MaxFile {
		return fmt.Errorf("memory: %s: %d bytes, more than the %d den keeps", name, len(text), MaxFile)
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	d, err := b.open()
	if err != nil {
		return err
	}
	defer d.Close()
	if err := d.WriteFile(name, []byte(text), 0o644, b.Owner, false); err != nil {
		return fmt.Errorf("memory: %w", err)
	}
	return b.reindex(ctx, d, name)
}

// File is a file of the memory folder, as Files lists it.
type File struct {
	Name     string
	Size     int64
	Modified time.Time
}

// Files lists the Markdown files of the memory folder (archived logs
// as archive/NAME), newest first.
func (b *Book) Files(ctx context.Context) ([]File, error) {
	if _, err := b.Sync(ctx); err != nil {
		return nil, err
	}
	d, err := b.open()
	if err != nil {
		return nil, err
	}
	defer d.Close()
	var out []File
	add := func(prefix string, dir *hostfs.Dir) error {
		entries, _, err := dir.List(MaxFiles)
		if err != nil {
			return err
		}
		for _, e := range entries {
			if e.Mode.IsRegular() && strings.HasSuffix(e.Name, ".md") {
				out = append(out, File{Name: prefix + e.Name, Size: e.Size, Modified: e.ModTime})
			}
		}
		return nil
	}
	if err := add("", d); err != nil {
		return nil, fmt.Errorf("memory: list: %w", err)
	}
	if a, err := d.Sub(Archive); err == nil {
		err = add(Archive+"/", a)
		a.Close()
		if err != nil {
			return nil, fmt.Errorf("memory: list %s: %w", Archive, err)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Modified.After(out[j].Modified) })
	return out, nil
}
