package tlscert

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
)

// writeAtomic stores data as dir/name with mode perm: written to a
// temporary file in dir, synced, then renamed over name, so a reader sees
// the old file or the new one, never part of one.
func writeAtomic(dir, name string, data []byte, perm fs.FileMode) (err error) {
	f, err := os.CreateTemp(dir, "."+name+".tmp*")
	if err != nil {
		return fmt.Errorf("tlscert: write %s: %w", name, err)
	}
	tmp := f.Name()
	defer func() {
		if err != nil {
			f.Close()
			os.Remove(tmp)
		}
	}()
	if err := f.Chmod(perm); err != nil {
		return fmt.Errorf("tlscert: write %s: %w", name, err)
	}
	if _, err := f.Write(data); err != nil {
		return fmt.Errorf("tlscert: write %s: %w", name, err)
	}
	if err := f.Sync(); err != nil {
		return fmt.Errorf("tlscert: sync %s: %w", name, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("tlscert: write %s: %w", name, err)
	}
	if err := os.Rename(tmp, filepath.Join(dir, name)); err != nil {
		return fmt.Errorf("tlscert: write %s: %w", name, err)
	}
	return nil
}

// syncDir makes the renames in dir durable.
func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("tlscert: sync %s: %w", dir, err)
	}
	defer d.Close()
	if err := d.Sync(); err != nil {
		return fmt.Errorf("tlscert: sync %s: %w", dir, err)
	}
	return nil
}
