package session

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"time"

	"den.dev/den/internal/computer"
	"den.dev/den/internal/skill"
	"den.dev/den/internal/store"
)

// PurposeDistill is the purpose of the model request of den skills
// distill.
const PurposeDistill = "skill-distill"

// Draft is a skill the model wrote from a session, in a folder of its
// own for the user to review before it is installed.
type Draft struct {
	Agent   string
	Name    string
	Dir     string   // the draft's host folder: DATA/agents/AGENT/skill-drafts/NAME
	Files   []string // its files, relative, SKILL.md first
	Session string   // the session that holds the request and the answer
}

// Limits of a draft: what the model writes is read, never trusted.
const (
	maxDraftFiles      = 20
	maxDraftFile       = 256 << 10
	maxDistillText     = 80_000 // characters of transcript sent
	maxDistillResult   = 1_500  // characters of each tool result in it
	distillAnswerToken = 8192
)

const distillSystem = `You turn a session in which an AI agent did a task well into a reusable skill in the Agent Skills format, so that the agent can do the same task again quickly.

A skill is a folder with a SKILL.md: YAML frontmatter (name: lowercase letters, digits and hyphens; description: one or two sentences saying what it does and when to use it) and a Markdown body with the steps, the pitfalls the session ran into and how they were solved. Put the commands that worked into scripts under scripts/ (with a #! line, taking what varies as arguments), and refer to them from SKILL.md by their path under /den/skills/NAME/. Leave out what failed, secrets, tokens, passwords and personal data; use placeholders instead. Keep it short.

Answer with the files only, each as:
<file path="SKILL.md">
...
</file>
<file path="scripts/NAME.sh">
...
</file>`

// ErrBadDraft marks a skill draft den cannot use: the model's answer, or
// what its folder holds now, is not a skill.
var ErrBadDraft = errors.New("is not a skill")

var fileBlock = regexp.MustCompile(`(?s)<file path="([^"\n]{1,200})">\n?(.*?)\n?</file>`)

// Distill asks the session's agent's model (or model) to turn the
// session into a skill draft, named name when given, and writes it to
// the agent's skill-drafts folder, which the computer does not see. The
// draft is not installed: the caller shows it and installs it with the
// user's consent (skill.Fetch of Draft.Dir, then Catalog.Install, or
// ReadDraft then InstallDraft). The session may be running a turn: the
// model gets the messages committed so far.
func (r *Runtime) Distill(ctx context.Context, sessionID, name, model string) (Draft, error) {
	sess, err := r.st.GetSession(ctx, sessionID)
	if err != nil {
		return Draft{}, err
	}
	if name != "" {
		if err := skill.ValidName(name); err != nil {
			return Draft{}, fmt.Errorf("%w: %w", ErrBadOptions, err)
		}
	}
	msgs, err := r.st.Path(ctx, sessionID)
	if err != nil {
		return Draft{}, err
	}
	transcript := distillTranscript(msgs)
	if strings.TrimSpace(transcript) == "" {
		return Draft{}, fmt.Errorf("%w: session %s has no messages to learn from", ErrBadOptions, sessionID)
	}
	ask := "Here is the session"
	if sess.Title != "" {
		ask += fmt.Sprintf(" %q", sess.Title)
	}
	ask += ". Write the skill."
	if name != "" {
		ask += fmt.Sprintf(" Name it %s.", name)
	}
	text, draftSession, err := r.oneShot(ctx, sess.Agent, model, "Skill draft from "+orWord(sess.Title, sessionID), PurposeDistill,
		distillSystem, ask+"\n\n"+transcript, distillAnswerToken)
	if err != nil {
		return Draft{Session: draftSession}, err
	}
	files, err := parseDraft(text, name)
	if err != nil {
		return Draft{Session: draftSession}, fmt.Errorf("the model's draft %w: %w (its answer is in session %s)", ErrBadDraft, err, draftSession)
	}
	m, _ := skill.Parse([]byte(files[0].body), 0)
	d := Draft{Agent: sess.Agent, Name: m.Name, Dir: r.draftDir(sess.Agent, m.Name), Session: draftSession}
	r.drafts.Lock()
	defer r.drafts.Unlock()
	if err := os.RemoveAll(d.Dir); err != nil {
		return d, err
	}
	for _, f := range files {
		p := filepath.Join(d.Dir, filepath.FromSlash(f.path))
		if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
			return d, err
		}
		mode := os.FileMode(0o644)
		if strings.HasPrefix(f.body, "#!") {
			mode = 0o755
		}
		if err := os.WriteFile(p, []byte(f.body), mode); err != nil {
			return d, err
		}
		d.Files = append(d.Files, f.path)
	}
	return d, nil
}

// draftDir is the host folder of agent's skill draft name. Both names
// must be valid (computer.ValidName, skill.ValidName): neither holds a
// slash or is "..".
func (r *Runtime) draftDir(agentName, name string) string {
	return filepath.Join(r.o.DataDir, "agents", agentName, "skill-drafts", name)
}

// findDraft is the folder of agent's skill draft name: ErrBadOptions
// for a name no agent or skill can have, store.ErrNotFound when there
// is no such draft.
func (r *Runtime) findDraft(agentName, name string) (string, error) {
	if err := computer.ValidName("agent", agentName); err != nil {
		return "", fmt.Errorf("%w: %w", ErrBadOptions, err)
	}
	if err := skill.ValidName(name); err != nil {
		return "", fmt.Errorf("%w: %w", ErrBadOptions, err)
	}
	dir := r.draftDir(agentName, name)
	fi, err := os.Lstat(dir)
	switch {
	case errors.Is(err, fs.ErrNotExist), err == nil && !fi.IsDir():
		return "", fmt.Errorf("%w: agent %s has no skill draft %s", store.ErrNotFound, agentName, name)
	case err != nil:
		return "", err
	}
	return dir, nil
}

// DraftEntry is a skill draft waiting in an agent's skill-drafts
// folder, read as an install would read it.
type DraftEntry struct {
	Agent, Name string
	Modified    time.Time // when its folder last changed
	Description string
	Files       int
	Findings    []skill.Finding
	Problem     string // why it is not a skill now (its folder was changed); the fields above it are empty then
}

// Drafts lists the skill drafts waiting for review, of agentName or,
// when it is "", of every agent, newest first: the drafts den skills
// distill left without a terminal as well as the web's. Folders whose
// names no agent or skill can have, and links, are not drafts.
func (r *Runtime) Drafts(ctx context.Context, agentName string) ([]DraftEntry, error) {
	agents := []string{agentName}
	if agentName == "" {
		ents, err := os.ReadDir(filepath.Join(r.o.DataDir, "agents"))
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			return nil, err
		}
		agents = agents[:0]
		for _, e := range ents {
			if e.IsDir() && computer.ValidName("agent", e.Name()) == nil {
				agents = append(agents, e.Name())
			}
		}
	} else if err := computer.ValidName("agent", agentName); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrBadOptions, err)
	}
	r.drafts.Lock()
	defer r.drafts.Unlock()
	var out []DraftEntry
	for _, a := range agents {
		dir := filepath.Join(r.o.DataDir, "agents", a, "skill-drafts")
		ents, err := os.ReadDir(dir)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return nil, err
		}
		for _, e := range ents {
			// ReadDir does not follow links: a link is not a dir here.
			if !e.IsDir() || skill.ValidName(e.Name()) != nil {
				continue
			}
			fi, err := e.Info()
			if err != nil {
				continue // removed meanwhile
			}
			d := DraftEntry{Agent: a, Name: e.Name(), Modified: fi.ModTime()}
			if b, err := readDraft(ctx, filepath.Join(dir, e.Name()), e.Name()); err != nil {
				d.Problem = err.Error()
			} else {
				d.Description, d.Files, d.Findings = b.Manifest.Description, len(b.Files), b.Findings
			}
			out = append(out, d)
		}
	}
	slices.SortFunc(out, func(a, b DraftEntry) int {
		if c := b.Modified.Compare(a.Modified); c != 0 {
			return c
		}
		return strings.Compare(a.Agent+"/"+a.Name, b.Agent+"/"+b.Name)
	})
	return out, nil
}

// ReadDraft reads agent's skill draft name as an install would: its
// files, parsed and scanned.
func (r *Runtime) ReadDraft(ctx context.Context, agentName, name string) (*skill.Bundle, error) {
	dir, err := r.findDraft(agentName, name)
	if err != nil {
		return nil, err
	}
	r.drafts.Lock()
	defer r.drafts.Unlock()
	return readDraft(ctx, dir, name)
}

// readDraft fetches the draft in dir, whose errors name it by name, not
// by its host folder. The caller holds r.drafts.
func readDraft(ctx context.Context, dir, name string) (*skill.Bundle, error) {
	bundles, err := skill.Fetch(ctx, dir, skill.FetchOptions{})
	if err != nil {
		return nil, fmt.Errorf("the draft %s %w: %s", name, ErrBadDraft, strings.ReplaceAll(err.Error(), dir, "skill-drafts/"+name))
	}
	return bundles[0], nil
}

// InstallDraft installs agent's skill draft name as den skills distill
// does when the user says yes, and returns the skill as the catalog
// lists it. A draft with high-severity findings is skill.ErrFlagged
// unless allowHigh; one named as a skill the agent has is
// skill.ErrExists unless replace, which installs it in that skill's
// place. The draft stays, as after den skills distill.
func (r *Runtime) InstallDraft(ctx context.Context, agentName, name string, allowHigh, replace bool) (skill.Entry, error) {
	dir, err := r.findDraft(agentName, name)
	if err != nil {
		return skill.Entry{}, err
	}
	// The catalog opens the agent's computer: only once the draft is
	// known to be there.
	cat, err := r.Skills(ctx, agentName)
	if err != nil {
		return skill.Entry{}, err
	}
	r.drafts.Lock()
	defer r.drafts.Unlock()
	b, err := readDraft(ctx, dir, name)
	if err != nil {
		return skill.Entry{}, err
	}
	if high := skill.CountHigh(b.Findings); high > 0 && !allowHigh {
		return skill.Entry{}, fmt.Errorf("the draft %s %w (%d): read them, and install it with allow_high to install it anyway", name, skill.ErrFlagged, high)
	}
	now := time.Now()
	if err := cat.Install(b, skill.InstallOptions{Replace: replace, AllowHigh: allowHigh}, now); err != nil {
		if errors.Is(err, skill.ErrExists) {
			return skill.Entry{}, fmt.Errorf("a skill named %s %w for agent %s: install the draft with replace to install it in its place", b.Name(), skill.ErrExists, agentName)
		}
		return skill.Entry{}, err
	}
	return cat.Get(b.Name(), "", now)
}

// DiscardDraft removes agent's skill draft name.
func (r *Runtime) DiscardDraft(agentName, name string) error {
	dir, err := r.findDraft(agentName, name)
	if err != nil {
		return err
	}
	r.drafts.Lock()
	defer r.drafts.Unlock()
	return os.RemoveAll(dir)
}

type draftFile struct{ path, body string }

// parseDraft reads the model's answer: <file path="…"> blocks, SKILL.md
// among them with a valid manifest (named name when given: its name
// line is set so), paths relative and inside the folder, within the
// limits. SKILL.md comes first.
func parseDraft(text, name string) ([]draftFile, error) {
	var files []draftFile
	seen := map[string]bool{}
	for _, m := range fileBlock.FindAllStringSubmatch(text, -1) {
		p := path.Clean(strings.TrimSpace(m[1]))
		if path.IsAbs(p) || p == "." || strings.HasPrefix(p, "../") || p == ".." || strings.ContainsAny(p, "\\\x00") {
			return nil, fmt.Errorf("a file's path %q is not inside the skill's folder", m[1])
		}
		if seen[p] {
			return nil, fmt.Errorf("%s is given twice", p)
		}
		seen[p] = true
		if len(m[2]) > maxDraftFile {
			return nil, fmt.Errorf("%s is %d bytes, more than %d", p, len(m[2]), maxDraftFile)
		}
		body := m[2]
		if !strings.HasSuffix(body, "\n") {
			body += "\n"
		}
		f := draftFile{p, body}
		if p == skill.ManifestFile {
			files = append([]draftFile{f}, files...)
		} else {
			files = append(files, f)
		}
	}
	switch {
	case len(files) == 0:
		return nil, errors.New(`no <file path="…"> blocks`)
	case len(files) > maxDraftFiles:
		return nil, fmt.Errorf("%d files, more than %d", len(files), maxDraftFiles)
	case files[0].path != skill.ManifestFile:
		return nil, errors.New("no SKILL.md")
	}
	if name != "" {
		files[0].body = nameLine.ReplaceAllString(files[0].body, "${1}name: "+name)
	}
	m, err := skill.Parse([]byte(files[0].body), 0)
	if err != nil {
		return nil, err
	}
	if name != "" && m.Name != name {
		return nil, fmt.Errorf("SKILL.md is named %q, not %q", m.Name, name)
	}
	return files, nil
}

// nameLine is the frontmatter's name line (the first such line, in the
// frontmatter at the file's start).
var nameLine = regexp.MustCompile(`(?m)\A(---\n(?:[^\n]*\n)*?)name:[^\n]*`)

// distillTranscript is the session for the model: each message's text,
// calls and results (each result cut), the whole within
// maxDistillText, keeping the start (the task) and the end (how it
// went) when it is longer.
func distillTranscript(msgs []store.StoredMessage) string {
	var parts []string
	for _, m := range msgs {
		var b strings.Builder
		for _, p := range m.Message.Parts {
			var pb strings.Builder
			WritePart(&pb, p)
			s := pb.String()
			if len(s) > maxDistillResult {
				s = clipText(s, maxDistillResult) + "\n… (cut)\n"
			}
			b.WriteString(s)
		}
		if t := strings.TrimSpace(b.String()); t != "" {
			parts = append(parts, "## "+string(m.Message.Role)+"\n"+t)
		}
	}
	all := strings.Join(parts, "\n\n")
	if len(all) <= maxDistillText {
		return all
	}
	head := clipText(all, maxDistillText/3)
	tail := all[len(all)-maxDistillText*2/3:]
	if i := strings.Index(tail, "\n## "); i >= 0 {
		tail = tail[i+1:]
	}
	return head + "\n\n(… the middle of the session is left out …)\n\n" + tail
}
