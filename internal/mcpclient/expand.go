package mcpclient

import (
	"fmt"
	"os"
	"regexp"
)

// varRef is ${NAME} or ${NAME:-default}, as Claude Code expands them in
// .mcp.json.
var varRef = regexp.MustCompile(`\$\{([A-Za-z_][A-Za-z0-9_]*)(?::-([^}]*))?\}`)

// expand replaces ${NAME} and ${NAME:-default} in s with den's own
// environment variable NAME (or the default when it is unset or
// empty); a variable that is unset and has no default is an error.
func expand(s string) (string, error) {
	var missing string
	out := varRef.ReplaceAllStringFunc(s, func(ref string) string {
		m := varRef.FindStringSubmatch(ref)
		if v := os.Getenv(m[1]); v != "" {
			return v
		}
		if m[2] != "" || len(ref) > len(m[1])+3 {
			return m[2] // ${NAME:-} is an empty default
		}
		if missing == "" {
			missing = m[1]
		}
		return ""
	})
	if missing != "" {
		return "", fmt.Errorf("%w: ${%s} is not set in den's environment (give a default with ${%s:-value})", ErrConfig, missing, missing)
	}
	return out, nil
}

func expandAll(ss []string) ([]string, error) {
	out := make([]string, len(ss))
	for i, s := range ss {
		var err error
		if out[i], err = expand(s); err != nil {
			return nil, err
		}
	}
	return out, nil
}
