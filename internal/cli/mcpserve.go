package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/spf13/cobra"

	"den.dev/den/internal/computer"
	"den.dev/den/internal/mcpserver"
	"den.dev/den/internal/permission"
	"den.dev/den/internal/session"
)

func mcpServeCmd(g *globals) *cobra.Command {
	var o mcpserver.Options
	c := &cobra.Command{
		Use:   "serve",
		Short: "Serve den's computer and agent to another agent over MCP, on standard input and output",
		Long: `Serve den as an MCP server on standard input and output, for another agent
(Claude Code, Codex, any MCP client) that starts it:

  claude mcp add den -- den mcp serve
  {"command": "den", "args": ["mcp", "serve"]}

Its tools: run (ask den's agent), exec (a command in den's computer),
read_file, write_file, list_files, sessions_list and session_read; its
resources: den://sessions/ID and den://workspace/PATH (docs/mcp.md).

Every call goes through den's permission gate as a call of the client
(--client, else the name the client gives itself): reads are allowed, run
and write_file as the agent's trust level says, and exec asks the user
unless [mcp_clients.NAME] in den's config allows it. An ask waits for the
user, who answers with den approve ID in another terminal (or in den
serve's web face); unanswered within 5 minutes, the call is denied.
Approvals and den's own messages go to standard error.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := computer.ValidName("agent", o.Agent); err != nil {
				return usageError{err}
			}
			if len(o.Client) > mcpserver.MaxClientName || strings.IndexFunc(o.Client, unicode.IsControl) >= 0 || !utf8.ValidString(o.Client) {
				return usageError{fmt.Errorf("--client %q: want a name of at most %d bytes, one line", o.Client, mcpserver.MaxClientName)}
			}
			if err := mcpserver.CheckTools(o.Tools); err != nil {
				return usageError{fmt.Errorf("--allow-tools: %w", err)}
			}
			return mcpServe(cmd.Context(), g, o)
		},
	}
	c.Flags().StringVar(&o.Agent, "agent", "default", "the agent of calls that name none")
	c.Flags().StringVar(&o.Client, "client", "", "the client's name for den's gate, audit log and [mcp_clients] config (default: the name it gives)")
	c.Flags().StringSliceVar(&o.Tools, "allow-tools", nil, "offer only these tools (comma-separated; default: all of them)")
	return c
}

// mcpServe serves one client on standard input and output until it
// leaves or den is told to stop (Ctrl-C, SIGTERM); either way the calls
// running are canceled (a run's turn, an exec's command). Only MCP goes
// to standard output; everything else to standard error.
func mcpServe(ctx context.Context, g *globals, o mcpserver.Options) error {
	cfg, err := g.config()
	if err != nil {
		return err
	}
	st, err := g.openStore()
	if err != nil {
		return err
	}
	defer st.Close()
	rt, err := session.New(session.Options{
		Store: st, DataDir: DataDir(g.dataDir), Config: cfg, Holder: "den mcp serve",
		Computer: func(ctx context.Context, agentName string) (*computer.Computer, computer.SessionOptions, error) {
			return (&computerFlags{agent: agentName}).open(ctx, g)
		},
	})
	if err != nil {
		return err
	}
	defer rt.Close()
	// Told to stop: the runtime ends the turns and commands running, so
	// that the calls waiting for them return (the SDK waits for them
	// before it lets go of the connection).
	stop := context.AfterFunc(ctx, rt.Close)
	defer stop()
	o.Runtime, o.Version = rt, Version
	o.Log = slog.New(slog.NewTextHandler(g.stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	o.Told = func(r *permission.ApprovalRequest) {
		fmt.Fprintf(g.stderr, "den: approval needed: %s\n     answer with: den approve %s   (or den deny %s)\n", r.Question(), r.ID, r.ID)
	}
	srv := mcpserver.New(o)
	err = srv.Run(ctx, &mcp.IOTransport{Reader: io.NopCloser(g.stdin), Writer: nopCloser{g.stdout}})
	switch {
	case err == nil, errors.Is(err, io.EOF), errors.Is(err, mcp.ErrConnectionClosed):
		return nil // the client left
	case ctx.Err() != nil:
		return exitError{130}
	}
	return err
}

// nopCloser is a writer whose Close does nothing: den's standard output
// stays open for its last words.
type nopCloser struct{ io.Writer }

func (nopCloser) Close() error { return nil }
