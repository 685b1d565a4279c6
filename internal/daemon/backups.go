package daemon

import (
	"context"
	"os"
	"path/filepath"
	"time"

	"den.dev/den/internal/backup"
	"den.dev/den/internal/config"
)

// backupCheck is how often den serve reads [backup] again when no
// backup is due sooner: a change to the config takes effect within it.
const backupCheck = time.Minute

// backups makes the scheduled backups of [backup] while den serve runs,
// until ctx ends: one whenever the newest scheduled backup in the
// folder is `every` old (the first a minute after den serve starts, or
// after `every` when that is shorter), keeping the newest `keep`. A
// backup that failed is tried again after `every` or an hour, whichever
// is shorter. The file is read again each minute at least. Ending ctx
// stops a backup midway; it leaves no file.
func (d *Daemon) backups(ctx context.Context) {
	start := time.Now()
	var retry time.Time
	announced := ""
	for {
		cfg := d.backupConfig()
		every, _ := cfg.Interval() // checked when the config was loaded
		dir := cfg.Folder(d.o.DataDir)
		wait := backupCheck
		if every > 0 {
			if now := every.String() + " " + dir; now != announced {
				d.log.Info("scheduled backups", "every", every.String(), "dir", dir, "keep", cfg.Kept())
				announced = now
			}
			due, err := nextBackup(dir, every, start)
			if err != nil {
				d.log.Warn("scheduled backups: the folder cannot be read", "dir", dir, "err", err)
			}
			if retry.After(due) {
				due = retry
			}
			wait = min(time.Until(due), backupCheck)
		}
		if wait > 0 {
			select {
			case <-ctx.Done():
				return
			case <-time.After(wait):
			}
			continue
		}
		if err := d.backupOnce(ctx, cfg, dir); err != nil {
			if ctx.Err() != nil {
				return
			}
			d.log.Warn("scheduled backup failed", "dir", dir, "err", err)
			retry = time.Now().Add(min(every, time.Hour))
		}
	}
}

// backupConfig is [backup] as the config file says now, so that den
// config set takes effect without a restart; the daemon's config when
// the file does not load (it is being edited, say).
func (d *Daemon) backupConfig() config.Backup {
	if d.o.ConfigPath != "" {
		if c, err := config.Load(d.o.ConfigPath, false); err == nil {
			return c.Backup
		}
	}
	return d.rt.Config().Backup
}

// nextBackup is when the next scheduled backup into dir is due.
func nextBackup(dir string, every time.Duration, start time.Time) (time.Time, error) {
	_, times, err := backup.Scheduled(dir)
	if len(times) == 0 {
		return start.Add(min(every, time.Minute)), err
	}
	return times[len(times)-1].Add(every), err
}

// backupOnce makes one scheduled backup and removes the old ones.
func (d *Daemon) backupOnce(ctx context.Context, cfg config.Backup, dir string) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	path := filepath.Join(dir, backup.ScheduledName(time.Now()))
	s, err := backup.WriteFile(ctx, path, backup.Options{
		DataDir: d.o.DataDir, ConfigPath: d.o.ConfigPath, Secrets: cfg.WithSecrets,
		ExcludeComputers: cfg.ExcludeComputers, Live: true, Version: d.o.Version,
		Warn: func(msg string) { d.log.Warn("backup: " + msg) },
	})
	if err != nil {
		return err
	}
	d.log.Info("backup written", "file", path, "bytes", s.Written, "files", s.Files, "ms", s.Took.Milliseconds())
	removed, err := backup.Rotate(dir, cfg.Kept())
	for _, name := range removed {
		d.log.Info("old backup removed", "file", filepath.Join(dir, name))
	}
	if err != nil {
		d.log.Warn("old backups not removed", "dir", dir, "err", err)
	}
	return nil
}
