package session

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"den.dev/den/internal/agent"
	"den.dev/den/internal/cmdscan"
	"den.dev/den/internal/llm"
	"den.dev/den/internal/permission"
	"den.dev/den/internal/sandbox"
	"den.dev/den/internal/skill"
	"den.dev/den/internal/tool"
)

// registryTools adapts the tool registry to the loop, and puts shell
// commands through the command scanner: labels for the faces and, under
// restricted trust, an approval before a command that could destroy
// files in a read-write user mount.
type registryTools struct {
	reg        *tool.Registry
	mcp        *mcpTools // the tools of the session's MCP servers this turn; nil without
	env        *tool.Env
	hidden     map[string]bool   // tools the model does not see (memory, when off)
	skills     *skill.Catalog    // told when the model reads a skill's SKILL.md
	useSkill   func(name string) // and so is this: the skill's egress rules apply
	session    string
	mounts     []cmdscan.Mount
	gate       *permission.Gate
	restricted bool
	denials    *denials      // connections den refused the computer
	checkpoint *checkpointer // nil: no checkpoints
}

func (r *registryTools) Specs() []llm.Tool {
	specs := r.reg.Specs()
	shown := specs[:0]
	for _, s := range specs {
		if !r.hidden[s.Name] {
			shown = append(shown, s)
		}
	}
	if r.mcp != nil {
		shown = append(shown, r.mcp.reg.Specs()...)
	}
	return shown
}

// mcpTools are the tools of the session's MCP servers, in a registry
// of their own: it validates their calls as den's own registry does.
type mcpTools struct{ reg *tool.Registry }

// has reports whether c calls one of them.
func (m *mcpTools) has(c *llm.ToolCall) bool {
	if m == nil {
		return false
	}
	_, ok := m.reg.Tool(c.Name)
	return ok
}

func newToolRegistry(tools []tool.Tool) (*tool.Registry, error) { return tool.NewRegistry(tools...) }

// Concurrent: reads, and shell commands that only read and leave the
// shell as it was (each then gets a fresh process), may run beside the
// other calls of their turn. Anything else runs alone in call order:
// [apt-get install x, x --version] or [mkdir d, cd d] must not race.
func (r *registryTools) Concurrent(c *llm.ToolCall) bool {
	if cmd, ok := shellCommand(c); ok {
		class, err := cmdscan.Classify(cmd, "", r.mounts)
		return err == nil && class.ReadOnly() && !cmdscan.ChangesShell(cmd)
	}
	if r.mcp.has(c) {
		return r.mcp.reg.ReadOnly(*c)
	}
	return c.Name != "shell_execute" && r.reg.ReadOnly(*c)
}

// Labels classifies a shell command for tool cards.
func (r *registryTools) Labels(c *llm.ToolCall) []string {
	cmd, ok := shellCommand(c)
	if !ok {
		return nil
	}
	class, _ := cmdscan.Classify(cmd, "", r.mounts)
	return class.Labels()
}

// CallLabels classifies a stored call's shell command for its card,
// as Labels does when it runs (without the agent's mounts).
func CallLabels(c *llm.ToolCall) []string { return (&registryTools{}).Labels(c) }

func (r *registryTools) Call(ctx context.Context, c *llm.ToolCall, o agent.CallOptions) agent.Outcome {
	env := *r.env
	env.Output = o.Output
	env.Message = o.MessageID
	if r.checkpoint != nil && r.mayChange(c) {
		r.checkpoint.before(ctx, o.MessageID)
	}
	noteSkillRead(r.skills, c, r.useSkill)
	mark := r.denials.mark()
	res, exit := r.call(ctx, &env, c, o.Concurrent)
	// A refused connection shows in a command as a reset or a TLS
	// error: say which host den refused and how the user can allow it.
	if note := r.denials.since(mark); note != "" {
		res.Content = append(res.Content, &llm.Text{Text: "\n" + note})
	}
	return agent.Outcome{Result: res, ExitCode: exit}
}

func (r *registryTools) call(ctx context.Context, env *tool.Env, c *llm.ToolCall, concurrent bool) (llm.ToolResult, *int) {
	if r.hidden[c.Name] {
		return llm.ToolResult{IsError: true, Content: []llm.Part{&llm.Text{Text: fmt.Sprintf("there is no tool %q here: use the tools you were given", c.Name)}}}, nil
	}
	if r.mcp.has(c) {
		// The gate and the audit are the MCP tool's own (mcpclient).
		res, exit, _ := r.mcp.reg.Run(ctx, env, *c, concurrent)
		return res, exit
	}
	if cmd, ok := shellCommand(c); ok && r.restricted && r.gate != nil {
		class, _ := cmdscan.Classify(cmd, "", r.mounts)
		if class.DestroysWritableMount() {
			pc, err := r.gate.Check(ctx, permission.Request{Session: r.session, Command: "shell_execute", Action: "destructive",
				Subject: strings.Join(class.WritableMounts(), ","), Args: []string{cmd}})
			if err != nil || pc.Decision != permission.Allow {
				why := "the user did not approve it"
				if err != nil {
					why = err.Error()
				}
				return llm.ToolResult{IsError: true, Content: []llm.Part{&llm.Text{Text: fmt.Sprintf(
					"not run: this command could delete or overwrite files in the user's folder %s, and %s. Ask the user, or change only files you created.",
					strings.Join(class.WritableMounts(), ", "), why)}}}, nil
			}
			res, exit, _ := r.reg.Run(ctx, env, *c, concurrent)
			code := 0
			if res.IsError {
				code = 1
			}
			if exit != nil {
				code = *exit
			}
			pc.Finish(context.WithoutCancel(ctx), code)
			return res, exit
		}
	}
	// A Go error (the computer is gone, the run was canceled) is also
	// described in the result, which the model reads.
	res, exit, _ := r.reg.Run(ctx, env, *c, concurrent)
	return res, exit
}

func shellCommand(c *llm.ToolCall) (string, bool) {
	if c.Name != "shell_execute" {
		return "", false
	}
	var in struct {
		Command string `json:"command"`
	}
	if json.Unmarshal(c.Input, &in) != nil || in.Command == "" {
		return "", false
	}
	return in.Command, true
}

func scanMounts(binds []sandbox.Bind) []cmdscan.Mount {
	out := make([]cmdscan.Mount, len(binds))
	for i, b := range binds {
		out[i] = cmdscan.Mount{Guest: b.Guest, ReadOnly: b.ReadOnly}
	}
	return out
}
