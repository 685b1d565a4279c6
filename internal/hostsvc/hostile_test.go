package hostsvc

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"den.dev/den/internal/hostfs"
)

// TestHostileArguments feeds every command what a hostile computer
// would: repeated flags, control characters, oversized and non-text
// values. Each must be refused with invalid_args before anything runs.
func TestHostileArguments(t *testing.T) {
	big := strings.Repeat("x", maxText+1)
	tests := []struct {
		cmd  string
		args []string
	}{
		{"den-model", []string{"run", "--model", "openai/gpt-5-mini", "--model", "anthropic/claude-opus-4-1", "--prompt", "hi"}},
		{"den-model", []string{"run", "--model=openai/gpt-5-mini", "-model", "x/y", "--prompt", "hi"}},
		{"den-model", []string{"run", "--model", "openai/gpt-5-mini", "--prompt", "a", "--prompt", "b"}},
		{"den-model", []string{"run", "--model", "a b", "--prompt", "hi"}},
		{"den-model", []string{"run", "--model", "x\n/y", "--prompt", "hi"}},
		{"den-model", []string{"run", "--model", "openai/gpt-5-mini", "--max-tokens", "12abc", "--prompt", "hi"}},
		{"den-model", []string{"run", "--model", "openai/gpt-5-mini", "--", "--model", "other"}},
		{"den-model", []string{"run", "--model", "openai/gpt-5-mini", "--prompt", "bad \xff utf8"}},
		{"den-model", []string{"run", "--model", "openai/gpt-5-mini", "--prompt", "nul\x00byte"}},
		{"den-model", []string{"list", "extra"}},
		{"den-speak", []string{"--voice", "../../../../../etc/shadow", "hello"}},
		{"den-speak", []string{"--voice", "en/../../x", "hello"}},
		{"den-speak", []string{"--voice", "en-us", "--voice", "de", "hello"}},
		{"den-speak", []string{big}},
		{"den-notify", []string{"--title", "a", "--title", "b", "msg"}},
		{"den-notify", []string{"--title", "evil\x1b[2K\rtitle", "msg"}},
		{"den-notify", []string{big}},
		{"den-open", []string{"https://example.org/\x1b]8;;x\x07"}},
		{"den-open", []string{"a", "b"}},
		{"den-ask", []string{"--choices", "a,b", "--choices", "c", "which?"}},
		{"den-ask", []string{"--choices", strings.Repeat("a,", 30), "which?"}},
		{"den-sessions", []string{"send", "../other", "hi"}},
		{"den-sessions", []string{"show", "a", "b"}},
		{"den-config", []string{"set", "agents.a.trust", "full"}},
		{"den-config", []string{"set", "agents.a.model"}},
		{"den-config", []string{"get", "a", "b"}},
		{"den-clipboard", []string{"read", "extra"}},
		{"den-camera", []string{"--prompt", "a", "--prompt", "b"}},
		{"den-camera", []string{"--prompt", "evil\x1b[2K\rprompt"}},
		{"den-speak", []string{"--browser", "--lang", "de", "--lang", "en", "hi"}},
		{"den-speak", []string{"--browser", "--voice", "x\x1b[2K", "hi"}},
		{"den-speak", []string{"--browser", big}},
		{"den-mcp", []string{"frobnicate"}},
		{"den-mcp", []string{"list", "extra"}},
		{"den-mcp", []string{"tools"}},
		{"den-mcp", []string{"tools", "../x"}},
		{"den-mcp", []string{"call", "t"}},
		{"den-mcp", []string{"call", "t", "a b"}},
		{"den-mcp", []string{"call", "t", "echo[2K"}},
		{"den-mcp", []string{"call", "t", "echo", "[1]"}},
		{"den-mcp", []string{"call", "t", "echo", "{} {}"}},
		{"den-mcp", []string{"call", "t", "echo", "{", "extra"}},
		{"den-mcp", []string{"call", "t", "echo", "{\"a\": \"\xff\"}"}},
		{"den-mcp", []string{"read", "t", "x\x1b[2K"}},
		{"den-mcp", []string{"read", "t", ""}},
	}
	ran := false
	s := &Service{
		Emit:     func(Event) { ran = true },
		Ask:      func(context.Context, string, []string) (string, error) { ran = true; return "", nil },
		Sessions: &fakeSessions{}, Models: &fakeModels{}, Config: fakeConfig{},
		Attachments: t.TempDir(),
		LookPath:    func(n string) (string, error) { return "/bin/true", nil },
		Device:      func(context.Context, string, string, any) (json.RawMessage, error) { ran = true; return nil, nil },
		MCP:         &fakeMCP{ran: &ran},
	}
	t.Setenv("DISPLAY", ":0")
	for _, tt := range tests {
		p, bad := parse(t, s, tt.cmd, tt.args, "")
		if p != nil || bad == nil || bad.Code != CodeInvalidArgs {
			shown := strings.Join(tt.args, " ")
			if len(shown) > 100 {
				shown = shown[:100] + "…"
			}
			t.Errorf("%s %q: want invalid_args, got plan %+v, result %+v", tt.cmd, shown, p, bad)
		}
	}
	if ran {
		t.Error("a refused call ran")
	}
}

// TestModelGateSeesWhatRuns: the subject the gate decides on is the
// model the call runs, however the flags are spelled.
func TestModelGateSeesWhatRuns(t *testing.T) {
	for _, args := range [][]string{
		{"run", "--model", "openai/gpt-5-mini", "--prompt", "hi"},
		{"run", "--model=openai/gpt-5-mini", "--prompt=hi"},
		{"run", "-model", "openai/gpt-5-mini", "-prompt", "hi"},
		{"run", "--prompt", "hi", "--model", "openai/gpt-5-mini"},
	} {
		m := &fakeModels{}
		s := &Service{Models: m}
		p, bad := parse(t, s, "den-model", args, "")
		if bad != nil {
			t.Fatalf("%q: %+v", args, bad)
		}
		p.Run(context.Background())
		if p.Subject != m.got.Ref || m.got.Ref != "openai/gpt-5-mini" {
			t.Errorf("%q: the gate decided on %q, the call ran %q", args, p.Subject, m.got.Ref)
		}
	}
}

// TestModelStdinBounded: a prompt on standard input larger than den
// takes is refused, not cut.
func TestModelStdinBounded(t *testing.T) {
	s := &Service{Models: &fakeModels{}}
	r := run(t, s, "den-model", []string{"run", "--model", "m/x"}, strings.Repeat("a", maxStdin+1))
	if r.Code != CodeInvalidArgs || !strings.Contains(r.Message, "more than") {
		t.Errorf("oversized stdin: %+v", r)
	}
}

// TestSpeakNeverWritesByName: espeak-ng writes its sound to den, never
// to a path in the computer's folder; a symlink planted there under any
// name is never followed; the file den saves is new and the computer's.
func TestSpeakNeverWritesByName(t *testing.T) {
	espeak, err := exec.LookPath("espeak-ng")
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("espeak-ng not found: install the Debian package espeak-ng")
		}
		t.Skip("espeak-ng not found: install the Debian package espeak-ng")
	}
	dir := t.TempDir()
	victim := filepath.Join(t.TempDir(), "victim")
	os.WriteFile(victim, []byte("host file\n"), 0o644)
	// Plant links under the names den used to write, for the next
	// minute, as the computer could.
	for i := 0; i < 60; i++ {
		name := "speech-" + time.Now().UTC().Add(time.Duration(i)*time.Second).Format("20060102-150405") + ".000.wav"
		os.Symlink(victim, filepath.Join(dir, name))
	}
	var argv []string
	var mu sync.Mutex
	wrapper := filepath.Join(t.TempDir(), "espeak-ng")
	os.WriteFile(wrapper, []byte("#!/bin/sh\nprintf '%s\\n' \"$@\" > "+filepath.Join(filepath.Dir(wrapper), "argv")+"\nexec "+espeak+" \"$@\"\n"), 0o755)
	var owner *hostfs.Owner
	if os.Geteuid() == 0 {
		owner = &hostfs.Owner{UID: 4321, GID: 4321}
	}
	s := &Service{Attachments: dir, Owner: owner, Emit: func(Event) {},
		LookPath: func(string) (string, error) { return wrapper, nil }}
	for i := 0; i < 3; i++ {
		r := run(t, s, "den-speak", []string{"good", "morning"}, "")
		if r.Code != "" {
			t.Fatalf("speak: %+v", r)
		}
		name := strings.TrimPrefix(r.Data.(map[string]string)["path"], "/den/attachments/")
		fi, err := os.Lstat(filepath.Join(dir, name))
		if err != nil || !fi.Mode().IsRegular() || fi.Size() < 44 {
			t.Fatalf("saved %s: %v %v", name, fi, err)
		}
		if owner != nil && fi.Sys().(*syscall.Stat_t).Uid != 4321 {
			t.Errorf("the audio belongs to %d, not the computer's root", fi.Sys().(*syscall.Stat_t).Uid)
		}
	}
	b, _ := os.ReadFile(filepath.Join(filepath.Dir(wrapper), "argv"))
	mu.Lock()
	argv = strings.Split(strings.TrimSpace(string(b)), "\n")
	mu.Unlock()
	for _, a := range argv {
		if strings.HasPrefix(a, "/") || a == "-w" {
			t.Errorf("espeak-ng was given a path: %q", argv)
		}
	}
	if got, _ := os.ReadFile(victim); string(got) != "host file\n" {
		t.Errorf("a planted link was written through: %q", got)
	}
}

// TestGuestFS: reads of the computer's files never follow a link, never
// open a FIFO or a device, and never read what the computer could not.
func TestGuestFS(t *testing.T) {
	root := t.TempDir()
	ws := t.TempDir()
	os.MkdirAll(filepath.Join(root, "etc"), 0o755)
	os.WriteFile(filepath.Join(root, "etc", "motd"), []byte("rootfs file"), 0o644)
	os.WriteFile(filepath.Join(ws, "a.txt"), []byte("workspace file"), 0o644)
	secret := filepath.Join(t.TempDir(), "secret")
	os.WriteFile(secret, []byte("host secret"), 0o600)
	os.Symlink(secret, filepath.Join(ws, "escape"))
	os.Symlink("a.txt", filepath.Join(ws, "inside-link"))
	os.Symlink("../../../../../../"+secret, filepath.Join(root, "etc", "rel-escape"))
	syscall.Mkfifo(filepath.Join(ws, "fifo"), 0o644)
	g := GuestFS{Rootfs: root, Binds: []GuestBind{{Host: ws, Guest: "/workspace"}}}
	if b, err := g.ReadFile("/etc/motd"); err != nil || string(b) != "rootfs file" {
		t.Errorf("rootfs: %q %v", b, err)
	}
	if b, err := g.ReadFile("/workspace/a.txt"); err != nil || string(b) != "workspace file" {
		t.Errorf("bind: %q %v", b, err)
	}
	for _, p := range []string{"/workspace/escape", "/etc/rel-escape", "/workspace/../../" + secret, "/workspace/inside-link"} {
		if b, err := g.ReadFile(p); err == nil || strings.Contains(string(b), "host secret") {
			t.Errorf("%s: %q %v", p, b, err)
		} else if strings.Contains(p, "link") && !errors.Is(err, hostfs.ErrSymlink) {
			t.Errorf("%s: %v, want a symbolic-link error", p, err)
		}
	}
	done := make(chan error, 1)
	go func() { _, err := g.ReadFile("/workspace/fifo"); done <- err }()
	select {
	case err := <-done:
		if !errors.Is(err, hostfs.ErrNotRegular) {
			t.Errorf("fifo: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("reading a FIFO planted by the computer hangs")
	}
	if _, err := g.ReadFile("/etc"); err == nil {
		t.Error("read a directory")
	}
	if os.Geteuid() != 0 {
		return
	}
	// As root, a file only another user may read is not read for the
	// computer, whose root is an unprivileged uid.
	other := filepath.Join(ws, "private")
	os.WriteFile(other, []byte("private"), 0o600)
	os.Chown(other, 4444, 4444)
	g.As = &hostfs.Identity{UID: 4321, GID: 4321}
	if b, err := g.ReadFile("/workspace/private"); err == nil || bytes.Contains(b, []byte("private")) {
		t.Errorf("read a 0600 file of another user for the computer: %q %v", b, err)
	}
	// A folder seen through its owner reads as that owner.
	g.Binds[0].As = &hostfs.Identity{UID: 4444, GID: 4444}
	if b, err := g.ReadFile("/workspace/private"); err != nil || string(b) != "private" {
		t.Errorf("the folder's owner's file: %q %v", b, err)
	}
}

// FuzzParse: no argument list makes a command panic, and a plan is the
// same however often it is made (one reading of the arguments).
func FuzzParse(f *testing.F) {
	f.Add(0, "run\x00--model\x00a/b\x00--prompt\x00x")
	f.Add(3, "run\x00--model=a\x00-model\x00b")
	f.Add(7, "--voice\x00../x\x00hi")
	f.Add(5, "set\x00agents.a.model\x00x/y")
	f.Fuzz(func(t *testing.T, which int, joined string) {
		cmds := Commands()
		if which < 0 {
			which = -which
		}
		cmd := cmds[which%len(cmds)]
		args := strings.Split(joined, "\x00")
		s := &Service{Emit: func(Event) {}, Sessions: &fakeSessions{}, Models: &fakeModels{}, Config: fakeConfig{},
			Attachments: t.TempDir(), LookPath: func(string) (string, error) { return "", errors.New("none") },
			Ask: func(context.Context, string, []string) (string, error) { return "x", nil }}
		call := func() (*Plan, *Result) {
			return cmd.Parse(s, &Call{Agent: "a", Session: "s1", Args: args, Cwd: "/workspace", Stdin: strings.NewReader("")})
		}
		p1, r1 := call()
		p2, r2 := call()
		if (p1 == nil) != (p2 == nil) || (r1 == nil) != (r2 == nil) {
			t.Fatalf("two parses disagree: %+v %+v / %+v %+v", p1, r1, p2, r2)
		}
		if p1 != nil && (p1.Action != p2.Action || p1.Subject != p2.Subject || p1.Detail != p2.Detail) {
			t.Fatalf("two plans differ: %+v / %+v", p1, p2)
		}
		if p1 != nil && cmd.Name == "den-model" && p1.Action == "run" {
			m := s.Models.(*fakeModels)
			p1.Run(context.Background())
			if m.got.Ref != "" && m.got.Ref != p1.Subject {
				t.Fatalf("gate saw %q, ran %q", p1.Subject, m.got.Ref)
			}
		}
	})
}

// TestFileArgumentsHostile: the commands that read a file the computer
// names (den-model --prompt-file and --image) refuse what the computer
// planted or could not read itself, and never hang on it.
func TestFileArgumentsHostile(t *testing.T) {
	root, ws := t.TempDir(), t.TempDir()
	os.WriteFile(filepath.Join(ws, "ok.txt"), []byte("a fine prompt"), 0o644)
	secret := filepath.Join(t.TempDir(), "secret")
	os.WriteFile(secret, []byte("host secret"), 0o600)
	os.Symlink(secret, filepath.Join(ws, "abs-link"))
	os.Symlink("../../../../../../.."+secret, filepath.Join(ws, "rel-link"))
	os.Mkdir(filepath.Join(ws, "dir"), 0o755)
	os.Symlink(filepath.Dir(secret), filepath.Join(ws, "dirlink"))
	syscall.Mkfifo(filepath.Join(ws, "fifo"), 0o644)
	hostile := []string{"abs-link", "rel-link", "dirlink/secret", "fifo", "dir", "../" + filepath.Base(ws) + "/ok.txt/..", "/workspace/../../" + secret, secret, "missing"}
	if os.Geteuid() == 0 {
		// A device node, as an imported archive could hold (nothing
		// inside can make one): den must not read the host's memory.
		if err := syscall.Mknod(filepath.Join(ws, "mem"), syscall.S_IFCHR|0o644, int(unix.Mkdev(1, 1))); err == nil {
			hostile = append(hostile, "mem")
		}
		os.WriteFile(filepath.Join(ws, "theirs"), []byte("private"), 0o600)
		os.Chown(filepath.Join(ws, "theirs"), 4444, 4444)
		hostile = append(hostile, "theirs")
	}
	files := GuestFS{Rootfs: root, Binds: []GuestBind{{Host: ws, Guest: "/workspace"}}}
	if os.Geteuid() == 0 {
		files.As = &hostfs.Identity{UID: 4321, GID: 4321}
	}
	for _, name := range hostile {
		for _, flag := range []string{"--prompt-file", "--image"} {
			m := &fakeModels{}
			s := &Service{Models: m, Files: files}
			args := []string{"run", "--model", "m/x", flag, name}
			if flag == "--image" {
				args = append(args, "--prompt", "look")
			}
			p, bad := parse(t, s, "den-model", args, "")
			if bad != nil {
				continue // refused before it ran: fine
			}
			done := make(chan Result, 1)
			go func() { done <- p.Run(context.Background()) }()
			select {
			case r := <-done:
				if r.Code == "" || strings.Contains(m.got.Prompt, "host secret") || strings.Contains(m.got.Prompt, "private") || len(m.got.Image) > 0 {
					t.Errorf("%s %s: read it: %+v (prompt %q)", flag, name, r, m.got.Prompt)
				}
			case <-time.After(10 * time.Second):
				t.Fatalf("%s %s: hangs", flag, name)
			}
		}
	}
	// The plain file is read.
	m := &fakeModels{}
	s := &Service{Models: m, Files: files}
	os.Chown(filepath.Join(ws, "ok.txt"), 4321, 4321)
	if r := run(t, s, "den-model", []string{"run", "--model", "m/x", "--prompt-file", "ok.txt"}, ""); r.Code != "" || m.got.Prompt != "a fine prompt" {
		t.Errorf("a plain file: %+v", r)
	}
}

// fakeMCP records that something ran.
type fakeMCP struct {
	ran  *bool
	args json.RawMessage
}

func (f *fakeMCP) Servers() []MCPServer { *f.ran = true; return nil }
func (f *fakeMCP) Tools(context.Context, string) ([]MCPTool, error) {
	*f.ran = true
	return nil, nil
}
func (f *fakeMCP) Call(_ context.Context, server, tool string, args json.RawMessage) (any, error) {
	*f.ran, f.args = true, args
	if server == "gone" {
		return nil, &MCPError{Code: CodeNotAvailable, Message: "gone is unavailable"}
	}
	return map[string]string{"called": server + "/" + tool}, nil
}
func (f *fakeMCP) Resources(context.Context, string) (any, error) { *f.ran = true; return nil, nil }
func (f *fakeMCP) Read(context.Context, string, string) (any, error) {
	*f.ran = true
	return nil, nil
}
func (f *fakeMCP) Prompts(context.Context, string) (any, error) { *f.ran = true; return nil, nil }

// TestMCPCall: den-mcp call reads its arguments from the command line
// or standard input, names its subject SERVER/TOOL for the gate, and
// gives a failure the envelope's code.
func TestMCPCall(t *testing.T) {
	ran := false
	f := &fakeMCP{ran: &ran}
	s := &Service{MCP: f}
	p, bad := parse(t, s, "den-mcp", []string{"call", "files", "read_file", `{"path": "/x"}`}, "")
	if bad != nil || p.Action != "call" || p.Subject != "files/read_file" {
		t.Fatalf("plan %+v %+v", p, bad)
	}
	if r := p.Run(context.Background()); r.Code != "" || string(f.args) != `{"path": "/x"}` {
		t.Errorf("run: %+v, args %s", r, f.args)
	}
	p, bad = parse(t, s, "den-mcp", []string{"call", "files", "read_file"}, `{"path": "/from/stdin"}`)
	if bad != nil {
		t.Fatal(bad)
	}
	if p.Run(context.Background()); string(f.args) != `{"path": "/from/stdin"}` {
		t.Errorf("stdin args %s", f.args)
	}
	p, _ = parse(t, s, "den-mcp", []string{"call", "gone", "x"}, "")
	if r := p.Run(context.Background()); r.Code != CodeNotAvailable || r.Message != "gone is unavailable" {
		t.Errorf("failure: %+v", r)
	}
	if _, bad := parse(t, &Service{}, "den-mcp", []string{"list"}, ""); bad == nil || bad.Code != CodeNotAvailable {
		t.Errorf("without servers: %+v", bad)
	}
}
