package clitest

import (
	"slices"
	"strings"
	"testing"
)

func TestShFromPipe(t *testing.T) {
	t.Parallel()
	d := newDen(t)
	provision(t, d, "default")

	r := d.RunInput(strings.NewReader("echo hi-from-sh\nexit 3\n"), "sh")
	// The terminal echoes the input too; the command's own output is a
	// line of its own.
	lines := strings.Split(strings.ReplaceAll(r.Stdout, "\r", ""), "\n")
	if r.Code != 3 || !slices.Contains(lines, "hi-from-sh") {
		t.Errorf("den sh reading a pipe: want a line hi-from-sh and exit 3, got %v", r)
	}
}
