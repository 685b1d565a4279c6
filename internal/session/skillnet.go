package session

import (
	"slices"
	"sync"
	"time"

	"den.dev/den/internal/egress"
	"den.dev/den/internal/skill"
)

// skillsInUse are the skills each session has used: den saw the model
// read a skill's SKILL.md, or the user asked for it with /NAME. From
// then on, for the rest of the session (while den runs), the session's
// computer may also reach the hosts the config allows the skill
// ([agents.NAME.skills.SKILL] allow).
type skillsInUse struct {
	mu sync.Mutex
	by map[string][]string // session id → skill names
}

func (u *skillsInUse) add(session, name string) {
	u.mu.Lock()
	defer u.mu.Unlock()
	if u.by == nil {
		u.by = map[string][]string{}
	}
	if !slices.Contains(u.by[session], name) {
		u.by[session] = append(u.by[session], name)
	}
}

func (u *skillsInUse) of(session string) []string {
	u.mu.Lock()
	defer u.mu.Unlock()
	return slices.Clone(u.by[session])
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
		r.skillsUsed.add(session, name)
	}
}

// withSkillRules is pol, the agent's policy, with the rules of the
// skills the session uses.
func (r *Runtime) withSkillRules(agentName, session string, pol egress.Policy) egress.Policy {
	used := r.skillsUsed.of(session)
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
