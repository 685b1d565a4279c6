package cgroup

import (
	"errors"
	"os"
	"path"
)

// Sweep removes the groups below the manager's parent, two levels deep
// (such as "agent-default/main.1234.ab12"), for which stale returns
// true: groups left by a den that was killed. Groups that still hold
// processes are killed first, as Remove does.
func (m *Manager) Sweep(stale func(name string) bool) error {
	seen := make(map[string]bool)
	var errs []error
	for _, dir := range m.parentDirs() {
		tops, err := os.ReadDir(dir)
		if err != nil {
			continue
		}
		for _, top := range tops {
			if !top.IsDir() {
				continue
			}
			leaves, err := os.ReadDir(path.Join(dir, top.Name()))
			if err != nil {
				continue
			}
			for _, leaf := range leaves {
				name := top.Name() + "/" + leaf.Name()
				if !leaf.IsDir() || seen[name] || validName(name) != nil || !stale(name) {
					continue
				}
				seen[name] = true
				if err := m.group(name).Remove(); err != nil {
					errs = append(errs, err)
				}
			}
		}
	}
	return errors.Join(errs...)
}
