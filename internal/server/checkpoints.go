package server

import (
	"net/http"
	"time"

	"den.dev/den/internal/checkpoint"
	"den.dev/den/internal/computer"
	"den.dev/den/internal/server/reply"
)

// Undo in the computer: a session's checkpoints, what each turn
// changed, and restoring one.

// checkpointJSON is a checkpoint as the API shows it.
type checkpointJSON struct {
	ID        int       `json:"id"`
	Created   time.Time `json:"created"`
	MessageID string    `json:"message_id,omitempty"` // the turn: the assistant message whose calls came after it
	Reason    string    `json:"reason"`               // turn, restore, manual
	Entries   int       `json:"entries"`
	Read      int       `json:"read"`
	Added     int64     `json:"added_bytes"`
	TookMS    int64     `json:"took_ms"`
	// Next is the session's checkpoint after it (absent: none yet): the
	// turn's changes are what differs between the two.
	Next int `json:"next,omitempty"`
}

func (s *Server) listCheckpoints(w http.ResponseWriter, r *http.Request) error {
	list, err := s.rt.Checkpoints(r.Context(), r.PathValue("id"))
	if err != nil {
		return err
	}
	out := make([]checkpointJSON, len(list))
	for i, c := range list {
		out[i] = checkpointJSON{ID: c.ID, Created: c.Created, MessageID: c.Turn, Reason: c.Reason, Entries: c.Entries,
			Read: c.Read, Added: c.Added, TookMS: c.Took.Milliseconds(), Next: c.Next}
	}
	return reply.JSON(w, http.StatusOK, map[string]any{"checkpoints": out})
}

// maxChanges bounds the files a changes answer lists (the counts are
// whole).
const maxChanges = 1000

func (s *Server) checkpointChanges(w http.ResponseWriter, r *http.Request) error {
	id, err := computer.ParseCheckpoint(r.PathValue("checkpoint"))
	if err != nil {
		return badRequest("%v", err)
	}
	d, err := s.rt.TurnChanges(r.Context(), r.PathValue("id"), id)
	if err != nil {
		return err
	}
	return reply.JSON(w, http.StatusOK, changesJSON(id, d))
}

func changesJSON(id int, d checkpoint.Diff) map[string]any {
	changes, more := d.Changes, 0
	if len(changes) > maxChanges {
		changes, more = changes[:maxChanges], len(changes)-maxChanges
	}
	if changes == nil {
		changes = []checkpoint.Change{}
	}
	packages := d.Packages
	if packages == nil {
		packages = []checkpoint.PackageChange{}
	}
	return map[string]any{"checkpoint": id, "added": d.Added, "removed": d.Removed, "changed": d.Changed,
		"packages": packages, "changes": changes, "more": more}
}

func (s *Server) restoreCheckpoint(w http.ResponseWriter, r *http.Request) error {
	id, err := computer.ParseCheckpoint(r.PathValue("checkpoint"))
	if err != nil {
		return badRequest("%v", err)
	}
	res, err := s.rt.Restore(r.Context(), r.PathValue("id"), id)
	if err != nil {
		return err
	}
	left := res.Left
	if left == nil {
		left = []string{}
	}
	return reply.JSON(w, http.StatusOK, map[string]any{
		"checkpoint": id,
		"message_id": res.Checkpoint.Turn,
		"saved":      res.Saved.ID, // restoring it undoes this restore; 0: not kept
		"undone":     changesJSON(id, res.Undone),
		"untouched":  res.Untouched,
		"left":       left,
	})
}
