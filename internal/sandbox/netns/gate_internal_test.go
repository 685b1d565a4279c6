package netns

import (
	"strings"
	"testing"
)

func TestResolvConfPadding(t *testing.T) {
	for _, size := range []int{4096, 65536} {
		b := resolvConf(size)
		if len(b) != size || !strings.HasPrefix(string(b), string(ResolvConf())) || b[len(b)-1] != '\n' {
			t.Errorf("resolvConf(%d): %d bytes, %q...", size, len(b), b[:40])
		}
		for line := range strings.Lines(string(b[len(ResolvConf()):])) {
			if !strings.HasPrefix(line, "#") {
				t.Errorf("resolvConf(%d): padding line %q is not a comment", size, line)
			}
		}
	}
}
