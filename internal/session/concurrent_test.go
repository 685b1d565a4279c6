package session

import (
	"encoding/json"
	"testing"

	"den.dev/den/internal/llm"
	"den.dev/den/internal/tool"
)

// TestConcurrentOnlyWhatCannotRace: reads and read-only shell commands
// may run side by side; a shell command that writes, installs, or
// changes the shell itself runs alone in call order.
func TestConcurrentOnlyWhatCannotRace(t *testing.T) {
	reg, err := tool.NewRegistry(tool.Builtin()...)
	if err != nil {
		t.Fatal(err)
	}
	r := &registryTools{reg: reg}
	shell := func(cmd string) *llm.ToolCall {
		in, _ := json.Marshal(map[string]string{"command": cmd})
		return &llm.ToolCall{ID: "x", Name: "shell_execute", Input: in}
	}
	for _, tt := range []struct {
		call *llm.ToolCall
		want bool
	}{
		{shell("cat /etc/os-release"), true},
		{shell("ls -la /workspace | head"), true},
		{shell("apt-get install -y jq"), false},
		{shell("mkdir d"), false},
		{shell("cd d"), false},
		{shell("export PATH=$PATH:/opt/bin"), false},
		{shell("rm a"), false},
		{shell("echo hi > f"), false},
		{&llm.ToolCall{ID: "r", Name: "file_read", Input: json.RawMessage(`{"path":"a"}`)}, true},
		{&llm.ToolCall{ID: "w", Name: "file_write", Input: json.RawMessage(`{"path":"a","content":"x"}`)}, false},
	} {
		if got := r.Concurrent(tt.call); got != tt.want {
			t.Errorf("Concurrent(%s %s) = %v, want %v", tt.call.Name, tt.call.Input, got, tt.want)
		}
	}
}
