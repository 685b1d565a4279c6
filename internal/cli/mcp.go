package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"den.dev/den/internal/computer"
	"den.dev/den/internal/config"
	"den.dev/den/internal/egress"
	"den.dev/den/internal/mcpclient"
	"den.dev/den/internal/permission"
	"den.dev/den/internal/session"
)

// mcpCmd is den mcp: den as a client of MCP servers. Its subcommands
// are the servers' file's (list, add, remove, enable, disable, import)
// and the servers' own (tools, test, login, logout). A face that
// serves den over MCP adds its own subcommands to the command this
// returns (cli.go: c.AddCommand(mcpServeCmd(g))); nothing here depends
// on them.
func mcpCmd(g *globals) *cobra.Command {
	c := &cobra.Command{
		Use:   "mcp",
		Short: "Connect MCP servers, whose tools become the agent's",
		Long: `MCP servers give the agent tools (and resources and prompts). den keeps them in
mcp.json beside config.toml, in the format Claude Desktop and Claude Code write
({"mcpServers": {NAME: {...}}}), with keys of its own. A server den starts
(command, args, env) runs inside the agent's computer unless it is marked
"host"; a server at a url is reached from the host, with its headers and,
after den mcp login, an OAuth token. The model sees each tool as
mcp__SERVER__TOOL, and every call goes through the permission gate.
See docs/mcp.md.`,
	}
	c.AddCommand(mcpList(g), mcpAdd(g), mcpRemove(g), mcpEnable(g, true), mcpEnable(g, false), mcpImport(g),
		mcpTools(g), mcpTest(g), mcpLogin(g), mcpLogout(g))
	return c
}

// mcpPath is the servers' file: mcp.json beside the config file.
func (g *globals) mcpPath() string {
	if g.configPath != "" {
		return mcpclient.PathBeside(g.configPath)
	}
	return mcpclient.PathBeside(config.DefaultPath())
}

func (g *globals) mcpFile() (*mcpclient.File, error) {
	return mcpclient.Load(g.mcpPath())
}

// mcpServer is the named server of the file.
func (g *globals) mcpServer(name string) (*mcpclient.File, *mcpclient.Server, error) {
	f, err := g.mcpFile()
	if err != nil {
		return nil, nil, err
	}
	s := f.Get(name)
	if s == nil {
		return f, nil, usageError{fmt.Errorf("no MCP server %q in %s (den mcp list shows them)", name, g.mcpPath())}
	}
	return f, s, nil
}

// whereText says where a server runs, for people: a host server runs
// with their rights, and says so.
func whereText(s *mcpclient.Server) string {
	switch w := s.Where(); w {
	case "host":
		return "HOST (your rights, clean env)"
	case "computer":
		return "computer"
	default:
		return w
	}
}

func mcpList(g *globals) *cobra.Command {
	var agent string
	var asJSON bool
	c := &cobra.Command{
		Use:   "list",
		Short: "List the MCP servers: where each runs, whether it is on, for which agents",
		Long: `List the servers of mcp.json. WHERE is "computer" (inside the agent's computer:
it can do what the computer can), "HOST" (on this machine, with your rights and
a clean environment), or the transport and host of a server den reaches.
TOOLS is how many tools den last saw the server offer to --agent ("-" before
it first listed them). AUTH says whether den holds an OAuth token for it.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			f, err := g.mcpFile()
			if err != nil {
				return err
			}
			set := mcpclient.NewSet(mcpclient.Options{Agent: agent, Servers: f.Servers, DataDir: DataDir(g.dataDir)})
			defer set.Close()
			tokens := &mcpclient.Tokens{Dir: mcpclient.TokenDir(DataDir(g.dataDir))}
			type serverJSON struct {
				Name     string   `json:"name"`
				Type     string   `json:"type"`
				Where    string   `json:"where"`
				Host     bool     `json:"host"`
				Enabled  bool     `json:"enabled"`
				Agents   []string `json:"agents"`
				Tools    int      `json:"tools"`
				Token    bool     `json:"token"`
				Command  string   `json:"command,omitempty"`
				URL      string   `json:"url,omitempty"`
				Egress   string   `json:"egress,omitempty"`
				Allow    []string `json:"allow,omitempty"`
				Network  string   `json:"network"`
				Warnings []string `json:"-"`
			}
			var out []serverJSON
			for _, st := range set.Status() {
				s := st.Server
				out = append(out, serverJSON{Name: s.Name, Type: s.Type, Where: s.Where(), Host: s.Type == mcpclient.Stdio && s.Host, Enabled: s.Enabled,
					Agents: nonNilStrings(s.Agents), Tools: st.Tools, Token: s.Type != mcpclient.Stdio && tokens.Has(s),
					// Arguments shaped like secrets are not printed.
					Command: strings.TrimSpace(s.Command + " " + strings.Join(permission.Redact(s.Args), " ")), URL: s.URL,
					Egress: s.Egress, Allow: s.Allow, Network: networkText(s)})
			}
			if asJSON {
				if out == nil {
					out = []serverJSON{}
				}
				return json.NewEncoder(g.stdout).Encode(map[string]any{"file": g.mcpPath(), "servers": out, "warnings": nonNilStrings(f.Warnings)})
			}
			if len(out) == 0 {
				fmt.Fprintf(g.stdout, "no MCP servers in %s (den mcp add NAME -- COMMAND, or den mcp import FILE)\n", g.mcpPath())
			} else {
				tw := tabwriter.NewWriter(g.stdout, 0, 4, 2, ' ', 0)
				fmt.Fprintln(tw, "NAME\tWHERE\tENABLED\tAGENTS\tTOOLS\tAUTH\tNETWORK\tRUNS")
				for i, s := range out {
					agents, tools, auth := "all", "-", "-"
					if len(s.Agents) > 0 {
						agents = strings.Join(s.Agents, ",")
					}
					if s.Tools >= 0 {
						tools = fmt.Sprint(s.Tools)
					}
					if s.Token {
						auth = "token"
					}
					runs := s.URL
					if runs == "" {
						runs = s.Command
					}
					fmt.Fprintf(tw, "%s\t%s\t%v\t%s\t%s\t%s\t%s\t%s\n", s.Name, whereText(f.Servers[i]), s.Enabled, agents, tools, auth, s.Network, permission.Printable(clip(runs, 60)))
				}
				tw.Flush()
			}
			for _, w := range f.Warnings {
				fmt.Fprintln(g.stderr, "den: warning:", w)
			}
			return nil
		},
	}
	c.Flags().StringVar(&agent, "agent", "default", "count the tools den last saw for this agent")
	c.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	return c
}

func nonNilStrings(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

// kv parses K=V (or, for headers, "K: V").
func kv(s string, headers bool) (mcpclient.KV, error) {
	k, v, ok := strings.Cut(s, "=")
	if headers {
		if hk, hv, hok := strings.Cut(s, ":"); hok && (!ok || len(hk) < len(k)) {
			k, v, ok = hk, strings.TrimSpace(hv), true
		}
	}
	if !ok || strings.TrimSpace(k) == "" {
		if headers {
			return mcpclient.KV{}, fmt.Errorf("%q: want NAME=VALUE or \"Name: value\"", s)
		}
		return mcpclient.KV{}, fmt.Errorf("%q: want NAME=VALUE", s)
	}
	return mcpclient.KV{Key: strings.TrimSpace(k), Value: v}, nil
}

func mcpAdd(g *globals) *cobra.Command {
	var host, sse bool
	var url, clientID, clientSecret, egressMode string
	var envs, headers, agents, scopes, allow []string
	var timeout, startup float64
	var callbackPort int
	c := &cobra.Command{
		Use:   "add NAME [flags] -- COMMAND [ARGS...] | add NAME --url URL [flags]",
		Short: "Add an MCP server: a command den starts, or a url den reaches",
		Long: `Add a server to mcp.json.

  den mcp add NAME [--host] [--env K=V]... -- COMMAND [ARGS...]
      a server den starts and speaks to on its stdin and stdout. It runs inside
      the agent's computer (install what it needs there first: apt-get install
      -y nodejs npm, or apk add nodejs npm, for npx), unless --host: then it
      runs on this machine with your rights, with PATH=/usr/local/bin:/usr/bin:/bin,
      its own HOME under den's data, and only the variables --env gives.
      --egress allowlist --allow HOST... gives the server a network policy of
      its own (as an agent's: open, allowlist, ask or off): in the computer it
      replaces the agent's for the server; on the host it confines the server,
      which otherwise has this machine's network.
  den mcp add NAME --url URL [--header K=V]... [--sse]
      a server den reaches over streamable HTTP (or, with --sse, the older
      HTTP with server-sent events). den mcp login NAME authorizes den when the
      server wants OAuth.

Values may hold ${VAR} or ${VAR:-default}: den's environment, read when the
server starts. mcp.json is written whole, mode 0600: it holds secrets.`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			name := args[0]
			if err := mcpclient.ValidName(name); err != nil {
				return usageError{err}
			}
			command := args[1:]
			dash := cmd.ArgsLenAtDash()
			switch {
			case url == "" && (dash != 1 || len(command) == 0):
				return usageError{errors.New("give the server's command after --, or --url URL: den mcp add NAME -- COMMAND [ARGS...]")}
			case url != "" && len(command) > 0:
				return usageError{errors.New("a server is either a command (after --) or a --url, not both")}
			case url != "" && (host || len(envs) > 0):
				return usageError{errors.New("--host and --env are for servers den starts; den reaches a --url from the host")}
			case url == "" && (sse || len(headers) > 0 || clientID != "" || callbackPort != 0):
				return usageError{errors.New("--sse, --header, --client-id and --callback-port are for servers at a --url")}
			case url != "" && (egressMode != "" || len(allow) > 0):
				return usageError{errors.New("--egress and --allow are for servers den starts; den itself reaches a --url")}
			case len(allow) > 0 && egressMode == "":
				return usageError{errors.New("--allow needs --egress allowlist (or ask) for the rules to decide")}
			}
			if _, err := egress.ParsePolicy(egressMode, allow); err != nil {
				return usageError{err}
			}
			s := &mcpclient.Server{Name: name, Enabled: true, Host: host, Agents: agents, Egress: egressMode, Allow: allow,
				Timeout: time.Duration(timeout * float64(time.Second)), StartupTimeout: time.Duration(startup * float64(time.Second))}
			if url != "" {
				s.Type, s.URL = mcpclient.HTTP, url
				if sse {
					s.Type = mcpclient.SSE
				}
			} else {
				s.Type, s.Command, s.Args = mcpclient.Stdio, command[0], command[1:]
			}
			for _, e := range envs {
				v, err := kv(e, false)
				if err != nil {
					return usageError{fmt.Errorf("--env %w", err)}
				}
				s.Env = append(s.Env, v)
			}
			for _, h := range headers {
				v, err := kv(h, true)
				if err != nil {
					return usageError{fmt.Errorf("--header %w", err)}
				}
				s.Headers = append(s.Headers, v)
			}
			if clientID != "" || clientSecret != "" || callbackPort != 0 || len(scopes) > 0 {
				s.OAuth = &mcpclient.OAuth{ClientID: clientID, ClientSecret: clientSecret, CallbackPort: callbackPort, Scopes: scopes}
			}
			f, err := g.mcpFile()
			if err != nil {
				return err
			}
			if f.Get(name) != nil {
				return usageError{fmt.Errorf("there is already an MCP server %q (den mcp remove %s first)", name, name)}
			}
			f.Set(s)
			// The file as it will be read: what den writes, it takes back.
			data, err := f.Marshal()
			if err != nil {
				return err
			}
			if _, err := mcpclient.Parse(data); err != nil {
				return usageError{err}
			}
			if err := f.Save(g.mcpPath()); err != nil {
				return err
			}
			fmt.Fprintf(g.stdout, "added %s (%s) to %s\n", name, whereText(s), g.mcpPath())
			if s.Type == mcpclient.Stdio && s.Host {
				fmt.Fprintln(g.stdout, "It runs on this machine with your rights, outside the agent's computer.")
			}
			if s.Type == mcpclient.Stdio {
				fmt.Fprintf(g.stdout, "Its network: %s.\n", networkText(s))
			}
			fmt.Fprintf(g.stdout, "den mcp test %s starts it and lists what it offers.\n", name)
			return nil
		},
	}
	fl := c.Flags()
	fl.BoolVar(&host, "host", false, "run the server on this machine, with your rights, instead of inside the agent's computer")
	fl.StringArrayVar(&envs, "env", nil, "an environment variable of the server: K=V (repeatable)")
	fl.StringVar(&egressMode, "egress", "", "the server's own egress policy: open, allowlist, ask or off (default: in the computer the agent's; on the host none)")
	fl.StringArrayVar(&allow, "allow", nil, "a host the server may reach under --egress allowlist or ask (repeatable)")
	fl.StringVar(&url, "url", "", "the server's URL (streamable HTTP, or SSE with --sse)")
	fl.StringArrayVar(&headers, "header", nil, "an HTTP header: K=V or \"K: V\" (repeatable)")
	fl.BoolVar(&sse, "sse", false, "the server speaks the older HTTP with server-sent events")
	fl.StringArrayVar(&agents, "agent", nil, "only this agent has the server (repeatable; default every agent)")
	fl.Float64Var(&timeout, "timeout", 0, "seconds one call may take (default 60)")
	fl.Float64Var(&startup, "startup-timeout", 0, "seconds starting and initializing may take (default 60)")
	fl.StringVar(&clientID, "client-id", "", "OAuth client id registered for den with the server's authorization server")
	fl.StringVar(&clientSecret, "client-secret", "", "OAuth client secret that goes with --client-id (may be ${VAR})")
	fl.IntVar(&callbackPort, "callback-port", 0, "loopback port of the OAuth redirect URI (for a --client-id registered with one)")
	fl.StringArrayVar(&scopes, "scope", nil, "OAuth scope to ask for (repeatable; default the server's)")
	return c
}

func mcpRemove(g *globals) *cobra.Command {
	return &cobra.Command{
		Use:   "remove NAME",
		Short: "Remove an MCP server, and den's token for it",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			f, _, err := g.mcpServer(args[0])
			if err != nil {
				return err
			}
			f.Remove(args[0])
			if err := f.Save(g.mcpPath()); err != nil {
				return err
			}
			if err := (&mcpclient.Tokens{Dir: mcpclient.TokenDir(DataDir(g.dataDir))}).Remove(args[0]); err != nil {
				return err
			}
			fmt.Fprintf(g.stdout, "removed %s\n", args[0])
			return nil
		},
	}
}

func mcpEnable(g *globals, on bool) *cobra.Command {
	use, short := "enable NAME", "Turn an MCP server back on"
	if !on {
		use, short = "disable NAME", "Turn an MCP server off, keeping it in mcp.json"
	}
	return &cobra.Command{
		Use:   use,
		Short: short,
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			f, s, err := g.mcpServer(args[0])
			if err != nil {
				return err
			}
			s.Enabled = on
			if err := f.Save(g.mcpPath()); err != nil {
				return err
			}
			state := "enabled"
			if !on {
				state = "disabled"
			}
			fmt.Fprintf(g.stdout, "%s %s (sessions whose computer starts from now on)\n", state, s.Name)
			return nil
		},
	}
}

func mcpImport(g *globals) *cobra.Command {
	var replace bool
	c := &cobra.Command{
		Use:   "import FILE",
		Short: "Add the MCP servers of another client's file (Claude Desktop, Claude Code, Cursor, VS Code)",
		Long: `Add the servers of claude_desktop_config.json, a project's .mcp.json,
~/.claude.json (its servers and every project's), Cursor's mcp.json or VS
Code's mcp.json. A server whose name is already in mcp.json is left as it is
unless --replace. Servers den starts will run inside the agent's computer:
add "host": true (den mcp add --host) for one that must run on this machine.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			data, err := os.ReadFile(args[0])
			if err != nil {
				return err
			}
			servers, notes, err := mcpclient.Import(data)
			if err != nil {
				var ce *mcpclient.ConfigError
				if errors.As(err, &ce) {
					ce.File = args[0]
				}
				return err
			}
			f, err := g.mcpFile()
			if err != nil {
				return err
			}
			added := 0
			for _, s := range servers {
				if f.Get(s.Name) != nil && !replace {
					fmt.Fprintf(g.stdout, "kept %s: mcp.json has a server of that name (--replace takes the imported one)\n", s.Name)
					continue
				}
				f.Set(s)
				added++
				fmt.Fprintf(g.stdout, "imported %s (%s)\n", s.Name, whereText(s))
			}
			for _, n := range notes {
				fmt.Fprintln(g.stdout, "note:", n)
			}
			if added == 0 {
				return nil
			}
			return f.Save(g.mcpPath())
		},
	}
	c.Flags().BoolVar(&replace, "replace", false, "replace servers of the same name")
	return c
}

// mcpSet is a set of one server for den mcp tools and test: a server
// of the computer runs in the agent's computer (provisioned if need
// be), session "default"; host and remote ones need no computer (a
// confined host server, only its backend).
func (g *globals) mcpSet(ctx context.Context, s *mcpclient.Server, agent string) (*mcpclient.Set, permission.Policy, error) {
	cfg, err := g.config()
	if err != nil {
		return nil, permission.Policy{}, err
	}
	ac := cfg.Agent(agent)
	policy, err := permission.ParsePolicy(ac.Trust, ac.Permissions, ac.AllowedModels)
	if err != nil {
		return nil, policy, fmt.Errorf("config: agents.%s: %w", agent, err)
	}
	o := mcpclient.Options{Agent: agent, Session: "default", Servers: []*mcpclient.Server{s}, DataDir: DataDir(g.dataDir), Policy: policy, Version: Version}
	_, confined, err := s.EgressPolicy()
	if err != nil {
		return nil, policy, err
	}
	switch {
	case s.Type == mcpclient.Stdio && s.Host && confined:
		// A host server with a policy of its own is confined by the
		// computers' backend and den's egress: the agent's computer
		// need not exist.
		m, _, err := g.manager()
		if err != nil {
			return nil, policy, err
		}
		comp, err := m.Computer(agent)
		if err != nil {
			return nil, policy, usageError{err}
		}
		_, o.HostNet = session.MCPStarts(comp, "default", computer.SessionOptions{}, nil)
	case s.Type == mcpclient.Stdio && !s.Host:
		f := computerFlags{agent: agent, session: "default"}
		comp, so, err := f.open(ctx, g)
		if err != nil {
			return nil, policy, err
		}
		info, _, _ := comp.Info()
		o.PackageManager = string(info.PackageManager)
		o.Computer, o.HostNet = session.MCPStarts(comp, "default", so, nil)
	}
	return mcpclient.NewSet(o), policy, nil
}

func mcpTools(g *globals) *cobra.Command {
	var agent string
	var asJSON bool
	c := &cobra.Command{
		Use:   "tools NAME",
		Short: "Start an MCP server and list its tools: the model's name for each, and what the gate does with a call",
		Long: `Start (or reach) the server and list its tools. MODEL NAME is the tool's name
for the model; CALLS is what the permission gate does with a call of it for
--agent (allow, ask or deny: the server's "permissions" in mcp.json, else den's
defaults by the agent's trust, where the server runs and whether the tool says
it only reads); a tool hidden by the server's "tools" filter is marked so.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			_, s, err := g.mcpServer(args[0])
			if err != nil {
				return err
			}
			set, policy, err := g.mcpSet(cmd.Context(), s, agent)
			if err != nil {
				return err
			}
			defer set.Close()
			tools, err := set.Tools(cmd.Context(), s.Name)
			if err != nil {
				printLog(g, set.Log(s.Name))
				return err
			}
			var refs []mcpclient.ToolRef
			for _, t := range tools {
				refs = append(refs, mcpclient.ToolRef{Server: s.Name, Tool: t.Name})
			}
			names := mcpclient.ModelNames(refs)
			type toolJSON struct {
				Name        string `json:"name"`
				ModelName   string `json:"model_name"`
				Description string `json:"description"`
				ReadOnly    bool   `json:"read_only"`
				Shown       bool   `json:"shown"`
				Decision    string `json:"decision"`
				InputSchema any    `json:"input_schema"`
			}
			var out []toolJSON
			for _, t := range tools {
				ro := t.Annotations != nil && t.Annotations.ReadOnlyHint
				out = append(out, toolJSON{Name: t.Name, ModelName: names[mcpclient.ToolRef{Server: s.Name, Tool: t.Name}], Description: t.Description,
					ReadOnly: ro, Shown: s.Shows(t.Name), Decision: string(s.Decide(policy, t.Name, ro)), InputSchema: t.InputSchema})
			}
			if asJSON {
				if out == nil {
					out = []toolJSON{}
				}
				return json.NewEncoder(g.stdout).Encode(out)
			}
			tw := tabwriter.NewWriter(g.stdout, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "TOOL\tMODEL NAME\tREAD-ONLY\tCALLS\tDESCRIPTION")
			for _, t := range out {
				calls := t.Decision
				if !t.Shown {
					calls = "hidden"
				}
				desc, _, _ := strings.Cut(strings.TrimSpace(t.Description), "\n")
				fmt.Fprintf(tw, "%s\t%s\t%v\t%s\t%s\n", permission.Printable(t.Name), t.ModelName, t.ReadOnly, calls, permission.Printable(clip(desc, 70)))
			}
			return tw.Flush()
		},
	}
	c.Flags().StringVar(&agent, "agent", "default", "agent whose computer and trust to use")
	c.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	return c
}

// printLog prints a server's log on stderr.
func printLog(g *globals, log string) {
	log = strings.TrimSpace(log)
	if log == "" {
		return
	}
	fmt.Fprintln(g.stderr, "the server's log:")
	for _, line := range strings.Split(log, "\n") {
		fmt.Fprintln(g.stderr, "  "+permission.Printable(line))
	}
}

func mcpTest(g *globals) *cobra.Command {
	var agent string
	c := &cobra.Command{
		Use:   "test NAME",
		Short: "Start an MCP server, say what it offers, and show its log",
		Long: `Start (or reach) the server as a session would — inside --agent's computer,
on the host, or at its url —, initialize it, count its tools, prompts and
resources, and print its log: the end of its stderr, what it wrote on stdout
that was not MCP, and den's notes. It exits 1 when the server cannot be used.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			_, s, err := g.mcpServer(args[0])
			if err != nil {
				return err
			}
			set, _, err := g.mcpSet(cmd.Context(), s, agent)
			if err != nil {
				return err
			}
			defer set.Close()
			start := time.Now()
			init, err := set.Connect(cmd.Context(), s.Name)
			if err != nil {
				printLog(g, set.Log(s.Name))
				fmt.Fprintln(g.stderr, "den:", err)
				return exitError{1}
			}
			took := time.Since(start)
			fmt.Fprintf(g.stdout, "%s: %s\n", s.Name, whereText(s))
			if init != nil && init.ServerInfo != nil {
				fmt.Fprintf(g.stdout, "server: %s %s (protocol %s), ready in %v\n", permission.Printable(init.ServerInfo.Name),
					permission.Printable(init.ServerInfo.Version), init.ProtocolVersion, took.Round(time.Millisecond))
			}
			tools, err := set.Tools(cmd.Context(), s.Name)
			if err != nil {
				printLog(g, set.Log(s.Name))
				fmt.Fprintln(g.stderr, "den:", err)
				return exitError{1}
			}
			shown := 0
			for _, t := range tools {
				if s.Shows(t.Name) {
					shown++
				}
			}
			fmt.Fprintf(g.stdout, "tools: %d (%d shown to the model)\n", len(tools), shown)
			if ps, err := set.Prompts(cmd.Context(), s.Name); err == nil {
				fmt.Fprintf(g.stdout, "prompts: %d\n", len(ps))
			}
			if rs, _, err := set.Resources(cmd.Context(), s.Name); err == nil {
				fmt.Fprintf(g.stdout, "resources: %d\n", len(rs))
			}
			if log := strings.TrimSpace(set.Log(s.Name)); log != "" {
				fmt.Fprintln(g.stdout, "log:")
				for _, line := range strings.Split(log, "\n") {
					fmt.Fprintln(g.stdout, "  "+permission.Printable(line))
				}
			}
			return nil
		},
	}
	c.Flags().StringVar(&agent, "agent", "default", "agent whose computer runs the server")
	return c
}

func mcpLogin(g *globals) *cobra.Command {
	var timeout time.Duration
	c := &cobra.Command{
		Use:   "login NAME",
		Short: "Authorize den with an MCP server's OAuth (opens a browser, or prints the page to open)",
		Long: `Get an OAuth token for a server at a url, as the MCP authorization spec has it:
den finds the server's authorization server, registers itself (or uses the
server's oauth.clientId), and has you authorize it in a browser; the browser
comes back to a loopback address den listens on (http://127.0.0.1:PORT/callback).
With a display, den opens the page (xdg-open); otherwise it prints it: open it
on this machine (an SSH tunnel of the port works). The token is kept in den's
data folder (mcp/tokens, mode 0600), renewed when it expires, and never shown
to the agent or its computer.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			_, s, err := g.mcpServer(args[0])
			if err != nil {
				return err
			}
			ctx, cancel := context.WithTimeout(cmd.Context(), timeout)
			defer cancel()
			tokens := &mcpclient.Tokens{Dir: mcpclient.TokenDir(DataDir(g.dataDir))}
			err = mcpclient.Login(ctx, s, tokens, mcpclient.LoginOptions{
				Open: openBrowser,
				Say:  func(msg string) { fmt.Fprintln(g.stderr, msg) },
			})
			if err != nil {
				return err
			}
			fmt.Fprintf(g.stdout, "den is authorized with %s\n", s.Name)
			return nil
		},
	}
	c.Flags().DurationVar(&timeout, "timeout", 5*time.Minute, "how long to wait for the authorization")
	return c
}

// openBrowser opens url in the desktop's browser, when there is a
// desktop.
func openBrowser(url string) error {
	if os.Getenv("DISPLAY") == "" && os.Getenv("WAYLAND_DISPLAY") == "" {
		return errors.New("no display")
	}
	p, err := exec.LookPath("xdg-open")
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	return exec.CommandContext(ctx, p, url).Run()
}

func mcpLogout(g *globals) *cobra.Command {
	return &cobra.Command{
		Use:   "logout NAME",
		Short: "Forget den's OAuth token for an MCP server",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := mcpclient.ValidName(args[0]); err != nil {
				return usageError{err}
			}
			if err := (&mcpclient.Tokens{Dir: mcpclient.TokenDir(DataDir(g.dataDir))}).Remove(args[0]); err != nil {
				return err
			}
			fmt.Fprintf(g.stdout, "den holds no token for %s\n", args[0])
			return nil
		},
	}
}

// networkText says, in a few words, which network policy a server's
// connections go by.
func networkText(s *mcpclient.Server) string {
	pol, own, err := s.EgressPolicy()
	switch {
	case s.Type != mcpclient.Stdio:
		return "den reaches it"
	case err != nil:
		return "bad egress: " + err.Error()
	case own && len(pol.Allow) > 0:
		var rules []string
		for _, r := range pol.Allow {
			rules = append(rules, r.String())
		}
		return fmt.Sprintf("own %s (%s)", pol.Mode, strings.Join(rules, ", "))
	case own:
		return "own " + string(pol.Mode)
	case s.Host:
		return "the host's, unconfined"
	}
	return "the agent's"
}
