package session

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"den.dev/den/internal/agent"
	"den.dev/den/internal/computer"
	"den.dev/den/internal/llm"
	"den.dev/den/internal/skill"
)

// catalogOf is the skills of comp's agent: one catalog per agent for
// the runtime's life, so that each turn re-reads only what changed.
func (r *Runtime) catalogOf(comp *computer.Computer, agentName string) (*skill.Catalog, error) {
	if c, ok := r.catalogs.Load(agentName); ok {
		return c.(*skill.Catalog), nil
	}
	c, err := skill.Open(skill.Options{Dir: comp.AgentDir("skills"), Owner: computerOwner(comp)})
	if err != nil {
		return nil, err
	}
	got, _ := r.catalogs.LoadOrStore(agentName, c)
	return got.(*skill.Catalog), nil
}

// Skills are the skills of an agent (through its computer's skills
// folder).
func (r *Runtime) Skills(ctx context.Context, agentName string) (*skill.Catalog, error) {
	comp, _, err := r.computer(ctx, agentName)
	if err != nil {
		return nil, err
	}
	return r.catalogOf(comp, agentName)
}

// skillsPrompt is the skills' part of the system prompt; a catalog den
// cannot read is said so, not fatal.
func (r *Runtime) skillsPrompt(cat *skill.Catalog, sessionID string, window int, now time.Time) string {
	p, err := cat.Prompt(sessionID, window, now)
	if err != nil {
		r.emit(sessionID, &agent.WarningEvent{Message: fmt.Sprintf("skills not read: %v", err)})
		return ""
	}
	return p
}

// maxSkillInMessage bounds the SKILL.md /name puts in a message; a
// longer one is named, for the model to read.
const maxSkillInMessage = 32 << 10

// withSkill is m with the skill it names put in front of the model:
// "/NAME rest" where NAME is a skill the session may use becomes rest
// followed by that skill's SKILL.md (or, when it is long, where to read
// it), and the use is recorded. Any other message is m as it is.
func (r *Runtime) withSkill(ctx context.Context, agentName, sessionID string, m Message) Message {
	text := strings.TrimSpace(m.Text)
	if !strings.HasPrefix(text, "/") {
		return m
	}
	name, rest, _ := strings.Cut(text[1:], " ")
	if name == "" || skill.ValidName(name) != nil {
		return m
	}
	cat, err := r.Skills(ctx, agentName)
	if err != nil {
		return m
	}
	now := time.Now()
	e, err := cat.Get(name, sessionID, now)
	if err != nil || !e.Usable() || e.Manifest == nil {
		return m
	}
	path := skill.GuestDir + "/" + name + "/SKILL.md"
	var b strings.Builder
	if rest = strings.TrimSpace(rest); rest != "" {
		b.WriteString(rest + "\n\n")
	}
	fmt.Fprintf(&b, "<skill name=%q path=%q>\n", name, path)
	body := strings.TrimSpace(e.Manifest.Body)
	if len(body) > maxSkillInMessage {
		fmt.Fprintf(&b, "(SKILL.md is long: read all of %s)\n", path)
	} else {
		b.WriteString(body + "\n")
	}
	fmt.Fprintf(&b, "</skill>\nThe user asked to use the skill %q for this: follow its instructions (its other files are in %s/%s/).", name, skill.GuestDir, name)
	cat.MarkUsed(name, now)
	r.markSkill(sessionID, name)
	m.Text = b.String()
	return m
}

// noteSkillRead records a use of the skill whose SKILL.md a file_read
// call reads; use, when set, is told its name.
func noteSkillRead(cat *skill.Catalog, c *llm.ToolCall, use func(name string)) {
	if cat == nil || c.Name != "file_read" {
		return
	}
	var in struct {
		Path string `json:"path"`
	}
	if json.Unmarshal(c.Input, &in) != nil {
		return
	}
	if name, ok := skill.ManifestOf(in.Path); ok {
		cat.MarkUsed(name, time.Now())
		if use != nil {
			use(name)
		}
	}
}
