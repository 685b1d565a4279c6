package session

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"den.dev/den/internal/computer"
	"den.dev/den/internal/config"
	"den.dev/den/internal/hostcmd"
	"den.dev/den/internal/hostfs"
	"den.dev/den/internal/hostsvc"
	"den.dev/den/internal/models"
	"den.dev/den/internal/permission"
	"den.dev/den/internal/sandbox"
	"den.dev/den/internal/schedule"
	"den.dev/den/internal/store"
)

// Faces are what the faces offer host commands: where their events go
// and how (and whether) a person is asked.
type Faces struct {
	Emit   func(any) // hostsvc and permission events
	Ask    func(ctx context.Context, question string, choices []string) (string, error)
	Prompt func(ctx context.Context, r *permission.ApprovalRequest) (permission.Answer, error)
	Mode   permission.Mode
	ModeOf func() permission.Mode // when set, the mode at each ask
	// Device reaches the user's connected browsers; nil where there are
	// none to reach.
	Device hostsvc.Device
	// Agents starts and follows the session's sub-agents and reaches
	// other agents (den-agent); nil where the face runs none.
	Agents hostsvc.Agents
	// Policy, when set, narrows the agent's policy for the session (a
	// sub-agent's trust and tool allow-list).
	Policy func(permission.Policy) permission.Policy
}

// HostCommands builds the host commands of one session: the gate with
// the agent's policy around each command, served on the session's
// socket by a broker of its own. stop releases them.
//
// mcp gives den-mcp the session's MCP servers, browser den-browser the
// session's browser; nil where the face runs none (the command then
// says it is not available).
func HostCommands(dataDir string, cfg *config.Config, st *store.Store, comp *computer.Computer, agentName, session string,
	o computer.SessionOptions, faces Faces, mcp hostsvc.MCP, browser hostsvc.Browser) (host *computer.HostCommands, gate *permission.Gate, policy permission.Policy, stop func(), err error) {
	ac := cfg.Agent(agentName)
	policy, err = permission.ParsePolicy(ac.Trust, ac.Permissions, ac.AllowedModels)
	if err != nil {
		return nil, nil, policy, nil, fmt.Errorf("config: agents.%s: %w", agentName, err)
	}
	if faces.Policy != nil {
		policy = faces.Policy(policy)
	}
	shim, err := hostcmd.ShimPath(dataDir)
	if err != nil {
		return nil, nil, policy, nil, err
	}
	gate = permission.New(st, agentName, policy, permission.Options{
		Emit:   func(ev permission.Event) { faces.Emit(ev) },
		Prompt: faces.Prompt,
		Mode:   faces.Mode,
		ModeOf: faces.ModeOf,
	})
	svc := &hostsvc.Service{
		Emit:        func(e hostsvc.Event) { faces.Emit(e) },
		Ask:         faces.Ask,
		Sessions:    hostSessions{st: st},
		Models:      hostModels{res: &models.Resolver{Config: cfg}, allowed: ac.AllowedModels, st: st, session: session},
		Config:      hostConfig{path: firstNonEmpty(cfg.Path(), config.DefaultPath())},
		Attachments: filepath.Join(comp.SessionDir(session), "attachments"),
		Device:      faces.Device,
		MCP:         mcp,
		Browser:     browser,
		Agents:      faces.Agents,
		// den serve's scheduler learns of a change from the event the
		// book stores with it.
		Schedules: &schedule.Book{Store: st},
	}
	var files hostsvc.GuestFS
	if files, svc.Owner, err = guestFS(comp, session, o); err != nil {
		return nil, nil, policy, nil, err
	}
	svc.Files = files
	mux := hostcmd.NewMux()
	for _, cmd := range hostsvc.Commands() {
		mux.HandleFunc(cmd.Name, cmd.Usage, func(ctx context.Context, call *hostcmd.Call) int {
			format, args := hostcmd.ParseCommon(call.Args)
			req := permission.Request{Session: call.Session.Session, Command: cmd.Name, Args: args}
			// One parse: the gate decides on the plan that runs.
			p, bad := cmd.Parse(svc, &hostsvc.Call{Agent: call.Session.Agent, Session: call.Session.Session, Args: args, Cwd: call.Cwd, Stdin: call.Stdin})
			if bad != nil {
				req.Action = bad.Action
				code := hostcmd.Write(call.Stdout, envelope(cmd.Name, *bad), format)
				gate.Reject(ctx, req, code)
				return code
			}
			req.Action, req.Subject, req.Detail = p.Action, p.Subject, p.Detail
			pc, code, err := gate.Do(ctx, req, func(ctx context.Context) int {
				return hostcmd.Write(call.Stdout, envelope(cmd.Name, p.Run(ctx)), format)
			})
			switch {
			case err != nil:
				return hostcmd.Write(call.Stdout, hostcmd.Fail(cmd.Name, p.Action, hostcmd.CodeInternalError, err.Error()), format)
			case pc.Decision == permission.Deny:
				return hostcmd.Write(call.Stdout, hostcmd.Fail(cmd.Name, p.Action, hostcmd.CodeDenied,
					fmt.Sprintf("%s %s was denied (%s)", cmd.Name, p.Action, pc.By)), format)
			}
			return code
		})
	}
	broker := hostcmd.NewBroker(mux, nil)
	return &computer.HostCommands{Broker: broker, Shim: shim, Names: hostcmd.LinkNames()}, gate, policy, func() { broker.Close() }, nil
}

// computerOwner is who files den makes for the computer must belong
// to: root inside, when den is root (nil otherwise: den's own ids are
// the computer's root's).
func computerOwner(comp *computer.Computer) *hostfs.Owner {
	ids, err := comp.Manager().IDs()
	uid, gid, ok := ids.Root()
	if err != nil || !ok || os.Geteuid() != 0 {
		return nil
	}
	return &hostfs.Owner{UID: uid, GID: gid}
}

// guestFS is how host commands read the session's computer: every
// folder as the computer's root could read it (a user's folder as its
// owner, when the computer sees the owner as its root). It also
// returns who files den makes for the computer must belong to.
func guestFS(comp *computer.Computer, session string, o computer.SessionOptions) (hostsvc.GuestFS, *hostfs.Owner, error) {
	if _, err := comp.Manager().IDs(); err != nil {
		return hostsvc.GuestFS{}, nil, err
	}
	fs := hostsvc.GuestFS{Rootfs: comp.Rootfs()}
	owner := computerOwner(comp)
	if owner != nil {
		fs.As = &hostfs.Identity{UID: owner.UID, GID: owner.GID}
	}
	sdir := comp.SessionDir(session)
	for _, d := range sandbox.SessionDirs {
		fs.Binds = append(fs.Binds, hostsvc.GuestBind{Host: filepath.Join(sdir, d.Name), Guest: d.Guest})
	}
	for _, d := range sandbox.AgentDirs {
		fs.Binds = append(fs.Binds, hostsvc.GuestBind{Host: comp.AgentDir(d.Name), Guest: d.Guest})
	}
	for _, m := range o.Mounts {
		b := hostsvc.GuestBind{Host: m.Host, Guest: m.Guest}
		if ou, og, ok := comp.Manager().FolderOwner(m.Host); ok {
			b.As = &hostfs.Identity{UID: ou, GID: og}
		}
		fs.Binds = append(fs.Binds, b)
	}
	return fs, owner, nil
}

func envelope(tool string, r hostsvc.Result) hostcmd.Envelope {
	if r.Code != "" {
		return hostcmd.Fail(tool, r.Action, r.Code, r.Message)
	}
	return hostcmd.OK(tool, r.Action, r.Data)
}
