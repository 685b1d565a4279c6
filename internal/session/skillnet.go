package session

import (
	"context"
	"slices"
	"sync"
	"time"

	"den.dev/den/internal/egress"
	"den.dev/den/internal/skill"
)

// skillsInUse are the skills each session has used: den saw the model
// read a skill's SKILL.md, or the user asked for it with /NAME. From
// then on, for the rest of the session, the session's computer may also
// reach the hosts the config allows the skill ([agents.NAME.skills.SKILL]
// allow). The store keeps them across restarts; this is its cache.
type skillsInUse struct {
	mu sync.Mutex
	by map[string][]string // session id → skill names, once loaded
}

// add notes name for session, and reports whether it is new here.
func (u *skillsInUse) add(session, name string) bool {
	u.mu.Lock()
	defer u.mu.Unlock()
	if u.by == nil {
		u.by = map[string][]string{}
	}
	if names, ok := u.by[session]; ok && slices.Contains(names, name) {
		return false
	}
	u.by[session] = append(u.by[session], name)
	return true
}

// of returns the skills of session, loading them with load the first
// time.
func (u *skillsInUse) of(session string, load func() ([]string, error)) []string {
	u.mu.Lock()
	defer u.mu.Unlock()
	if names, ok := u.by[session]; ok {
		return slices.Clone(names)
	}
	names, err := load()
	if err != nil {
		return nil // the next call tries again
	}
	if names == nil {
		names = []string{} // loaded, and none
	}
	if u.by == nil {
		u.by = map[string][]string{}
	}
	u.by[session] = names
	return slices.Clone(names)
}

func (u *skillsInUse) forget(session string) {
	u.mu.Lock()
	defer u.mu.Unlock()
	delete(u.by, session)
}

// useSkill notes that the session uses the skill name of cat, when the
// session may use it.
func (r *Runtime) useSkill(cat *skill.Catalog, session, name string) {
	if e, err := cat.Get(name, session, time.Now()); err == nil && e.Usable() {
		r.markSkill(session, name)
	}
}

// markSkill records that the session uses the skill name, in the store
// too, so that its hosts stay open after den restarts.
func (r *Runtime) markSkill(session, name string) {
	r.skillsOf(session) // load what the store has first
	if !r.skillsUsed.add(session, name) {
		return
	}
	if err := r.st.UseSkill(context.Background(), session, name); err != nil {
		r.log.Warn("record a skill in use", "session", session, "skill", name, "err", err)
	}
}

// skillsOf names the skills session has used.
func (r *Runtime) skillsOf(session string) []string {
	return r.skillsUsed.of(session, func() ([]string, error) { return r.st.SkillsUsed(context.Background(), session) })
}

// withSkillRules is pol, the agent's policy, with the rules of the
// skills the session uses.
func (r *Runtime) withSkillRules(agentName, session string, pol egress.Policy) egress.Policy {
	used := r.skillsOf(session)
	if len(used) == 0 {
		return pol
	}
	rules, err := r.Config().Agent(agentName).SkillRules()
	if err != nil {
		return pol
	}
	var more []egress.Rule
	for _, name := range used {
		more = append(more, rules[name]...)
	}
	return pol.With(more)
}
