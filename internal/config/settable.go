package config

import (
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Setting is a key an agent may change in its own section of the file.
type Setting struct {
	Key   string            // the full key, as TOML: agents.default.model
	Doc   string            // what it is, in one sentence, for help text
	Check func(v any) error // refuses, wrapping ErrInvalid, a value the agent may not set
}

// Limits of the values an agent may set.
const (
	maxModel        = 200  // characters of a model ref or group name
	maxInstructions = 8000 // characters of instructions
)

// AgentSettableKeys lists the keys the named agent may change from
// inside its computer: its model and its instructions. Nothing else —
// another agent's section, trust, permissions, mounts, network, limits,
// the sandbox, mirrors, providers — can be changed from inside, since
// each could widen what the computer reaches on the host.
func AgentSettableKeys(agent string) []Setting {
	model := keyString([]string{"agents", agent, "model"})
	instructions := keyString([]string{"agents", agent, "instructions"})
	return []Setting{{
		Key: model,
		Doc: "The model this agent uses: a model ref such as anthropic/claude-sonnet-5-5, or a group name.",
		Check: func(v any) error {
			s, err := checkString(model, v, maxModel)
			if err != nil {
				return err
			}
			if s == "" {
				return fmt.Errorf("%w: %s: empty", ErrInvalid, model)
			}
			for _, r := range s {
				if unicode.IsSpace(r) || !unicode.IsGraphic(r) {
					return fmt.Errorf("%w: %s: holds %q: a model ref has no spaces, control or invisible characters", ErrInvalid, model, r)
				}
			}
			return nil
		},
	}, {
		Key: instructions,
		Doc: fmt.Sprintf("Extra instructions added to this agent's system prompt (at most %d characters).", maxInstructions),
		Check: func(v any) error {
			s, err := checkString(instructions, v, maxInstructions)
			if err != nil {
				return err
			}
			for _, r := range s {
				// Invisible format characters (bidirectional
				// overrides, zero widths) count as control
				// characters: they can hide text from the person
				// approving the change.
				if r != '\n' && (unicode.IsControl(r) || unicode.Is(unicode.Cf, r)) {
					return fmt.Errorf("%w: %s: holds %q: instructions may hold newlines but no other control or invisible characters", ErrInvalid, instructions, r)
				}
			}
			return nil
		},
	}}
}

// checkString is v as a valid UTF-8 string of at most max characters.
func checkString(key string, v any, max int) (string, error) {
	s, ok := v.(string)
	if !ok {
		return "", fmt.Errorf("%w: %s: want a string, not %s", ErrInvalid, key, encode(v))
	}
	if !utf8.ValidString(s) {
		return "", fmt.Errorf("%w: %s: not valid UTF-8", ErrInvalid, key)
	}
	if n := utf8.RuneCountInString(s); n > max {
		return "", fmt.Errorf("%w: %s: %d characters, more than %d", ErrInvalid, key, n, max)
	}
	return s, nil
}

// AgentSettable returns the Setting for key when the named agent may
// change it from inside its computer (see AgentSettableKeys); otherwise
// an error wrapping ErrNotSettable that names the key and says the user
// changes it with `den config set` outside the computer.
func AgentSettable(agent, key string) (Setting, error) {
	shown := fmt.Sprintf("%q", key)
	if parts, err := parseKey(key); err == nil {
		shown = keyString(parts)
		for _, s := range AgentSettableKeys(agent) {
			if s.Key == shown {
				return s, nil
			}
		}
	}
	var keys []string
	for _, s := range AgentSettableKeys(agent) {
		keys = append(keys, s.Key)
	}
	return Setting{}, fmt.Errorf("%w: %s: an agent may change only %s; the user changes %s with `den config set` outside the computer",
		ErrNotSettable, shown, strings.Join(keys, " and "), shown)
}
