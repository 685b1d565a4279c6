package config

import (
	"errors"
	"strings"
	"testing"
)

func TestAgentSettable(t *testing.T) {
	allowed := map[string]any{
		"agents.default.model":         "openai/gpt-5-mini",
		`agents."default".model`:       "fast", // a group name
		"agents.default.instructions":  "Be brief.\nAnswer in French.",
		"agents.default.instructions ": nil, // not a key: refused below
	}
	delete(allowed, "agents.default.instructions ")
	for key, v := range allowed {
		s, err := AgentSettable("default", key)
		if err != nil {
			t.Errorf("%s refused: %v", key, err)
			continue
		}
		if err := s.Check(v); err != nil {
			t.Errorf("%s = %q refused: %v", key, v, err)
		}
		if !strings.HasPrefix(s.Key, "agents.default.") || s.Doc == "" {
			t.Errorf("%s: setting %+v", key, s)
		}
	}
	for _, key := range []string{
		"agents.other.model",
		"agents.other.instructions",
		"agents.default.instructions_file",
		"agents.default.trust",
		`agents.default.permissions."den-config set"`,
		"agents.default.permissions",
		"agents.default.allowed_models",
		"agents.default.mounts",
		"agents.default.network",
		"agents.default.rootfs",
		"agents.default.memory",
		"agents.default.pids",
		"agents.default.cpu_weight",
		"agents.default.disk",
		"agents.default",
		"agents.default.model.x",
		"agents.default.colour",
		"sandbox.bwrap",
		"sandbox.proot",
		"sandbox.backend",
		"rootfs.alpine_mirror",
		"rootfs.debian_mirror",
		"providers.openai.base_url",
		"providers.openai.api_key",
		"providers.evil.headers.X",
		"models.\"openai/gpt-5\".price_input",
		"groups.fast.members",
		"retry.delays",
		"retry.stall_timeout",
		"unknown.key",
		"agents.default.model\n[providers.evil]",
		"agents.default.instructions ",
		"agents.default]\n[providers.evil.model",
		"",
	} {
		_, err := AgentSettable("default", key)
		if !errors.Is(err, ErrNotSettable) {
			t.Errorf("%q: %v, want ErrNotSettable", key, err)
			continue
		}
		msg := err.Error()
		if !strings.Contains(msg, "den config set") || !strings.Contains(msg, "outside the computer") {
			t.Errorf("%q: the message does not send the user to den config set: %s", key, msg)
		}
		if shown := strings.TrimSpace(key); shown != "" && !strings.Contains(msg, key) && !strings.Contains(msg, strings.ReplaceAll(key, "\n", `\n`)) {
			t.Errorf("%q: the message does not name the key: %s", key, msg)
		}
		if strings.Contains(msg, "\n") {
			t.Errorf("%q: the message spans lines: %s", key, msg)
		}
	}
}

func TestAgentSettableChecks(t *testing.T) {
	for _, c := range []struct {
		key string
		v   any
		ok  bool
	}{
		{"agents.default.model", "openai/gpt-5-mini", true},
		{"agents.default.model", strings.Repeat("m", 200), true},
		{"agents.default.model", strings.Repeat("m", 201), false},
		{"agents.default.model", "", false},
		{"agents.default.model", "openai/gpt-5\n[providers.evil]", false},
		{"agents.default.model", "openai/gpt 5", false},
		{"agents.default.model", "openai/gpt-5\t", false},
		{"agents.default.model", "openai/gpt-5\x00", false},
		{"agents.default.model", "openai/\u202egpt-5", false},
		{"agents.default.model", "bad\xff", false},
		{"agents.default.model", int64(5), false},
		{"agents.default.model", []any{"a"}, false},
		{"agents.default.instructions", "", true},
		{"agents.default.instructions", "line one\nline two\n", true},
		{"agents.default.instructions", "Ünïcödé 日本語 🙂", true},
		{"agents.default.instructions", strings.Repeat("é", 8000), true},
		{"agents.default.instructions", strings.Repeat("x", 9000), false},
		{"agents.default.instructions", "a\x1b[2Jb", false},
		{"agents.default.instructions", "a\rb", false},
		{"agents.default.instructions", "a\x00b", false},
		{"agents.default.instructions", "a\u0085b", false},
		{"agents.default.instructions", "hidden\u202etxet", false},
		{"agents.default.instructions", "zero\u200bwidth", false},
		{"agents.default.instructions", true, false},
	} {
		s, err := AgentSettable("default", c.key)
		if err != nil {
			t.Fatal(err)
		}
		err = s.Check(c.v)
		if c.ok && err != nil {
			t.Errorf("%s = %q refused: %v", c.key, c.v, err)
		}
		if !c.ok && !errors.Is(err, ErrInvalid) {
			t.Errorf("%s = %q: %v, want ErrInvalid", c.key, c.v, err)
		}
	}
}

func TestAgentSettableKeys(t *testing.T) {
	for agent, want := range map[string][]string{
		"default":  {"agents.default.model", "agents.default.instructions"},
		"my notes": {`agents."my notes".model`, `agents."my notes".instructions`},
	} {
		var got []string
		for _, s := range AgentSettableKeys(agent) {
			got = append(got, s.Key)
			if _, err := AgentSettable(agent, s.Key); err != nil {
				t.Errorf("%s: listed but refused: %v", s.Key, err)
			}
		}
		if strings.Join(got, " ") != strings.Join(want, " ") {
			t.Errorf("%s: %q, want %q", agent, got, want)
		}
	}
	// Every settable key with a valid value is one SetValue accepts.
	p := write(t, base)
	for _, s := range AgentSettableKeys("default") {
		if _, err := SetValue(p, s.Key, "x"); err != nil {
			t.Errorf("%s: %v", s.Key, err)
		}
	}
}
