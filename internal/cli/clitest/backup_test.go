package clitest

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"den.dev/den/internal/llm/llmtest"
	"den.dev/den/internal/sandbox/sandboxtest"
)

// backupKey is a provider's key in the config: it must never be in a
// backup made without --with-secrets.
const backupKey = "sk-live-backup-test-do-not-leak-0123456789"

// TestBackupRestoreRunningDaemon backs up a running den serve whose
// agent has a session, memory, an installed skill and a computer with
// a file and a program it installed, restores it into a fresh data dir
// and config dir, and finds them all there: den sessions list and
// show, den memory show, den skills list, den exec in the restored
// computer. The archive is 0600, holds no key without --with-secrets,
// and is much smaller with --exclude-computers.
func TestBackupRestoreRunningDaemon(t *testing.T) {
	d := newDen(t)
	serveConfig(t, d, "[providers.work]\ntype = \"openai\"\nbase_url = \"http://127.0.0.1:9/v1\"\napi_key = \""+backupKey+"\"\n")
	fake := llmtest.NewAnthropic(t,
		llmtest.Turn{Text: "Setting up.", Calls: []llmtest.Call{
			sh("toolu_1", "echo kept-in-root > /root/kept.txt && printf '#!/bin/sh\\necho hello-from-package\\n' > /usr/local/bin/hello && chmod +x /usr/local/bin/hello && echo '# Report' > /workspace/report.md"),
			{ID: "toolu_2", Name: "memory_write", Input: `{"content":"The user's door is blue."}`}}},
		llmtest.Turn{Text: "All set, the door is noted."},
		llmtest.Turn{Calls: []llmtest.Call{sh("toolu_3", "i=0; while [ $i -lt 300 ]; do echo $i > /root/busy.$((i % 7)); i=$((i+1)); sleep 0.01; done")}},
		llmtest.Turn{Text: "Busy work done."})
	p := startServe(t, d, fake)
	sess := p.api(t, "POST", "/api/v1/sessions", map[string]any{"agent": "default"}, http.StatusCreated)
	id := sess["id"].(string)
	evs, stop := p.stream(t, "/api/v1/sessions/"+id+"/events", "")
	defer stop()
	p.api(t, "POST", "/api/v1/sessions/"+id+"/messages", map[string]any{"text": "set up my computer"}, http.StatusAccepted)
	until(t, evs, "status", "idle")
	// A user's extended attributes on a computer's file and a session's
	// (set from the host: busybox has no setfattr).
	sandboxtest.NeedUserXattrs(t, d.Home)
	for _, rel := range []string{"rootfs/root/kept.txt", "sessions/" + id + "/workspace/report.md"} {
		if err := unix.Setxattr(filepath.Join(d.AgentDir("default"), rel), "user.den_test", []byte("xyz"), 0); err != nil {
			t.Fatal(err)
		}
	}

	skill := filepath.Join(t.TempDir(), "tidy")
	os.MkdirAll(skill, 0o755)
	os.WriteFile(filepath.Join(skill, "SKILL.md"), []byte("---\nname: tidy\ndescription: Tidies a folder.\n---\n# Tidy\n"), 0o644)
	d.MustRun("skills", "install", skill)

	// A backup while a command writes in the computer: it works, and
	// restores.
	dir := t.TempDir()
	busy := p.api(t, "POST", "/api/v1/sessions", map[string]any{"agent": "default"}, http.StatusCreated)["id"].(string)
	bevs, bstop := p.stream(t, "/api/v1/sessions/"+busy+"/events", "")
	defer bstop()
	p.api(t, "POST", "/api/v1/sessions/"+busy+"/messages", map[string]any{"text": "keep busy"}, http.StatusAccepted)
	until(t, bevs, "tool_call", "")
	d.MustRun("backup", filepath.Join(dir, "busy.tar.gz"))
	until(t, bevs, "status", "idle")
	New(t, denBin).MustRun("restore", filepath.Join(dir, "busy.tar.gz"))

	// The backup, while den serve runs.
	full := filepath.Join(dir, "full.tar.gz")
	r := d.MustRun("backup", full)
	if !strings.Contains(r.Stderr, "backup written to "+full) || !strings.Contains(r.Stderr, "den serve was running") ||
		!strings.Contains(r.Stderr, "providers.work.api_key") {
		t.Errorf("den backup: %s", r)
	}
	if strings.Contains(r.Stderr, "does not know") {
		t.Errorf("den backup warns of den's own files: %s", r.Stderr)
	}
	fi, err := os.Stat(full)
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("the archive: %v, mode %v; want 0600", err, fi.Mode())
	}
	raw := gunzip(t, full)
	if bytes.Contains(raw, []byte(backupKey)) {
		t.Error("the provider's key is in a backup made without --with-secrets")
	}
	if r := d.Run("backup", full); r.Code != 2 || !strings.Contains(r.Stderr, "exists") {
		t.Errorf("den backup over an existing file: want exit 2, got %s", r)
	}
	small := filepath.Join(dir, "small.tar.gz")
	d.MustRun("backup", "--exclude-computers", small)
	sfi, _ := os.Stat(small)
	if sfi.Size()*2 > fi.Size() {
		t.Errorf("--exclude-computers: %d bytes, the full backup %d; want less than half", sfi.Size(), fi.Size())
	}
	t.Logf("archive: %d bytes with the computer, %d without", fi.Size(), sfi.Size())
	for _, name := range tarNames(t, gunzip(t, small)) {
		if strings.Contains(name, "/rootfs") {
			t.Errorf("--exclude-computers: %s is in the archive", name)
		}
	}

	// A fresh data dir and config dir.
	n := New(t, denBin)
	r = n.MustRun("restore", full)
	buf := make([]byte, 64)
	for _, rel := range []string{"rootfs/root/kept.txt", "sessions/" + id + "/workspace/report.md"} {
		if k, err := unix.Getxattr(filepath.Join(n.AgentDir("default"), rel), "user.den_test", buf); err != nil || string(buf[:k]) != "xyz" {
			t.Errorf("the restored %s's user.den_test: %q, %v; want xyz", rel, buf[:max(k, 0)], err)
		}
	}
	if !strings.Contains(r.Stdout, "restored") || !strings.Contains(r.Stdout, "providers.work.api_key") {
		t.Errorf("den restore: %s", r)
	}
	cfg := readFile(t, filepath.Join(n.ConfigHome, "den", "config.toml"))
	if !strings.Contains(cfg, `rootfs = "busybox"`) || !strings.Contains(cfg, `api_key = ""`) {
		t.Errorf("the restored config:\n%s", cfg)
	}
	if out := n.MustRun("sessions", "list").Stdout; !strings.Contains(out, id) || !strings.Contains(out, "set up my computer") {
		t.Errorf("den sessions list after the restore:\n%s", out)
	}
	if out := n.MustRun("sessions", "show", id).Stdout; !strings.Contains(out, "All set, the door is noted.") {
		t.Errorf("den sessions show after the restore:\n%s", out)
	}
	if out := n.MustRun("memory", "show").Stdout; !strings.Contains(out, "The user's door is blue.") {
		t.Errorf("den memory show after the restore:\n%s", out)
	}
	if out := n.MustRun("skills", "list").Stdout; !strings.Contains(out, "tidy") || strings.Contains(out, "changed") {
		t.Errorf("den skills list after the restore:\n%s", out)
	}
	if out := n.MustRun("exec", "--", "cat", "/root/kept.txt").Stdout; out != "kept-in-root\n" {
		t.Errorf("a file of the restored computer: %q", out)
	}
	if out := n.MustRun("exec", "--", "hello").Stdout; out != "hello-from-package\n" {
		t.Errorf("the program the agent installed: %q", out)
	}
	if out := n.MustRun("exec", "--session", id, "--", "cat", "/workspace/report.md").Stdout; out != "# Report\n" {
		t.Errorf("the session's workspace: %q", out)
	}
	if out := n.MustRun("exec", "--", "id", "-u").Stdout; out != "0\n" {
		t.Errorf("root inside the restored computer: %q", out)
	}

	// Restoring again refuses the data dir that now holds data.
	if r := n.Run("restore", full); r.Code != 125 || !strings.Contains(r.Stderr, "already holds den's data") {
		t.Errorf("a second restore: want exit 125 and a refusal, got %s", r)
	}
	// den restore refuses a data dir den serve runs on, even with --force.
	if r := d.Run("restore", "--force", full); r.Code != 125 || !strings.Contains(r.Stderr, "den serve") {
		t.Errorf("den restore beside den serve: want exit 125, got %s", r)
	}

	// With --force the old data moves aside.
	r = n.MustRun("restore", "--force", small)
	if !strings.Contains(r.Stderr, "before-restore-") || !strings.Contains(r.Stdout, "computers are not in the backup") {
		t.Errorf("den restore --force: %s", r)
	}
	aside, _ := filepath.Glob(filepath.Join(n.Home, "before-restore-*", "agents", "default", "rootfs"))
	if len(aside) != 1 {
		t.Errorf("the old computer was not moved aside: %v", aside)
	}
}

// TestBackupWithSecrets: --with-secrets keeps the config's key and
// den's token, and says the archive holds secrets.
func TestBackupWithSecrets(t *testing.T) {
	d := newDen(t)
	serveConfig(t, d, "[providers.work]\ntype = \"openai\"\nbase_url = \"http://127.0.0.1:9/v1\"\napi_key = \""+backupKey+"\"\n")
	provision(t, d, "default")
	token := strings.TrimSpace(d.MustRun("token").Stdout)
	out := filepath.Join(t.TempDir(), "b.tar.gz")
	r := d.MustRun("backup", "--with-secrets", out)
	if !strings.Contains(r.Stderr, "holds den's secrets") {
		t.Errorf("den backup --with-secrets: %s", r)
	}
	raw := gunzip(t, out)
	if !bytes.Contains(raw, []byte(backupKey)) || !bytes.Contains(raw, []byte(token)) || !bytes.Contains(raw, []byte(`"secrets": true`)) {
		t.Error("--with-secrets: the key, the token or the manifest's mark is missing")
	}
	n := New(t, denBin)
	n.MustRun("restore", out)
	if got := strings.TrimSpace(n.MustRun("token").Stdout); got != token {
		t.Errorf("the restored token %q, want %q", got, token)
	}
	if fi, err := os.Stat(filepath.Join(n.Home, "token")); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("the restored token file: %v %v", fi, err)
	}
}

// TestRestoreRefusesHostileArchive: an archive with a path out of the
// data dir, a link leading out of a computer, or a device is refused,
// with nothing written outside the data dir and nothing left in it.
func TestRestoreRefusesHostileArchive(t *testing.T) {
	outside := t.TempDir()
	for name, entries := range map[string][]tar.Header{
		"dotdot": {{Name: "data/agents/default/memory/../../../../" + filepath.Base(outside) + "/pwned", Typeflag: tar.TypeReg}},
		"link": {{Name: "data/agents/default/rootfs/", Typeflag: tar.TypeDir, Mode: 0o755},
			{Name: "data/agents/default/rootfs/out", Typeflag: tar.TypeSymlink, Linkname: outside},
			{Name: "data/agents/default/rootfs/out/pwned", Typeflag: tar.TypeReg}},
		"device": {{Name: "data/agents/default/rootfs/", Typeflag: tar.TypeDir, Mode: 0o755},
			{Name: "data/agents/default/rootfs/disk", Typeflag: tar.TypeBlock, Devmajor: 8, Mode: 0o666}},
	} {
		t.Run(name, func(t *testing.T) {
			file := filepath.Join(t.TempDir(), "evil.tar.gz")
			writeArchive(t, file, entries)
			d := New(t, denBin)
			r := d.Run("restore", file)
			if r.Code != 125 || !strings.Contains(r.Stderr, "unsafe archive entry") {
				t.Errorf("den restore of a hostile archive: want exit 125 and a refusal, got %s", r)
			}
			if ents, _ := os.ReadDir(outside); len(ents) != 0 {
				t.Fatalf("written outside the data dir: %v", ents)
			}
			ents, _ := os.ReadDir(d.Home)
			for _, e := range ents {
				if e.Name() != "serve.lock" {
					t.Errorf("left in the data dir: %s", e.Name())
				}
			}
		})
	}
}

// writeArchive writes a gzip-compressed tar with a manifest, entries
// (regular files hold "pwned") and a matching SHA256SUMS.
func writeArchive(t *testing.T, file string, entries []tar.Header) {
	t.Helper()
	f, err := os.Create(file)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	gz := gzip.NewWriter(f)
	tw := tar.NewWriter(gz)
	var sums strings.Builder
	put := func(h tar.Header, body string) {
		if h.Typeflag == tar.TypeReg {
			h.Size, h.Mode = int64(len(body)), 0o644
			s := sha256.Sum256([]byte(body))
			sums.WriteString(hex.EncodeToString(s[:]) + "  " + h.Name + "\n")
		}
		if err := tw.WriteHeader(&h); err != nil {
			t.Fatal(err)
		}
		io.WriteString(tw, body)
	}
	m, _ := json.Marshal(map[string]any{"format": 1, "schema_version": 1, "owners": "inside", "agents": []string{"default"}})
	put(tar.Header{Name: "manifest.json", Typeflag: tar.TypeReg}, string(m))
	for _, h := range entries {
		put(h, "pwned")
	}
	body := sums.String()
	tw.WriteHeader(&tar.Header{Name: "SHA256SUMS", Typeflag: tar.TypeReg, Size: int64(len(body)), Mode: 0o600})
	io.WriteString(tw, body)
	tw.Close()
	gz.Close()
}

func tarNames(t *testing.T, raw []byte) []string {
	t.Helper()
	var out []string
	tr := tar.NewReader(bytes.NewReader(raw))
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return out
		}
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, h.Name)
	}
}

func gunzip(t *testing.T, file string) []byte {
	t.Helper()
	f, err := os.Open(file)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	gz, err := gzip.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	b, err := io.ReadAll(gz)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestBackupUnprivileged: an ordinary user backs up its den and
// restores it into another data dir, and restores a backup root made:
// the computer's files become the user's, root inside, and the
// computer runs.
func TestBackupUnprivileged(t *testing.T) {
	u := newUnprivUser(t)
	if r := u.den(t, "exec", "--rootfs", "busybox", "--", "sh", "-c", "echo mine > /root/mine.txt"); r.Code != 0 {
		t.Fatalf("den exec as %s: %v", u.Name, r)
	}
	archive := filepath.Join(u.Home, "mine.tar.gz")
	if r := u.den(t, "backup", archive); r.Code != 0 {
		t.Fatalf("den backup as %s: %v", u.Name, r)
	}
	var st unix.Stat_t
	if err := unix.Stat(archive, &st); err != nil || int(st.Uid) != u.UID || st.Mode&0o777 != 0o600 {
		t.Errorf("the archive: %v, owner %d, mode %o", err, st.Uid, st.Mode&0o777)
	}
	other := filepath.Join(u.Home, "other")
	otherCfg := filepath.Join(u.Home, "other-config", "config.toml")
	if r := u.den(t, "--data-dir", other, "--config", otherCfg, "restore", archive); r.Code != 0 {
		t.Fatalf("den restore as %s: %v", u.Name, r)
	}
	if r := u.den(t, "--data-dir", other, "exec", "--", "cat", "/root/mine.txt"); r.Code != 0 || r.Stdout != "mine\n" {
		t.Errorf("the restored computer as %s: %v", u.Name, r)
	}

	// A backup root made of its own den, restored by the user: the
	// computer's files, which root's den gave to a range of ids of its
	// own, become the user's.
	d := newDen(t)
	serveConfig(t, d, "")
	d.MustRun("exec", "--", "sh", "-c", "echo from-root > /root/theirs.txt")
	// Extended attributes: the user's go along; root's (trusted.*) an
	// ordinary user cannot set, and restore says so once.
	theirs := filepath.Join(d.AgentDir("default"), "rootfs", "root", "theirs.txt")
	sandboxtest.NeedUserXattrs(t, filepath.Dir(theirs))
	sandboxtest.NeedUserXattrs(t, u.Home)
	for name, v := range map[string]string{"user.den_test": "xyz", "trusted.den_test": "root's"} {
		if err := unix.Setxattr(theirs, name, []byte(v), 0); err != nil {
			t.Fatal(err)
		}
	}
	if err := unix.Setxattr(filepath.Dir(theirs), "trusted.den_test", []byte("root's"), 0); err != nil {
		t.Fatal(err)
	}
	rootArchive := filepath.Join(u.Home, "root.tar.gz")
	d.MustRun("backup", rootArchive)
	if err := os.Chown(rootArchive, u.UID, u.GID); err != nil {
		t.Fatal(err)
	}
	third := filepath.Join(u.Home, "third")
	thirdCfg := filepath.Join(u.Home, "third-config", "config.toml")
	r := u.den(t, "--data-dir", third, "--config", thirdCfg, "restore", rootArchive)
	if r.Code != 0 {
		t.Fatalf("den restore of root's backup as %s: %v", u.Name, r)
	}
	if strings.Count(r.Stderr, "trusted.den_test") != 1 || !strings.Contains(r.Stderr, "den is not root") {
		t.Errorf("den restore as %s: want one warning about trusted.den_test, got %s", u.Name, r)
	}
	restored := filepath.Join(third, "agents", "default", "rootfs", "root", "theirs.txt")
	buf := make([]byte, 64)
	if n, err := unix.Getxattr(restored, "user.den_test", buf); err != nil || string(buf[:n]) != "xyz" {
		t.Errorf("the restored file's user.den_test: %q, %v; want xyz", buf[:max(n, 0)], err)
	}
	if err := unix.Lstat(filepath.Join(third, "agents", "default", "rootfs", "root", "theirs.txt"), &st); err != nil || int(st.Uid) != u.UID {
		t.Errorf("a restored file's owner: %v, %d; want %d", err, st.Uid, u.UID)
	}
	if r := u.den(t, "--data-dir", third, "--config", thirdCfg, "exec", "--", "cat", "/root/theirs.txt"); r.Code != 0 || r.Stdout != "from-root\n" {
		t.Errorf("root's computer restored as %s: %v", u.Name, r)
	}
}

// TestScheduledBackups: den serve with [backup] makes a backup every
// `every` into `dir`, keeping the newest `keep`; each restores.
func TestScheduledBackups(t *testing.T) {
	d := newDen(t)
	dir := filepath.Join(t.TempDir(), "backups")
	serveConfig(t, d, "[backup]\nevery = \"1s\"\nkeep = 2\ndir = \""+dir+"\"\n")
	provision(t, d, "default")
	fake := llmtest.NewAnthropic(t)
	p := startServe(t, d, fake)
	seen := map[string]bool{}
	for i := 0; len(seen) < 4; i++ {
		if i == MaxPolls {
			t.Fatalf("scheduled backups seen in 30s: %v\n%s", seen, p.stderr)
		}
		ents, _ := os.ReadDir(dir)
		n := 0
		for _, e := range ents {
			if strings.HasPrefix(e.Name(), "den-backup-") && strings.HasSuffix(e.Name(), ".tar.gz") {
				seen[e.Name()] = true
				n++
			}
		}
		if n > 2 {
			t.Fatalf("%d scheduled backups in the folder, want at most keep = 2", n)
		}
		time.Sleep(PollInterval)
	}
	log := p.stderr.String()
	if !strings.Contains(log, "backup written") || !strings.Contains(log, "old backup removed") {
		t.Errorf("den serve's log:\n%s", log)
	}
	if fi, err := os.Stat(dir); err != nil || fi.Mode().Perm() != 0o700 {
		t.Errorf("the backups' folder: %v %v", fi, err)
	}
	ents, _ := os.ReadDir(dir)
	latest := filepath.Join(dir, ents[len(ents)-1].Name())
	n := New(t, denBin)
	if r := n.MustRun("restore", latest); !strings.Contains(r.Stdout, "restored") {
		t.Errorf("den restore of a scheduled backup: %s", r)
	}
	if out := n.MustRun("exec", "--", "true"); out.Code != 0 {
		t.Errorf("the restored computer: %s", out)
	}
}

// TestBackupVerify: den backup verify reads a backup whole, writes
// nothing, and says what it holds (--json too, and from standard
// input); a backup cut short, with a byte changed in a file, with a
// file its SHA256SUMS does not list, or without one it lists, fails
// with exit 125 and the problem named.
func TestBackupVerify(t *testing.T) {
	d := newDen(t)
	provision(t, d, "default")
	d.MustRun("exec", "--", "sh", "-c", "echo verify-me > /root/v.txt")
	file := filepath.Join(t.TempDir(), "b.tar.gz")
	d.MustRun("backup", file)

	n := New(t, denBin) // a den of its own: verify touches no data dir
	r := n.MustRun("backup", "verify", file)
	for _, want := range []string{file + " is whole", "agents:    default", "sessions:  ", "computers: yes", "secrets:   no"} {
		if !strings.Contains(r.Stdout, want) {
			t.Errorf("den backup verify: no %q in\n%s", want, r)
		}
	}
	if ents, _ := os.ReadDir(n.Home); len(ents) != 0 {
		t.Errorf("den backup verify wrote into the data dir: %v", ents)
	}
	archive, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	r = n.RunInput(bytes.NewReader(archive), "backup", "verify", "--json", "-")
	var v struct {
		OK           bool     `json:"ok"`
		Agents       []string `json:"agents"`
		Sessions     *int     `json:"sessions"`
		Files        int      `json:"files"`
		Bytes        int64    `json:"bytes"`
		ArchiveBytes int64    `json:"archive_bytes"`
		Secrets      bool     `json:"secrets"`
		Created      string   `json:"created"`
	}
	if err := json.Unmarshal([]byte(r.Stdout), &v); err != nil || r.Code != 0 {
		t.Fatalf("den backup verify --json -: %v\n%s", err, r)
	}
	if !v.OK || len(v.Agents) != 1 || v.Sessions == nil || v.Files == 0 || v.Bytes == 0 || v.ArchiveBytes != int64(len(archive)) || v.Secrets || v.Created == "" {
		t.Errorf("den backup verify --json: %+v", v)
	}

	const kept = "data/agents/default/rootfs/root/v.txt"
	for _, tc := range []struct {
		name, says string
		archive    []byte
	}{
		{"truncated", "truncated", archive[:len(archive)/2]},
		{"a byte changed", kept + " does not match its SHA-256", regzip(t, bytes.Replace(gunzipBytes(t, archive), []byte("verify-me"), []byte("verify-Me"), 1))},
		{"an unlisted file", "data/agents/default/rootfs/root/extra.txt is not in SHA256SUMS", editArchive(t, archive, func(h *tar.Header, body []byte) []tarFile {
			if h.Name == kept {
				return []tarFile{{*h, body}, {tar.Header{Name: "data/agents/default/rootfs/root/extra.txt", Typeflag: tar.TypeReg, Mode: 0o644}, []byte("extra\n")}}
			}
			return []tarFile{{*h, body}}
		})},
		{"a missing file", `lists "` + kept + `", which the archive does not hold`, editArchive(t, archive, func(h *tar.Header, body []byte) []tarFile {
			if h.Name == kept {
				return nil
			}
			return []tarFile{{*h, body}}
		})},
	} {
		t.Run(tc.name, func(t *testing.T) {
			bad := filepath.Join(t.TempDir(), "bad.tar.gz")
			if err := os.WriteFile(bad, tc.archive, 0o600); err != nil {
				t.Fatal(err)
			}
			r := n.Run("backup", "verify", bad)
			if r.Code != 125 || !strings.Contains(r.Stderr, tc.says) || r.Stdout != "" {
				t.Errorf("den backup verify: want exit 125 saying %q, got %s", tc.says, r)
			}
			r = n.Run("backup", "verify", "--json", bad)
			var f struct {
				OK    bool   `json:"ok"`
				Error string `json:"error"`
			}
			if err := json.Unmarshal([]byte(r.Stdout), &f); err != nil || r.Code != 125 || f.OK || !strings.Contains(f.Error, tc.says) {
				t.Errorf("den backup verify --json: want exit 125 and ok false saying %q, got %v %s", tc.says, err, r)
			}
		})
	}
}

type tarFile struct {
	h    tar.Header
	body []byte
}

// editArchive copies a gzip-compressed tar entry by entry, each through
// edit, which returns the entries to write in its place.
func editArchive(t *testing.T, archive []byte, edit func(h *tar.Header, body []byte) []tarFile) []byte {
	t.Helper()
	tr := tar.NewReader(bytes.NewReader(gunzipBytes(t, archive)))
	var out bytes.Buffer
	tw := tar.NewWriter(&out)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		body, err := io.ReadAll(tr)
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range edit(h, body) {
			if f.h.Typeflag == tar.TypeReg {
				f.h.Size = int64(len(f.body))
			}
			if err := tw.WriteHeader(&f.h); err != nil {
				t.Fatal(err)
			}
			tw.Write(f.body)
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	return regzip(t, out.Bytes())
}

func gunzipBytes(t *testing.T, b []byte) []byte {
	t.Helper()
	gz, err := gzip.NewReader(bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	raw, err := io.ReadAll(gz)
	if err != nil {
		t.Fatal(err)
	}
	return raw
}

func regzip(t *testing.T, raw []byte) []byte {
	t.Helper()
	var out bytes.Buffer
	zw := gzip.NewWriter(&out)
	zw.Write(raw)
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return out.Bytes()
}

// TestScheduledBackupOnAFullDisk: a scheduled backup into a folder on
// a disk without the room den keeps free fails the way a scheduled
// backup fails (logged, tried again), saying what it needs and what is
// free, and leaves no file there; den serve goes on.
func TestScheduledBackupOnAFullDisk(t *testing.T) {
	sandboxtest.NeedRoot(t, "mounting a small tmpfs")
	d := newDen(t)
	dir := t.TempDir()
	if err := unix.Mount("tmpfs", dir, "tmpfs", 0, "size=16m,mode=0700"); err != nil {
		t.Fatalf("mount tmpfs: %v", err)
	}
	t.Cleanup(func() { unix.Unmount(dir, unix.MNT_DETACH) }) // after den serve stops
	serveConfig(t, d, "[backup]\nevery = \"1s\"\ndir = \""+dir+"\"\n")
	provision(t, d, "default")
	p := startServe(t, d, llmtest.NewAnthropic(t))
	for i := 0; strings.Count(p.stderr.String(), "scheduled backup failed") < 2; i++ {
		if i == MaxPolls {
			t.Fatalf("no two failed scheduled backups in den serve's log:\n%s", p.stderr)
		}
		time.Sleep(PollInterval)
	}
	log := p.stderr.String()
	if !strings.Contains(log, "not enough free disk space") || !strings.Contains(log, "16.0 MiB is free") || strings.Contains(log, "backup written") {
		t.Errorf("den serve's log:\n%s", log)
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 0 {
		t.Errorf("left in the backups' folder: %v", ents)
	}
	p.api(t, "GET", "/api/v1/sessions", nil, http.StatusOK)
}
