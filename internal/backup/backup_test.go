package backup

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"den.dev/den/internal/llm"
	"den.dev/den/internal/sandbox/idmap"
	"den.dev/den/internal/sandbox/rootfs"
	"den.dev/den/internal/sandbox/sandboxtest"
	"den.dev/den/internal/store"
)

const (
	apiKey    = "sk-live-do-not-leak-0123456789"
	tokenText = "token-do-not-leak-abcdef"
	mcpToken  = "ghp-do-not-leak-xyz"
	cookie    = "cookie-do-not-leak-42"
)

// fixture is a data dir and config dir as den leaves them: a database
// with a session, an agent with a computer (links, a FIFO, a setuid
// file), memory, a skill and its lock, a session's workspace, den's
// secrets and a browser profile.
type fixture struct {
	data, config string
	session      string
}

func newFixture(t *testing.T) fixture {
	t.Helper()
	f := fixture{data: t.TempDir(), config: filepath.Join(t.TempDir(), "den", "config.toml")}
	ctx := context.Background()
	st, err := store.Open(filepath.Join(f.data, "den.db"))
	if err != nil {
		t.Fatal(err)
	}
	sess, err := st.CreateSession(ctx, "default", "anthropic/claude-test")
	if err != nil {
		t.Fatal(err)
	}
	f.session = sess.ID
	if _, err := st.Append(ctx, sess.ID, llm.Message{Role: llm.User, Parts: []llm.Part{&llm.Text{Text: "remember the blue door"}}}); err != nil {
		t.Fatal(err)
	}
	if err := st.AddPushSubscription(ctx, store.PushSubscription{Endpoint: "https://push.example.org/x", P256dh: bytes.Repeat([]byte{4}, 65), Auth: bytes.Repeat([]byte{1}, 16)}); err != nil {
		t.Fatal(err)
	}
	st.Close()

	agent := filepath.Join(f.data, "agents", "default")
	write := func(rel, text string, mode os.FileMode) {
		t.Helper()
		p := filepath.Join(f.data, rel)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(text), mode); err != nil {
			t.Fatal(err)
		}
		unix.Chmod(p, uint32(mode)) // 0o4755 as the kernel reads it
	}
	os.MkdirAll(agent, 0o700)
	if err := rootfs.WriteInfo(filepath.Join(agent, "computer.json"), rootfs.Info{Source: "busybox", Distro: "busybox", Created: time.Now()}); err != nil {
		t.Fatal(err)
	}
	write("agents/default/rootfs/bin/busybox", "#!busybox\n", 0o755)
	write("agents/default/rootfs/usr/bin/su", "setuid\n", 0o4755)
	write("agents/default/rootfs/root/notes.txt", "installed by the agent\n", 0o600)
	os.Symlink("busybox", filepath.Join(agent, "rootfs/bin/sh"))
	os.Symlink("/etc/shadow", filepath.Join(agent, "rootfs/root/abs-link"))
	os.Link(filepath.Join(agent, "rootfs/bin/busybox"), filepath.Join(agent, "rootfs/bin/ls"))
	unix.Mkfifo(filepath.Join(agent, "rootfs/root/pipe"), 0o600)
	write("agents/default/memory/GLOBAL.md", "- The door is blue.\n", 0o644)
	write("agents/default/skills/tidy/SKILL.md", "---\nname: tidy\ndescription: Tidies.\n---\n", 0o644)
	write("agents/default/skills.lock", "{}\n", 0o600)
	write("agents/default/skills.pristine/tidy/SKILL.md", "---\nname: tidy\n---\n", 0o644)
	write("agents/default/sessions/"+f.session+"/workspace/report.md", "# Report\n", 0o644)
	write("agents/default/browser/profile/Cookies", cookie, 0o600)
	write("agents/default/rootfs.old-1234/junk", "old", 0o644)
	write("token", tokenText+"\n", 0o600)
	write("tls/key.pem", "KEY", 0o600)
	write("push/vapid.key", "VAPID", 0o600)
	write("mcp/tokens/github.json", mcpToken, 0o600)
	write("mcp/catalog/default/github.json", "{}", 0o600)
	write("cache/alpine.tar.gz", "cache", 0o644)
	write("den.db-shm", "", 0o600)

	os.MkdirAll(filepath.Dir(f.config), 0o700)
	os.WriteFile(f.config, []byte("# mine\n[providers.work]\ntype = \"openai\"\nbase_url = \"https://llm.example.org/v1\"\napi_key = \""+apiKey+"\"\n"), 0o600)
	os.WriteFile(filepath.Join(filepath.Dir(f.config), "mcp.json"), []byte(`{"mcpServers": {"gh": {"command": "gh", "env": {"GH_TOKEN": "`+mcpToken+`"}}}}`), 0o600)
	os.WriteFile(filepath.Join(filepath.Dir(f.config), "env"), []byte("OPENAI_API_KEY="+apiKey+"\n"), 0o600)
	return f
}

func create(t *testing.T, f fixture, o Options) ([]byte, Summary) {
	t.Helper()
	o.DataDir, o.ConfigPath, o.Version = f.data, f.config, "test"
	var buf bytes.Buffer
	s, err := Create(context.Background(), &buf, o)
	if err != nil {
		t.Fatal(err)
	}
	return buf.Bytes(), s
}

// entries lists an archive's entries and their content.
func entries(t *testing.T, b []byte) (names []string, content []byte) {
	t.Helper()
	gz, err := gzip.NewReader(bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	raw, err := io.ReadAll(gz)
	if err != nil {
		t.Fatal(err)
	}
	tr := tar.NewReader(bytes.NewReader(raw))
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		names = append(names, h.Name)
	}
	return names, raw
}

// TestCreateWithoutSecrets: the archive holds the database, the agent's
// folders and the computer; no secret is in its bytes; the manifest
// says what was left out and which config keys were emptied.
func TestCreateWithoutSecrets(t *testing.T) {
	f := newFixture(t)
	b, s := create(t, f, Options{})
	names, raw := entries(t, b)
	for _, secret := range []string{apiKey, tokenText, mcpToken, cookie, "VAPID"} {
		if bytes.Contains(raw, []byte(secret)) {
			t.Errorf("the archive holds the secret %q", secret)
		}
	}
	if names[0] != ManifestName || names[len(names)-1] != SumsName {
		t.Errorf("first and last entries %q, %q", names[0], names[len(names)-1])
	}
	for _, want := range []string{"config/config.toml", "config/mcp.json", "data/den.db", "data/agents/default/computer.json",
		"data/agents/default/rootfs/bin/sh", "data/agents/default/memory/GLOBAL.md", "data/agents/default/skills.lock",
		"data/agents/default/sessions/" + f.session + "/workspace/report.md"} {
		if !slices.Contains(names, want) {
			t.Errorf("no %s in %q", want, names)
		}
	}
	for _, name := range names {
		for _, bad := range []string{"token", "tls", "push", "mcp/", "browser/", "cache", "rootfs.old", "config/env", "den.db-shm"} {
			if strings.Contains(name, bad) {
				t.Errorf("%s is in the archive", name)
			}
		}
	}
	m := s.Manifest
	if m.Secrets || !m.Computers || m.Schema != store.SchemaVersion() || m.Format != Format || !slices.Equal(m.Agents, []string{"default"}) {
		t.Errorf("manifest %+v", m)
	}
	if !slices.Equal(m.Redacted, []string{"config.toml:providers.work.api_key", "mcp.json:mcpServers.gh.env.GH_TOKEN"}) {
		t.Errorf("redacted %q", m.Redacted)
	}
	for _, want := range []string{"token (secret)", "tls (secret)", "push (secret)", "mcp/tokens (secret)", "config/env (secrets)"} {
		if !slices.Contains(m.LeftOut, want) {
			t.Errorf("left out %q lacks %q", m.LeftOut, want)
		}
	}
	if s.Files == 0 || s.Written != int64(len(b)) {
		t.Errorf("summary %+v, archive of %d bytes", s, len(b))
	}
	got, err := ReadManifest(bytes.NewReader(b))
	if err != nil || got.Created.IsZero() || got.Host == "" {
		t.Errorf("ReadManifest: %+v, %v", got, err)
	}

	small, s2 := create(t, f, Options{ExcludeComputers: true})
	names, _ = entries(t, small)
	for _, name := range names {
		if strings.Contains(name, "/rootfs") || strings.HasSuffix(name, "computer.json") {
			t.Errorf("--exclude-computers: %s is in the archive", name)
		}
	}
	if s2.Manifest.Computers || !slices.Contains(names, "data/agents/default/memory/GLOBAL.md") {
		t.Errorf("--exclude-computers: manifest %+v, names %q", s2.Manifest, names)
	}
}

// TestRoundTrip restores into an empty data dir and config dir what a
// backup with secrets holds: the same files, links, modes and times;
// the computer's files given to this machine's ids for computers.
func TestRoundTrip(t *testing.T) {
	f := newFixture(t)
	b, _ := create(t, f, Options{Secrets: true})
	_, raw := entries(t, b)
	if !bytes.Contains(raw, []byte(apiKey)) || !bytes.Contains(raw, []byte(tokenText)) {
		t.Error("with secrets, the key and the token must be in the archive")
	}
	to := fixture{data: filepath.Join(t.TempDir(), "den"), config: filepath.Join(t.TempDir(), "cfg", "config.toml")}
	s, err := Restore(context.Background(), bytes.NewReader(b), RestoreOptions{DataDir: to.data, ConfigPath: to.config})
	if err != nil {
		t.Fatal(err)
	}
	if s.Files == 0 || s.PushForgotten != 0 || len(s.Aside) != 0 {
		t.Errorf("summary %+v", s)
	}
	for _, rel := range []string{"agents/default/rootfs/root/notes.txt", "agents/default/memory/GLOBAL.md", "agents/default/skills/tidy/SKILL.md",
		"agents/default/skills.lock", "agents/default/sessions/" + f.session + "/workspace/report.md", "token", "tls/key.pem",
		"mcp/tokens/github.json", "agents/default/browser/profile/Cookies"} {
		want, _ := os.ReadFile(filepath.Join(f.data, rel))
		got, err := os.ReadFile(filepath.Join(to.data, rel))
		if err != nil || !bytes.Equal(got, want) {
			t.Errorf("%s: %q, %v; want %q", rel, got, err, want)
		}
		a, _ := os.Stat(filepath.Join(f.data, rel))
		c, _ := os.Stat(filepath.Join(to.data, rel))
		if a.Mode() != c.Mode() || !a.ModTime().Equal(c.ModTime()) {
			t.Errorf("%s: mode %v time %v; want %v %v", rel, c.Mode(), c.ModTime(), a.Mode(), a.ModTime())
		}
	}
	for _, rel := range []string{"cache", "mcp/catalog", "agents/default/rootfs.old-1234", "den.db-shm"} {
		if _, err := os.Lstat(filepath.Join(to.data, rel)); err == nil {
			t.Errorf("%s was restored", rel)
		}
	}
	root := filepath.Join(to.data, "agents/default/rootfs")
	if l, err := os.Readlink(filepath.Join(root, "bin/sh")); err != nil || l != "busybox" {
		t.Errorf("bin/sh: %q %v", l, err)
	}
	if l, err := os.Readlink(filepath.Join(root, "root/abs-link")); err != nil || l != "/etc/shadow" {
		t.Errorf("an absolute link inside the computer: %q %v", l, err)
	}
	var a, c unix.Stat_t
	unix.Stat(filepath.Join(root, "bin/busybox"), &a)
	unix.Stat(filepath.Join(root, "bin/ls"), &c)
	if a.Ino != c.Ino {
		t.Error("bin/ls is no longer a hard link of bin/busybox")
	}
	if fi, err := os.Lstat(filepath.Join(root, "root/pipe")); err != nil || fi.Mode()&os.ModeNamedPipe == 0 {
		t.Errorf("root/pipe: %v %v", fi, err)
	}
	if fi, _ := os.Stat(filepath.Join(root, "usr/bin/su")); fi.Mode()&os.ModeSetuid == 0 {
		t.Errorf("usr/bin/su lost its setuid bit inside the computer: %v", fi.Mode())
	}
	// The computer's files belong to this machine's ids for computers;
	// den's own to den.
	ids, err := idmap.For(to.data)
	if err != nil {
		t.Fatal(err)
	}
	uid, gid, _ := ids.Root()
	if os.Geteuid() != 0 {
		uid, gid = os.Getuid(), os.Getgid()
	}
	for _, rel := range []string{"agents/default/rootfs", "agents/default/rootfs/bin/sh", "agents/default/memory/GLOBAL.md",
		"agents/default/sessions/" + f.session + "/workspace"} {
		var st unix.Stat_t
		if err := unix.Lstat(filepath.Join(to.data, rel), &st); err != nil || int(st.Uid) != uid || int(st.Gid) != gid {
			t.Errorf("%s: owner %d:%d (%v), want %d:%d", rel, st.Uid, st.Gid, err, uid, gid)
		}
	}
	for _, rel := range []string{"agents/default/skills.lock", "agents/default", "den.db", "token"} {
		var st unix.Stat_t
		if err := unix.Lstat(filepath.Join(to.data, rel), &st); err != nil || int(st.Uid) != os.Getuid() {
			t.Errorf("%s: owner %d (%v), want den's %d", rel, st.Uid, err, os.Getuid())
		}
	}
	info, err := rootfs.ReadInfo(filepath.Join(to.data, "agents/default/computer.json"))
	if err != nil || (os.Geteuid() == 0) != (info.Owner != nil) || (info.Owner != nil && int(info.Owner.UID) != uid) {
		t.Errorf("computer.json: %+v %v", info, err)
	}
	// The database: the session, and the push subscription (the VAPID
	// key came along).
	st, err := store.Open(filepath.Join(to.data, "den.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if _, err := st.GetSession(context.Background(), f.session); err != nil {
		t.Error(err)
	}
	if subs, _ := st.PushSubscriptions(context.Background()); len(subs) != 1 {
		t.Errorf("push subscriptions %d, want 1", len(subs))
	}
	for _, name := range []string{"config.toml", "mcp.json", "env"} {
		want, _ := os.ReadFile(filepath.Join(filepath.Dir(f.config), name))
		got, err := os.ReadFile(filepath.Join(filepath.Dir(to.config), name))
		fi, _ := os.Stat(filepath.Join(filepath.Dir(to.config), name))
		if err != nil || !bytes.Equal(got, want) || fi.Mode().Perm() != 0o600 {
			t.Errorf("%s: %q %v %v", name, got, err, fi.Mode())
		}
	}
	if ents, _ := filepath.Glob(filepath.Join(to.data, ".restore-*")); len(ents) != 0 {
		t.Errorf("staging left: %q", ents)
	}
}

// TestRestoreWithoutSecrets: the push subscriptions, made for a VAPID
// key the archive does not hold, are dropped; the config's key is
// empty.
func TestRestoreWithoutSecrets(t *testing.T) {
	f := newFixture(t)
	b, _ := create(t, f, Options{})
	to := fixture{data: t.TempDir(), config: filepath.Join(t.TempDir(), "config.toml")}
	s, err := Restore(context.Background(), bytes.NewReader(b), RestoreOptions{DataDir: to.data, ConfigPath: to.config})
	if err != nil {
		t.Fatal(err)
	}
	if s.PushForgotten != 1 {
		t.Errorf("push subscriptions forgotten: %d, want 1", s.PushForgotten)
	}
	cfg, _ := os.ReadFile(to.config)
	if !strings.Contains(string(cfg), `api_key = ""`) || !strings.Contains(string(cfg), "# mine") {
		t.Errorf("config:\n%s", cfg)
	}
	if _, err := os.Lstat(filepath.Join(to.data, "token")); err == nil {
		t.Error("a token was restored from a backup without secrets")
	}
}

// TestRestoreRefusesData: a data dir with data, or a config file, is
// not written over without Force; with it, what was there is moved
// aside, the old database's WAL with it.
func TestRestoreRefusesData(t *testing.T) {
	f := newFixture(t)
	b, _ := create(t, f, Options{})
	to := fixture{data: t.TempDir(), config: filepath.Join(t.TempDir(), "config.toml")}
	os.WriteFile(filepath.Join(to.data, "den.db"), []byte("old"), 0o600)
	os.WriteFile(filepath.Join(to.data, "den.db-wal"), []byte("old wal"), 0o600)
	os.MkdirAll(filepath.Join(to.data, "run"), 0o700) // not data
	_, err := Restore(context.Background(), bytes.NewReader(b), RestoreOptions{DataDir: to.data, ConfigPath: to.config})
	if !errors.Is(err, ErrNotEmpty) {
		t.Fatalf("a data dir with a database: %v, want ErrNotEmpty", err)
	}
	if got, _ := os.ReadFile(filepath.Join(to.data, "den.db")); string(got) != "old" {
		t.Error("the refused restore changed the database")
	}

	other := fixture{data: t.TempDir(), config: filepath.Join(t.TempDir(), "config.toml")}
	os.WriteFile(other.config, []byte("[agents.x]\n"), 0o600)
	if _, err := Restore(context.Background(), bytes.NewReader(b), RestoreOptions{DataDir: other.data, ConfigPath: other.config}); !errors.Is(err, ErrNotEmpty) {
		t.Fatalf("an existing config file: %v, want ErrNotEmpty", err)
	}

	s, err := Restore(context.Background(), bytes.NewReader(b), RestoreOptions{DataDir: to.data, ConfigPath: to.config, Force: true})
	if err != nil {
		t.Fatal(err)
	}
	if len(s.Aside) != 1 {
		t.Fatalf("aside %q", s.Aside)
	}
	for name, want := range map[string]string{"den.db": "old", "den.db-wal": "old wal"} {
		if got, _ := os.ReadFile(filepath.Join(s.Aside[0], name)); string(got) != want {
			t.Errorf("%s moved aside: %q, want %q", name, got, want)
		}
	}
	if _, err := os.Lstat(filepath.Join(to.data, "den.db-wal")); err == nil {
		t.Error("the old WAL is beside the restored database")
	}
	if _, err := store.CheckFile(context.Background(), filepath.Join(to.data, "den.db")); err != nil {
		t.Error(err)
	}
}

// hostile builds an archive with a valid manifest, the given entries,
// and a SHA256SUMS that matches them.
type hostileEntry struct {
	h    tar.Header
	body string
}

func hostile(t *testing.T, m Manifest, list []hostileEntry, sums bool) []byte {
	t.Helper()
	var buf bytes.Buffer
	w := newWriter(&buf, nil)
	if err := w.bytesFile(ManifestName, 0o600, m.marshal(), time.Now()); err != nil {
		t.Fatal(err)
	}
	for _, e := range list {
		h := e.h
		if h.Typeflag == tar.TypeReg {
			h.Size = int64(len(e.body))
			if err := w.content(&h, strings.NewReader(e.body)); err != nil {
				t.Fatal(err)
			}
			continue
		}
		if err := w.header(&h); err != nil {
			t.Fatal(err)
		}
	}
	if !sums {
		w.tw.Close()
		w.gz.Close()
		return buf.Bytes()
	}
	if err := w.close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// TestRestoreRefusesHostileArchives: names outside the layout or with
// "..", devices, links where den makes none or that lead out, a newer
// format or schema, a missing or wrong SHA256SUMS: each is refused,
// and nothing is written outside the data dir, nor left in it.
func TestRestoreRefusesHostileArchives(t *testing.T) {
	good := Manifest{Format: Format, Schema: 1, Owners: "inside", Agents: []string{"a"}}
	reg := func(name, body string) hostileEntry {
		return hostileEntry{h: tar.Header{Name: name, Typeflag: tar.TypeReg, Mode: 0o644}, body: body}
	}
	dir := func(name string) hostileEntry {
		return hostileEntry{h: tar.Header{Name: name, Typeflag: tar.TypeDir, Mode: 0o755}}
	}
	link := func(name, target string) hostileEntry {
		return hostileEntry{h: tar.Header{Name: name, Typeflag: tar.TypeSymlink, Linkname: target, Mode: 0o777}}
	}
	outside := t.TempDir()
	for _, tc := range []struct {
		name    string
		m       Manifest
		entries []hostileEntry
		noSums  bool
		want    error
	}{
		{name: "dotdot", entries: []hostileEntry{reg("data/../../"+filepath.Base(outside)+"/x", "pwned")}, want: ErrUnsafe},
		{name: "dotdot in a computer", entries: []hostileEntry{reg("data/agents/a/rootfs/../../../x", "pwned")}, want: ErrUnsafe},
		{name: "absolute", entries: []hostileEntry{reg("/data/den.db", "x")}, want: ErrUnsafe},
		{name: "outside the layout", entries: []hostileEntry{reg("data/evil.sh", "x")}, want: ErrUnsafe},
		{name: "unknown agent part", entries: []hostileEntry{reg("data/agents/a/.ssh/authorized_keys", "x")}, want: ErrUnsafe},
		{name: "bad agent name", entries: []hostileEntry{dir("data/agents/-x/")}, want: ErrUnsafe},
		{name: "symlink among den's files", entries: []hostileEntry{dir("data/agents/"), dir("data/agents/a/"), link("data/agents/a/skills.lock", outside+"/x")}, want: ErrUnsafe},
		{name: "symlink as a computer's folder", entries: []hostileEntry{dir("data/agents/"), dir("data/agents/a/"), link("data/agents/a/memory", outside)}, want: ErrUnsafe},
		{name: "through a symlink out of a computer", entries: []hostileEntry{dir("data/agents/a/rootfs/"),
			link("data/agents/a/rootfs/evil", outside), reg("data/agents/a/rootfs/evil/x", "pwned")}, want: rootfs.ErrUnsafeArchive},
		{name: "relative symlink out of a computer", entries: []hostileEntry{dir("data/agents/a/rootfs/"),
			link("data/agents/a/rootfs/up", "../../../../../../../../.."+outside), reg("data/agents/a/rootfs/up/x", "pwned")}, want: rootfs.ErrUnsafeArchive},
		{name: "device", entries: []hostileEntry{dir("data/agents/a/rootfs/"),
			{h: tar.Header{Name: "data/agents/a/rootfs/dev/sda", Typeflag: tar.TypeBlock, Devmajor: 8, Mode: 0o666}}}, want: ErrUnsafe},
		{name: "hard link to another tree", entries: []hostileEntry{reg("data/agents/a/memory/x", "m"),
			{h: tar.Header{Name: "data/agents/a/rootfs/x", Typeflag: tar.TypeLink, Linkname: "data/agents/a/memory/x"}}}, want: ErrUnsafe},
		{name: "hard link out", entries: []hostileEntry{{h: tar.Header{Name: "data/agents/a/rootfs/x", Typeflag: tar.TypeLink, Linkname: "/etc/shadow"}}}, want: ErrUnsafe},
		{name: "config the manifest does not name", entries: []hostileEntry{reg("config/config.toml", "x")}, want: ErrUnsafe},
		{name: "file twice", entries: []hostileEntry{reg("data/agents/a/memory/x", "1"), reg("data/agents/a/memory/x", "2")}, want: ErrUnsafe},
		{name: "tree twice", entries: []hostileEntry{reg("data/agents/a/memory/x", "1"), reg("data/agents/a/shared/y", "2"), reg("data/agents/a/memory/z", "3")}, want: ErrUnsafe},
		{name: "newer format", m: Manifest{Format: Format + 1, Owners: "inside"}, want: ErrTooNew},
		{name: "newer schema", m: Manifest{Format: Format, Schema: store.SchemaVersion() + 1, Owners: "inside"}, want: ErrTooNew},
		{name: "no sums", entries: []hostileEntry{reg("data/agents/a/memory/x", "1")}, noSums: true, want: ErrNotBackup},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := tc.m
			if m.Format == 0 {
				m = good
			}
			b := hostile(t, m, tc.entries, !tc.noSums)
			data := filepath.Join(t.TempDir(), "den")
			_, err := Restore(context.Background(), bytes.NewReader(b), RestoreOptions{DataDir: data, ConfigPath: filepath.Join(t.TempDir(), "config.toml")})
			if !errors.Is(err, tc.want) {
				t.Fatalf("got %v, want %v", err, tc.want)
			}
			t.Log(err)
			if ents, _ := os.ReadDir(outside); len(ents) != 0 {
				t.Fatalf("written outside the data dir: %v", ents)
			}
			if ents, _ := os.ReadDir(data); len(ents) != 0 {
				names := []string{}
				for _, e := range ents {
					names = append(names, e.Name())
				}
				t.Errorf("left in the data dir: %q", names)
			}
		})
	}

	// A file whose content does not match SHA256SUMS.
	b := hostile(t, good, []hostileEntry{reg("data/agents/a/memory/x", "original")}, true)
	b = tamper(t, b, "original", "tampered")
	if _, err := Restore(context.Background(), bytes.NewReader(b), RestoreOptions{DataDir: t.TempDir(), ConfigPath: filepath.Join(t.TempDir(), "c.toml")}); !errors.Is(err, ErrCorrupt) {
		t.Errorf("a tampered file: %v, want ErrCorrupt", err)
	}
	// Not an archive at all.
	if _, err := Restore(context.Background(), strings.NewReader("hello"), RestoreOptions{DataDir: t.TempDir()}); !errors.Is(err, ErrNotBackup) {
		t.Errorf("text: %v, want ErrNotBackup", err)
	}
}

// tamper replaces text in an archive's content, compressing it again.
func tamper(t *testing.T, b []byte, from, to string) []byte {
	t.Helper()
	gz, _ := gzip.NewReader(bytes.NewReader(b))
	raw, _ := io.ReadAll(gz)
	raw = bytes.Replace(raw, []byte(from), []byte(to), 1)
	var out bytes.Buffer
	w := gzip.NewWriter(&out)
	w.Write(raw)
	w.Close()
	return out.Bytes()
}

// TestSumLines: names with backslashes and line breaks survive
// SHA256SUMS as sha256sum writes them.
func TestSumLines(t *testing.T) {
	for _, name := range []string{"data/a b", `data/back\slash`, "data/line\nbreak", "data/cr\rx"} {
		line := sumLine(strings.Repeat("a", 64), name)
		if strings.Count(line, "\n") != 1 {
			t.Errorf("%q: %q is not one line", name, line)
		}
		_, got, err := parseSumLine(strings.TrimSuffix(line, "\n"))
		if err != nil || got != name {
			t.Errorf("%q: read back %q, %v", name, got, err)
		}
	}
}

// TestCreateNeverFollowsSwappedFolder: a computer that keeps swapping
// a folder of its own for a link to a host folder while backups run
// never gets the host folder's file into an archive.
func TestCreateNeverFollowsSwappedFolder(t *testing.T) {
	f := newFixture(t)
	sandboxtest.SwapFolderForLink(t, filepath.Join(f.data, "agents/default/rootfs/swap"))
	for range 30 {
		var buf bytes.Buffer
		if _, err := Create(context.Background(), &buf, Options{DataDir: f.data}); err != nil {
			t.Fatal(err)
		}
		if _, raw := entries(t, buf.Bytes()); bytes.Contains(raw, []byte(sandboxtest.SwapCanary)) {
			t.Fatal("a host file reached the archive through a folder swapped for a link")
		}
	}
}
