package tool_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"den.dev/den/internal/llm"
	"den.dev/den/internal/sandbox"
	"den.dev/den/internal/tool"
)

func TestShellRefusesBashismsOnAsh(t *testing.T) {
	env := &tool.Env{Computer: nopComputer{}, Shell: "/bin/sh"}
	r, err := tool.ShellExecute{}.Run(context.Background(), env, json.RawMessage(`{"command":"a=(1 2 3); echo ${a[1]}"}`))
	if err != nil || !r.IsError {
		t.Fatalf("bash array on ash: %+v %v", r, err)
	}
	text := r.Content[0].(*llm.Text).Text
	if !strings.Contains(text, "line 1") || !strings.Contains(text, "apk add bash") {
		t.Errorf("message: %q", text)
	}
}

type nopComputer struct{}

func (nopComputer) Run(ctx context.Context, c sandbox.Command) (*sandbox.Result, error) {
	return &sandbox.Result{Output: "ran\n"}, nil
}
func (nopComputer) Exec(ctx context.Context, c sandbox.Command) (*sandbox.Result, error) {
	return &sandbox.Result{Output: "ran\n"}, nil
}
