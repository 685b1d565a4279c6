package agent

import (
	"strings"
	"testing"
	"time"
)

// TestSystemPromptNamesDenURLs: the model is told, once, how to show
// the user a file, with or without den's optional folders.
func TestSystemPromptNamesDenURLs(t *testing.T) {
	c := Computer{Distro: "alpine", Version: "3.21", PackageManager: "apk"}
	for _, f := range []Features{{}, {Browser: true, Memory: true, Skills: true, Attachments: true, HostCommands: true}} {
		c.Features = f
		p := SystemPrompt(c, "", time.Now())
		if n := strings.Count(p, "den://workspace/chart.png"); n != 1 {
			t.Errorf("features %+v: the prompt shows den://workspace/chart.png %d times, want once:\n%s", f, n, p)
		}
	}
}
