package skill

import (
	"bytes"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"unicode/utf8"

	"go.yaml.in/yaml/v3"
)

// ManifestFile is the file that makes a folder a skill.
const ManifestFile = "SKILL.md"

// MaxNameLen is the longest skill name.
const MaxNameLen = 64

// A Manifest is what a SKILL.md says: its YAML frontmatter and the
// Markdown body after it.
type Manifest struct {
	Name         string            `json:"name"`
	Description  string            `json:"description,omitempty"`
	License      string            `json:"license,omitempty"`
	AllowedTools []string          `json:"allowed_tools,omitempty"`
	Metadata     map[string]string `json:"metadata,omitempty"`
	// Version and Compatibility are not in the Agent Skills format but
	// common in published skills.
	Version       string `json:"version,omitempty"`
	Compatibility string `json:"compatibility,omitempty"`
	// Other lists the frontmatter's other keys, sorted; their values
	// are left alone.
	Other []string `json:"other,omitempty"`
	Body  string   `json:"-"`
}

var nameRE = regexp.MustCompile(`^[a-z0-9]+(-[a-z0-9]+)*$`)

// ValidName checks a skill's name, which is also its folder's name:
// 1–64 lowercase letters, digits and hyphens, with no hyphen at either
// end and no two in a row, as the Agent Skills format says.
func ValidName(name string) error {
	if len(name) > MaxNameLen || !nameRE.MatchString(name) {
		return fmt.Errorf("name %q %w: use 1-%d lowercase letters, digits and single hyphens", printable(name, 80), ErrInvalid, MaxNameLen)
	}
	return nil
}

// Parse reads a SKILL.md. Its frontmatter must open the file with a
// line "---" and end with another; name is required and must be a
// ValidName. Keys den does not know are listed in Other, not refused.
// A file larger than max bytes (DefaultLimits' ManifestSize when max
// is 0), not UTF-8, or whose frontmatter is not a YAML mapping is
// ErrInvalid or ErrTooLarge.
func Parse(data []byte, max int64) (Manifest, error) {
	if max <= 0 {
		max = DefaultLimits().ManifestSize
	}
	if int64(len(data)) > max {
		return Manifest{}, fmt.Errorf("%s %w: %d bytes, more than %d", ManifestFile, ErrTooLarge, len(data), max)
	}
	if !utf8.Valid(data) {
		return Manifest{}, fmt.Errorf("%s %w: it is not UTF-8 text", ManifestFile, ErrInvalid)
	}
	front, body, err := splitFrontmatter(data)
	if err != nil {
		return Manifest{}, err
	}
	var fields map[string]yaml.Node
	if err := yaml.Unmarshal(front, &fields); err != nil {
		return Manifest{}, fmt.Errorf("%s %w: its frontmatter is not valid YAML: %s", ManifestFile, ErrInvalid, yamlError(err))
	}
	m := Manifest{Body: string(body)}
	for key, node := range fields {
		var err error
		switch key {
		case "name":
			m.Name, err = scalar(key, &node)
		case "description":
			m.Description, err = scalar(key, &node)
		case "license":
			m.License, err = scalar(key, &node)
		case "version":
			m.Version, err = scalar(key, &node)
		case "compatibility":
			m.Compatibility, err = scalar(key, &node)
		case "allowed-tools":
			m.AllowedTools, err = tools(&node)
		case "metadata":
			m.Metadata, err = metadata(&node)
		default:
			m.Other = append(m.Other, key)
		}
		if err != nil {
			return Manifest{}, fmt.Errorf("%s %w: %v", ManifestFile, ErrInvalid, err)
		}
	}
	slices.Sort(m.Other)
	if m.Name == "" {
		return Manifest{}, fmt.Errorf("%s %w: its frontmatter has no name", ManifestFile, ErrInvalid)
	}
	if err := ValidName(m.Name); err != nil {
		return Manifest{}, fmt.Errorf("%s: %w", ManifestFile, err)
	}
	return m, nil
}

// splitFrontmatter returns the YAML between the opening "---" line and
// the closing "---" (or "...") line, and the body after it. A byte
// order mark and CRLF line ends are accepted.
func splitFrontmatter(data []byte) (front, body []byte, err error) {
	data = bytes.TrimPrefix(data, []byte("\ufeff"))
	first, rest, _ := bytes.Cut(data, []byte("\n"))
	if string(bytes.TrimRight(first, " \t\r")) != "---" {
		return nil, nil, fmt.Errorf("%s %w: it has no frontmatter (a first line \"---\", YAML, then \"---\")", ManifestFile, ErrInvalid)
	}
	off := 0
	for off <= len(rest) {
		line, _, found := bytes.Cut(rest[off:], []byte("\n"))
		end := off + len(line)
		if t := string(bytes.TrimRight(line, " \t\r")); t == "---" || t == "..." {
			body := []byte{}
			if found {
				body = rest[end+1:]
			}
			return rest[:off], body, nil
		}
		if !found {
			break
		}
		off = end + 1
	}
	return nil, nil, fmt.Errorf("%s %w: its frontmatter has no closing \"---\" line", ManifestFile, ErrInvalid)
}

// scalar is a key's value as text: strings, numbers and booleans as
// written.
func scalar(key string, n *yaml.Node) (string, error) {
	if n.Kind != yaml.ScalarNode {
		return "", fmt.Errorf("%s is a %s, not text", key, kindName(n.Kind))
	}
	if n.Tag == "!!null" {
		return "", nil
	}
	return n.Value, nil
}

// tools reads allowed-tools: space-separated text, as the format has
// it, or a list, as some tools write it.
func tools(n *yaml.Node) ([]string, error) {
	switch n.Kind {
	case yaml.ScalarNode:
		if n.Tag == "!!null" {
			return nil, nil
		}
		return strings.Fields(n.Value), nil
	case yaml.SequenceNode:
		var out []string
		for _, item := range n.Content {
			s, err := scalar("an item of allowed-tools", item)
			if err != nil {
				return nil, err
			}
			out = append(out, s)
		}
		return out, nil
	}
	return nil, fmt.Errorf("allowed-tools is a %s, not text or a list", kindName(n.Kind))
}

// metadata reads metadata, a mapping of text to text; a value that is
// itself a list or a mapping is kept as YAML in flow style.
func metadata(n *yaml.Node) (map[string]string, error) {
	if n.Kind == yaml.ScalarNode && n.Tag == "!!null" {
		return nil, nil
	}
	if n.Kind != yaml.MappingNode {
		return nil, fmt.Errorf("metadata is a %s, not a mapping", kindName(n.Kind))
	}
	out := make(map[string]string, len(n.Content)/2)
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		key, err := scalar("a key of metadata", k)
		if err != nil {
			return nil, err
		}
		if v.Kind == yaml.ScalarNode {
			out[key] = v.Value
			continue
		}
		flow := *v
		flow.Style = yaml.FlowStyle
		b, err := yaml.Marshal(&flow)
		if err != nil {
			return nil, fmt.Errorf("metadata %s: %v", key, err)
		}
		out[key] = strings.TrimSpace(string(b))
	}
	return out, nil
}

func kindName(k yaml.Kind) string {
	switch k {
	case yaml.SequenceNode:
		return "list"
	case yaml.MappingNode:
		return "mapping"
	case yaml.AliasNode:
		return "alias"
	case yaml.DocumentNode:
		return "document"
	}
	return "scalar"
}

// yamlError is the parser's message without its "yaml: " prefix.
func yamlError(err error) string {
	return strings.TrimPrefix(err.Error(), "yaml: ")
}
