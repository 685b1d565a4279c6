package mcpserver

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"den.dev/den/internal/hostfs"
	"den.dev/den/internal/resource"
	"den.dev/den/internal/sandbox"
)

// Limits of exec.
const (
	// ExecMaxChars is how much output a result holds; beyond it, the
	// first and last halves are kept and the whole is saved in the
	// session's /den/offloads.
	ExecMaxChars = 30000
	// ExecDefaultTimeout and ExecMaxTimeout bound a command, in
	// seconds.
	ExecDefaultTimeout = 600
	ExecMaxTimeout     = 86400
)

// ExecIn is exec's input.
type ExecIn struct {
	Command string `json:"command" jsonschema:"shell source to run with /bin/sh, in the session's /workspace"`
	Timeout int    `json:"timeout,omitempty" jsonschema:"seconds before the command and everything it started are stopped (default 600, at most 86400)"`
	Where
}

// ExecOut is exec's output.
type ExecOut struct {
	Session    string `json:"session" jsonschema:"the session's id"`
	ExitCode   int    `json:"exit_code" jsonschema:"the command's exit status (124 when it timed out)"`
	Output     string `json:"output" jsonschema:"stdout and stderr as they came, escape sequences removed; cut to its first and last 15000 characters when longer"`
	Truncated  bool   `json:"truncated,omitempty" jsonschema:"output was cut"`
	FullOutput string `json:"full_output,omitempty" jsonschema:"when output was cut: the file in den's computer that holds all of it (read it with read_file)"`
	TimedOut   bool   `json:"timed_out,omitempty"`
	Note       string `json:"note,omitempty" jsonschema:"anything unusual: a timeout, the disk cap"`
}

// exec runs the command in the session's computer, once the gate
// allows it.
func (s *Server) exec(ctx context.Context, c *call, in ExecIn) (*mcp.CallToolResult, ExecOut, error) {
	if strings.TrimSpace(in.Command) == "" {
		return nil, ExecOut{}, refusedf("command is empty")
	}
	if in.Timeout < 0 || in.Timeout > ExecMaxTimeout {
		return nil, ExecOut{}, refusedf("timeout %d: want 1 to %d seconds", in.Timeout, ExecMaxTimeout)
	}
	if in.Timeout == 0 {
		in.Timeout = ExecDefaultTimeout
	}
	p, err := s.locate(ctx, c.client, in.Agent, in.Session)
	if err != nil {
		return nil, ExecOut{}, err
	}
	if p, err = s.makeFor(ctx, c, p); err != nil {
		return nil, ExecOut{}, err
	}
	pc, err := s.allow(ctx, c, p, "in the /workspace of session "+p.label(), in.Command)
	if err != nil {
		return nil, ExecOut{}, err
	}
	out, err := s.execIn(ctx, c, p, in)
	code := out.ExitCode
	if err != nil {
		code = 1
	}
	s.done(ctx, pc, code)
	if err != nil {
		return nil, out, err
	}
	return &mcp.CallToolResult{IsError: out.TimedOut}, out, nil
}

func (s *Server) execIn(ctx context.Context, c *call, p place, in ExecIn) (ExecOut, error) {
	p, err := s.make(ctx, p)
	if err != nil {
		return ExecOut{}, err
	}
	s.setPlace(c.ss, p)
	live := &liveOutput{p: c.progress}
	res, err := s.rt.Exec(ctx, p.sess.ID, sandbox.Command{Script: in.Command, Timeout: time.Duration(in.Timeout) * time.Second,
		OnOutput: live.write})
	if err != nil {
		return ExecOut{Session: p.sess.ID}, err
	}
	out := ExecOut{Session: p.sess.ID, ExitCode: res.ExitCode, Output: res.Output, TimedOut: res.TimedOut, Note: res.Note}
	if res.Canceled && ctx.Err() != nil {
		return out, ctx.Err()
	}
	if utf8.RuneCountInString(res.Output) <= ExecMaxChars && !res.Truncated {
		return out, nil
	}
	out.Truncated = true
	out.Output = headTail(res.Output, ExecMaxChars/2)
	out.FullOutput = res.OffloadPath
	if out.FullOutput == "" && !res.Truncated {
		// The sandbox kept all of it (under its own cap): save it.
		if out.FullOutput, err = s.offload(ctx, p, res.Output); err != nil {
			return out, err
		}
	}
	return out, nil
}

// offload saves text in the session's /den/offloads and returns its
// path in the computer.
func (s *Server) offload(ctx context.Context, p place, text string) (string, error) {
	f, err := s.rt.Folders(ctx, p.sess.ID)
	if err != nil {
		return "", err
	}
	d, err := hostfs.OpenDirNamed(f.Offloads, sandbox.GuestOffloads)
	if err != nil {
		return "", fmt.Errorf("mcpserver: offloads: %w", err)
	}
	defer d.Close()
	b := make([]byte, 4)
	rand.Read(b)
	name := fmt.Sprintf("mcp-exec-%s-%s.txt", time.Now().UTC().Format("20060102-150405"), hex.EncodeToString(b))
	if err := d.WriteFile(name, []byte(text), 0o644, f.Owner, true); err != nil {
		return "", fmt.Errorf("mcpserver: offload: %w", err)
	}
	u := resource.URL{Kind: resource.Offloads, Path: name}
	return u.Guest(), nil
}

// headTail keeps the first and last n characters of s, with a line
// saying how much is left out between them.
func headTail(s string, n int) string {
	runes := []rune(s)
	if len(runes) <= 2*n {
		return s
	}
	return fmt.Sprintf("%s\n[… %d characters left out …]\n%s", string(runes[:n]), len(runes)-2*n, string(runes[len(runes)-n:]))
}

// liveOutput tells a command's output as progress while it runs: its
// latest lines, at most every quarter of a second.
type liveOutput struct {
	p    *progress
	mu   sync.Mutex
	buf  strings.Builder
	last time.Time
}

func (l *liveOutput) write(_, text string) {
	if l.p == nil {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.buf.WriteString(text)
	if time.Since(l.last) < 250*time.Millisecond {
		return
	}
	s := l.buf.String()
	if len(s) > maxProgress {
		s = strings.ToValidUTF8(s[len(s)-maxProgress:], "")
	}
	l.buf.Reset()
	l.last = time.Now()
	l.p.say(s)
}
