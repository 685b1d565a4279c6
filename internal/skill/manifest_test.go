package skill

import (
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestParse(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want Manifest
	}{
		{
			name: "every field",
			in: `---
name: pdf-tools
description: >
  Fill and split PDFs.
  Use when the user hands over a PDF.
license: Apache-2.0
allowed-tools: Bash(python3:*) Read
metadata:
  author: someone
  tags: [pdf, forms]
  version: 2
version: 1.0
compatibility: needs python3
disable-model-invocation: true
x-custom: {a: 1}
---
# PDF tools

Body.
`,
			want: Manifest{
				Name: "pdf-tools", Description: "Fill and split PDFs. Use when the user hands over a PDF.\n", License: "Apache-2.0",
				AllowedTools: []string{"Bash(python3:*)", "Read"},
				Metadata:     map[string]string{"author": "someone", "tags": "[pdf, forms]", "version": "2"},
				Version:      "1.0", Compatibility: "needs python3",
				Other: []string{"disable-model-invocation", "x-custom"},
				Body:  "# PDF tools\n\nBody.\n",
			},
		},
		{
			name: "allowed-tools as a list, CRLF, a byte order mark",
			in:   "\ufeff---\r\nname: a1\r\nallowed-tools:\r\n  - Read\r\n  - Write\r\n---\r\nbody\r\n",
			want: Manifest{Name: "a1", AllowedTools: []string{"Read", "Write"}, Body: "body\r\n"},
		},
		{
			name: "only a name, closed with ..., no body",
			in:   "---\nname: x\n...",
			want: Manifest{Name: "x", Body: ""},
		},
		{
			name: "empty values",
			in:   "---\nname: x\ndescription:\nmetadata:\nallowed-tools:\n---\n",
			want: Manifest{Name: "x"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Parse([]byte(tt.in), 0)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("Parse (-want +got):\n%s", diff)
			}
		})
	}
}

func TestParseErrors(t *testing.T) {
	tests := []struct {
		name, in string
		want     error
		says     string
	}{
		{"no frontmatter", "# Just Markdown\n", ErrInvalid, "no frontmatter"},
		{"empty file", "", ErrInvalid, "no frontmatter"},
		{"frontmatter not closed", "---\nname: x\n", ErrInvalid, "no closing"},
		{"bad YAML", "---\nname: x\ndescription: [unclosed\n---\n", ErrInvalid, "not valid YAML"},
		{"YAML that is not a mapping", "---\n- a\n- b\n---\n", ErrInvalid, "not valid YAML"},
		{"duplicate key", "---\nname: x\nname: y\n---\n", ErrInvalid, "not valid YAML"},
		{"no name", "---\ndescription: nameless\n---\n", ErrInvalid, "no name"},
		{"name a list", "---\nname: [a]\n---\n", ErrInvalid, "name is a list"},
		{"name with spaces", "---\nname: My Skill\n---\n", ErrInvalid, `"My Skill"`},
		{"name with a path", "---\nname: ../etc\n---\n", ErrInvalid, "lowercase letters"},
		{"name with a slash", "---\nname: a/b\n---\n", ErrInvalid, "lowercase letters"},
		{"name in capitals", "---\nname: PDF\n---\n", ErrInvalid, "lowercase letters"},
		{"name with underscore", "---\nname: a_b\n---\n", ErrInvalid, "lowercase letters"},
		{"name starting with a hyphen", "---\nname: -a\n---\n", ErrInvalid, "lowercase letters"},
		{"name ending with a hyphen", "---\nname: a-\n---\n", ErrInvalid, "lowercase letters"},
		{"name with two hyphens", "---\nname: a--b\n---\n", ErrInvalid, "lowercase letters"},
		{"name too long", "---\nname: " + strings.Repeat("a", 65) + "\n---\n", ErrInvalid, "1-64"},
		{"description a mapping", "---\nname: x\ndescription: {a: b}\n---\n", ErrInvalid, "description is a mapping"},
		{"metadata a list", "---\nname: x\nmetadata: [a]\n---\n", ErrInvalid, "metadata is a list"},
		{"allowed-tools a mapping", "---\nname: x\nallowed-tools: {a: b}\n---\n", ErrInvalid, "allowed-tools is a mapping"},
		{"not UTF-8", "---\nname: x\ndescription: \xff\xfe\n---\n", ErrInvalid, "not UTF-8"},
		{"too large", "---\nname: x\n---\n" + strings.Repeat("a", 256<<10), ErrTooLarge, "more than 262144"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Parse([]byte(tt.in), 0)
			if !errors.Is(err, tt.want) || !strings.Contains(err.Error(), tt.says) {
				t.Errorf("Parse = %v, want %v saying %q", err, tt.want, tt.says)
			}
		})
	}
}

func TestValidName(t *testing.T) {
	for _, ok := range []string{"a", "pdf", "skill-creator", "a1-b2-c3", strings.Repeat("a", 64), "0"} {
		if err := ValidName(ok); err != nil {
			t.Errorf("ValidName(%q) = %v", ok, err)
		}
	}
	for _, bad := range []string{"", ".", "..", ".hidden", "A", "a b", "a/b", "a\x00", "é", "a--b", "-a", "a-", strings.Repeat("a", 65)} {
		if err := ValidName(bad); !errors.Is(err, ErrInvalid) {
			t.Errorf("ValidName(%q) = %v, want ErrInvalid", bad, err)
		}
	}
}
