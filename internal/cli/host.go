package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"

	"den.dev/den/internal/computer"
	"den.dev/den/internal/config"
	"den.dev/den/internal/hostcmd"
	"den.dev/den/internal/hostsvc"
	"den.dev/den/internal/models"
	"den.dev/den/internal/permission"
	"den.dev/den/internal/sandbox"
	"den.dev/den/internal/store"
)

// hostFaces are what a face offers host commands: where their events go
// and how (and whether) a person is asked.
type hostFaces struct {
	emit   func(any) // hostsvc and permission events
	ask    func(ctx context.Context, question string, choices []string) (string, error)
	prompt func(ctx context.Context, r *permission.ApprovalRequest) (permission.Answer, error)
	mode   permission.Mode
}

// hostCommands builds the host commands of one session: the gate with
// the agent's policy around each command, served on the session's
// socket by a broker of its own.
func hostCommands(dataDir string, cfg *config.Config, st *store.Store, comp *computer.Computer, agentName, session string,
	o computer.SessionOptions, faces hostFaces) (*computer.HostCommands, *permission.Gate, permission.Policy, func(), error) {
	ac := cfg.Agent(agentName)
	policy, err := permission.ParsePolicy(ac.Trust, ac.Permissions, ac.AllowedModels)
	if err != nil {
		return nil, nil, policy, nil, fmt.Errorf("config: agents.%s: %w", agentName, err)
	}
	shim, err := hostcmd.ShimPath(dataDir)
	if err != nil {
		return nil, nil, policy, nil, err
	}
	gate := permission.New(st, agentName, policy, permission.Options{
		Emit:   func(ev permission.Event) { faces.emit(ev) },
		Prompt: faces.prompt,
		Mode:   faces.mode,
	})
	sdir := comp.SessionDir(session)
	fs := hostsvc.GuestFS{Rootfs: comp.Rootfs()}
	for _, d := range sandbox.SessionDirs {
		fs.Binds = append(fs.Binds, hostsvc.GuestBind{Host: filepath.Join(sdir, d.Name), Guest: d.Guest})
	}
	for _, m := range o.Mounts {
		fs.Binds = append(fs.Binds, hostsvc.GuestBind{Host: m.Host, Guest: m.Guest})
	}
	svc := &hostsvc.Service{
		Emit:           func(e hostsvc.Event) { faces.emit(e) },
		Ask:            faces.ask,
		Sessions:       hostSessions{st: st},
		Models:         hostModels{res: &models.Resolver{Config: cfg}, allowed: ac.AllowedModels, st: st, session: session},
		Config:         hostConfig{path: firstNonEmpty(cfg.Path(), config.DefaultPath())},
		AttachmentsDir: filepath.Join(sdir, "attachments"),
		Files:          fs,
	}
	mux := hostcmd.NewMux()
	for _, cmd := range hostsvc.Commands() {
		mux.HandleFunc(cmd.Name, cmd.Usage, func(ctx context.Context, call *hostcmd.Call) int {
			format, args := hostcmd.ParseCommon(call.Args)
			action := cmd.Action(args)
			req := permission.Request{Session: call.Session.Session, Command: cmd.Name, Action: action, Subject: subject(cmd.Name, action, args), Args: args}
			pc, code, err := gate.Do(ctx, req, func(ctx context.Context) int {
				r := cmd.Run(svc, ctx, &hostsvc.Call{Agent: call.Session.Agent, Session: call.Session.Session, Args: args, Cwd: call.Cwd, Stdin: call.Stdin})
				return hostcmd.Write(call.Stdout, envelope(cmd.Name, r), format)
			})
			switch {
			case err != nil:
				return hostcmd.Write(call.Stdout, hostcmd.Fail(cmd.Name, action, hostcmd.CodeInternalError, err.Error()), format)
			case pc.Decision == permission.Deny:
				return hostcmd.Write(call.Stdout, hostcmd.Fail(cmd.Name, action, hostcmd.CodeDenied,
					fmt.Sprintf("%s %s was denied (%s)", cmd.Name, action, pc.By)), format)
			}
			return code
		})
	}
	broker := hostcmd.NewBroker(mux, nil)
	return &computer.HostCommands{Broker: broker, Shim: shim, Names: hostcmd.LinkNames()}, gate, policy, func() { broker.Close() }, nil
}

// subject is what an action acts on, when the policy looks at it.
func subject(cmd, action string, args []string) string {
	switch {
	case cmd == "den-open" && len(args) > 0:
		return args[len(args)-1]
	case cmd == "den-model" && action == "run":
		for i, a := range args {
			if a == "--model" && i+1 < len(args) {
				return args[i+1]
			}
			if v, ok := strings.CutPrefix(a, "--model="); ok {
				return v
			}
		}
	}
	return ""
}

func envelope(tool string, r hostsvc.Result) hostcmd.Envelope {
	if r.Code != "" {
		return hostcmd.Fail(tool, r.Action, r.Code, r.Message)
	}
	return hostcmd.OK(tool, r.Action, r.Data)
}

// hostEventJSON renders host and permission events as den run --json
// lines.
func hostEventJSON(e any) any {
	switch e := e.(type) {
	case *hostsvc.OpenEvent:
		return map[string]any{"type": "open", "target": e.Target}
	case *hostsvc.NotifyEvent:
		return map[string]any{"type": "notify", "title": e.Title, "message": e.Message}
	case *hostsvc.SpeechEvent:
		return map[string]any{"type": "speech", "path": e.Path, "text": e.Text}
	case permission.Event:
		b, err := json.Marshal(e)
		if err != nil {
			return nil
		}
		var m map[string]any
		if json.Unmarshal(b, &m) != nil {
			return nil
		}
		m["type"] = e.Type()
		return m
	}
	return nil
}
