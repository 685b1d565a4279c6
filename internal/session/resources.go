package session

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"den.dev/den/internal/computer"
	"den.dev/den/internal/resource"
	"den.dev/den/internal/store"
)

// Dir is the host folder of k's files in f: where den://KIND/ is. It
// is "" when f does not say (the session's folders of AgentFolders).
func (f Folders) Dir(k resource.Kind) string {
	switch k {
	case resource.Workspace:
		return f.Workspace
	case resource.Attachments:
		return f.Attachments
	case resource.Offloads:
		return f.Offloads
	case resource.Browser:
		return f.Browser
	case resource.Memory:
		return f.Memory
	case resource.Skills:
		return f.Skills
	case resource.Shared:
		return f.Shared
	}
	return ""
}

// AgentFolders says where an agent's own folders are (Memory, Skills
// and Shared; the rest is empty), without opening its computer. An
// agent whose computer den never made has none: an error wrapping
// store.ErrNotFound; a name that cannot be an agent's wraps
// ErrBadOptions. The folders are the computer's to change: use hostfs
// in them.
func (r *Runtime) AgentFolders(ctx context.Context, agent string) (Folders, error) {
	if err := computer.ValidName("agent", agent); err != nil {
		return Folders{}, fmt.Errorf("%w: %w", ErrBadOptions, err)
	}
	// Where computer.Manager keeps the agent's computer.
	dir := filepath.Join(r.o.DataDir, "agents", agent)
	if _, err := os.Stat(dir); errors.Is(err, fs.ErrNotExist) {
		return Folders{}, fmt.Errorf("agent %s has no computer yet: %w", agent, store.ErrNotFound)
	} else if err != nil {
		return Folders{}, fmt.Errorf("session: agent %s: %w", agent, err)
	}
	return Folders{Memory: filepath.Join(dir, "memory"), Skills: filepath.Join(dir, "skills"), Shared: filepath.Join(dir, "shared")}, nil
}
