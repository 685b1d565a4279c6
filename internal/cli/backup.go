package cli

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/spf13/cobra"
	"golang.org/x/term"

	"den.dev/den/internal/backup"
	"den.dev/den/internal/config"
	"den.dev/den/internal/daemon"
)

func backupCmd(g *globals) *cobra.Command {
	var o backup.Options
	c := &cobra.Command{
		Use:   "backup FILE",
		Short: "Write den's state to one archive, while den runs",
		Long: `Write a backup of den's state to FILE (a .tar.gz, mode 0600; - for
standard output): a consistent copy of the database (sessions, messages,
usage, approvals, schedules), the config file and mcp.json, and each
agent's memory, skills, shared folder, sessions' files and computer.
It runs beside a running den serve. den restore FILE puts it back.

Without --with-secrets the config's API keys, header values and URL
passwords are emptied and mcp.json's env and headers values too, and
den's token, TLS and VAPID keys, MCP servers' OAuth tokens and the
agents' browser profiles (their website logins) are left out. With it,
the archive holds them all and says so: keep it like the keys.
--exclude-computers leaves out the agents' root filesystems (what they
installed, /root): a small backup; a restored agent gets a new computer.

den backup verify FILE reads a backup whole and checks it without
restoring it (to back up into a file named verify, write ./verify).`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			data := DataDir(g.dataDir)
			o.DataDir, o.ConfigPath, o.Version = data, g.configFile(), Version
			o.Live, _ = daemon.Serving(data)
			out := args[0]
			prog := newProgress(g.stderr, "backup")
			o.Warn = func(msg string) { prog.say("den: backup: " + msg) }
			if out != "-" {
				o.Progress = prog.show
			}
			var s backup.Summary
			var err error
			if out == "-" {
				s, err = backup.Create(cmd.Context(), g.stdout, o)
			} else {
				s, err = backup.WriteFile(cmd.Context(), out, o)
			}
			prog.done()
			if errors.Is(err, backup.ErrExists) {
				return usageError{fmt.Errorf("%w: choose another name, or remove it first", err)}
			}
			if err != nil {
				return err
			}
			where := out
			if out == "-" {
				where = "standard output"
			}
			fmt.Fprintf(g.stderr, "den: backup written to %s: %s (%d files, %s before compression) in %s\n",
				where, config.FormatBytes(s.Written), s.Files, config.FormatBytes(s.Bytes), s.Took.Round(time.Millisecond))
			if s.Manifest.Secrets {
				fmt.Fprintln(g.stderr, "den: the backup holds den's secrets (API keys, the token, private keys, logins): keep it where only you can read it")
			} else if len(s.Manifest.Redacted) > 0 {
				fmt.Fprintf(g.stderr, "den: left out of the config (set again after a restore, or back up --with-secrets): %s\n", strings.Join(s.Manifest.Redacted, ", "))
			}
			if s.Manifest.Live {
				fmt.Fprintln(g.stderr, "den: den serve was running: the database is a consistent copy; files of computers in use were copied one at a time, as they were when read")
			}
			return nil
		},
	}
	c.Flags().BoolVar(&o.Secrets, "with-secrets", false, "keep the config's keys, den's token and private keys, OAuth tokens and browser logins")
	c.Flags().BoolVar(&o.ExcludeComputers, "exclude-computers", false, "leave out the agents' root filesystems (a small backup)")
	c.AddCommand(backupVerifyCmd(g))
	return c
}

// verified is den backup verify --json's output for a backup that is
// whole; verifyFailed for one that is not.
type verified struct {
	OK           bool      `json:"ok"`
	File         string    `json:"file"`
	Format       int       `json:"format"`
	Den          string    `json:"den_version"`
	Schema       int       `json:"schema_version"`
	Created      time.Time `json:"created"`
	Host         string    `json:"host,omitempty"`
	Agents       []string  `json:"agents,omitempty"`
	Sessions     *int      `json:"sessions,omitempty"`
	Files        int       `json:"files"`
	Bytes        int64     `json:"bytes"`
	ArchiveBytes int64     `json:"archive_bytes"`
	Secrets      bool      `json:"secrets"`
	Computers    bool      `json:"computers"`
	Live         bool      `json:"live"`
	Redacted     []string  `json:"redacted,omitempty"`
	LeftOut      []string  `json:"left_out,omitempty"`
}

type verifyFailed struct {
	OK    bool   `json:"ok"`
	File  string `json:"file"`
	Error string `json:"error"`
}

func backupVerifyCmd(g *globals) *cobra.Command {
	var asJSON bool
	c := &cobra.Command{
		Use:   "verify FILE",
		Short: "Check a backup whole, without restoring it",
		Long: `Read a backup made by den backup (FILE, or - for standard input) to its
end and check it as den restore does before it puts anything in place:
a manifest this den reads, every entry's name and type, every file
against the archive's SHA-256 list and every file listed there, and
nothing after it. Nothing is written. It says what the backup holds;
the first problem found is the error (exit 125).`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			file := args[0]
			var in io.Reader = g.stdin
			var o backup.VerifyOptions
			prog := newProgress(g.stderr, "verify")
			if file != "-" {
				f, err := os.Open(file)
				if err != nil {
					return fmt.Errorf("verify: %w", err)
				}
				defer f.Close()
				if fi, err := f.Stat(); err == nil && fi.Mode().IsRegular() {
					o.Total = fi.Size()
				}
				in = f
				o.Progress = prog.show
			}
			s, err := backup.Verify(cmd.Context(), in, o)
			prog.done()
			if file == "-" {
				file = "standard input"
			}
			if asJSON {
				var v any = verifyFailed{File: file, Error: fmt.Sprint(err)}
				if err == nil {
					m := s.Manifest
					v = verified{OK: true, File: file, Format: m.Format, Den: m.Den, Schema: m.Schema, Created: m.Created, Host: m.Host,
						Agents: m.Agents, Sessions: m.Sessions, Files: s.Files, Bytes: s.Bytes, ArchiveBytes: s.Read,
						Secrets: m.Secrets, Computers: m.Computers, Live: m.Live, Redacted: m.Redacted, LeftOut: m.LeftOut}
				}
				enc := json.NewEncoder(g.stdout)
				enc.SetIndent("", "  ")
				enc.Encode(v)
			}
			if err != nil {
				return fmt.Errorf("%s: %w", file, err)
			}
			if !asJSON {
				printVerified(g.stdout, file, s)
			}
			return nil
		},
	}
	c.Flags().BoolVar(&asJSON, "json", false, "print the summary as JSON")
	return c
}

// printVerified says what a verified backup holds.
func printVerified(w io.Writer, file string, s backup.VerifySummary) {
	m := s.Manifest
	fmt.Fprintf(w, "%s is whole: every file matches its SHA-256\n", file)
	fmt.Fprintf(w, "made:      %s by den %s on %s (format %d, database schema %d)\n",
		m.Created.Local().Format("2006-01-02 15:04:05"), m.Den, orDash(m.Host), m.Format, m.Schema)
	fmt.Fprintf(w, "agents:    %s\n", orDash(strings.Join(m.Agents, ", ")))
	if m.Sessions != nil {
		fmt.Fprintf(w, "sessions:  %d\n", *m.Sessions)
	}
	fmt.Fprintf(w, "files:     %d, %s (the archive: %s)\n", s.Files, config.FormatBytes(s.Bytes), config.FormatBytes(s.Read))
	computers := "yes"
	if !m.Computers {
		computers = "no (each agent gets a new one after a restore)"
	}
	fmt.Fprintf(w, "computers: %s\n", computers)
	secrets := "no"
	switch {
	case m.Secrets:
		secrets = "yes: keep it where only you can read it"
	case len(m.Redacted) > 0:
		secrets = "no; emptied: " + strings.Join(m.Redacted, ", ")
	}
	fmt.Fprintf(w, "secrets:   %s\n", secrets)
	if m.Live {
		fmt.Fprintln(w, "made while den served")
	}
}

func restoreCmd(g *globals) *cobra.Command {
	var force bool
	c := &cobra.Command{
		Use:   "restore FILE",
		Short: "Put a backup back into an empty data dir",
		Long: `Restore a backup made by den backup (FILE, or - for standard input) into
the data dir (--data-dir, $DEN_HOME, ...) and the config file's folder
(--config): on a fresh machine, or into an empty data dir. den serve
must not run on the data dir meanwhile.

den refuses a data dir that holds data and config files that exist,
unless --force: what is there is then moved aside (into
DATA/before-restore-TIME, and CONFIG.before-restore-TIME), never
deleted. It refuses an archive from a newer den, and entries that are
not den's (paths leaving the data dir, devices, links where den makes
none), and checks every file against the archive's SHA-256 list before
anything is put in place. The agents' computers get this machine's
user ids.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			data := DataDir(g.dataDir)
			release, err := daemon.Lock(data)
			if err != nil {
				return fmt.Errorf("restore: %w: stop it first", err)
			}
			defer release()
			var in io.Reader = g.stdin
			o := backup.RestoreOptions{DataDir: data, ConfigPath: g.configFile(), Force: force}
			prog := newProgress(g.stderr, "restore")
			o.Warn = func(msg string) { prog.say("den: restore: " + msg) }
			if args[0] != "-" {
				f, err := os.Open(args[0])
				if err != nil {
					return fmt.Errorf("restore: %w", err)
				}
				defer f.Close()
				if fi, err := f.Stat(); err == nil && fi.Mode().IsRegular() {
					o.Total = fi.Size()
				}
				in = f
				o.Progress = prog.show
			}
			s, err := backup.Restore(cmd.Context(), in, o)
			prog.done()
			for _, p := range s.Aside {
				fmt.Fprintf(g.stderr, "den: what was there is now in %s\n", p)
			}
			if err != nil {
				return err
			}
			m := s.Manifest
			fmt.Fprintf(g.stdout, "restored %d files (%s) into %s from a backup of %s made by den %s on %s\n",
				s.Files, config.FormatBytes(s.Bytes), data, m.Host, m.Den, m.Created.Local().Format("2006-01-02 15:04"))
			for _, note := range restoreNotes(s) {
				fmt.Fprintln(g.stdout, "- "+note)
			}
			return nil
		},
	}
	c.Flags().BoolVar(&force, "force", false, "restore over a data dir that holds data and over config files, moving them aside")
	return c
}

// restoreNotes says what a restored den lacks, and what to do.
func restoreNotes(s backup.RestoreSummary) []string {
	m := s.Manifest
	var out []string
	if !m.Secrets {
		if len(m.Redacted) > 0 {
			out = append(out, "the backup was made without secrets: set these again (den config set, or in mcp.json): "+strings.Join(m.Redacted, ", "))
		}
		out = append(out, "den makes a new token, TLS certificate and push key when it first needs them: log your devices in again (den open)")
		out = append(out, "the agents' browsers start without their website logins; MCP servers that used OAuth need den mcp login again")
	}
	if s.PushForgotten > 0 {
		out = append(out, fmt.Sprintf("%d browsers subscribed to notifications must subscribe again (the backup holds no push key)", s.PushForgotten))
	}
	if !m.Computers {
		out = append(out, "the agents' computers are not in the backup: each agent gets a new one at its next start")
	}
	if m.Live {
		out = append(out, "the backup was made while den served: a computer in use then is as a crash would have left it")
	}
	return out
}

// progress shows a backup's or a restore's progress on a terminal, in
// place; elsewhere it shows nothing (the summary line says it all).
type progress struct {
	w    io.Writer
	verb string
	tty  bool
	mu   sync.Mutex
	open bool
}

func newProgress(w io.Writer, verb string) *progress {
	p := &progress{w: w, verb: verb}
	if f, ok := w.(*os.File); ok {
		p.tty = term.IsTerminal(int(f.Fd()))
	}
	return p
}

func (p *progress) show(pr backup.Progress) {
	if !p.tty {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	line := fmt.Sprintf("den: %s: %d files, %s", p.verb, pr.Files, config.FormatBytes(pr.Done))
	if pr.Total > 0 {
		line += fmt.Sprintf(" / %s (%d%%)", config.FormatBytes(pr.Total), pr.Done*100/pr.Total)
	}
	fmt.Fprintf(p.w, "\r\033[K%s", line)
	p.open = true
}

// say prints a line above the progress.
func (p *progress) say(line string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.open {
		fmt.Fprint(p.w, "\r\033[K")
		p.open = false
	}
	fmt.Fprintln(p.w, line)
}

func (p *progress) done() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.open {
		fmt.Fprint(p.w, "\r\033[K")
		p.open = false
	}
}
