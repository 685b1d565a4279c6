package mcpserver

import (
	"context"
	"errors"
	"fmt"

	"den.dev/den/internal/session"
	"den.dev/den/internal/store"
)

// refusal is a call den refuses or cannot carry out for a reason of the
// call's own: a bad argument, a path through a link, a call the gate
// denied. Its message is for the client.
type refusal struct {
	msg    string
	folder bool // a folder where a file was to be read
}

func (e *refusal) Error() string { return e.msg }

func refusedf(format string, args ...any) error {
	return &refusal{msg: fmt.Sprintf(format, args...)}
}

// toolError is what a client is told of err, a tool's failure: a
// refusal as it is; anything else, den's own failure, in general words
// (the log has it).
func (s *Server) toolError(tool string, err error) error {
	var r *refusal
	switch {
	case errors.As(err, &r):
		return r
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		return fmt.Errorf("%s was canceled", tool)
	case errors.Is(err, session.ErrClosed):
		return fmt.Errorf("den is stopping: call %s again once it runs", tool)
	case errors.Is(err, store.ErrNotFound), errors.Is(err, session.ErrBadOptions):
		// No such session; a model that does not resolve, a bad name.
		return refusedf("%v", err)
	}
	s.log.Error("mcp: tool failed", "tool", tool, "err", err)
	return fmt.Errorf("den could not carry out %s; its log says why", tool)
}
