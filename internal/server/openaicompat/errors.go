package openaicompat

import (
	"errors"
	"fmt"
	"net/http"

	"den.dev/den/internal/agent"
	"den.dev/den/internal/config"
	"den.dev/den/internal/llm"
	"den.dev/den/internal/models/retry"
	"den.dev/den/internal/session"
	"den.dev/den/internal/store"
)

// apiError is an error as OpenAI's API answers it: its status, and the
// object of its {"error": ...} body. Param and Code are null when not
// said.
type apiError struct {
	Status  int     `json:"-"`
	Message string  `json:"message"`
	Type    string  `json:"type"`
	Param   *string `json:"param"`
	Code    *string `json:"code"`
}

func (e *apiError) Error() string { return e.Message }

// The error types OpenAI's API uses, of those den answers with.
const (
	invalidRequest    = "invalid_request_error"
	serverError       = "server_error"
	insufficientQuota = "insufficient_quota"
)

func newError(status int, typ, param, code, format string, args ...any) *apiError {
	e := &apiError{Status: status, Type: typ, Message: fmt.Sprintf(format, args...)}
	if param != "" {
		e.Param = &param
	}
	if code != "" {
		e.Code = &code
	}
	return e
}

// invalid is a 400 about the request's parameter param.
func invalid(param, code, format string, args ...any) *apiError {
	return newError(http.StatusBadRequest, invalidRequest, param, code, format, args...)
}

func modelNotFound(model string) *apiError {
	return newError(http.StatusNotFound, invalidRequest, "model", "model_not_found",
		"The model `%s` does not exist: den's models are den/AGENT, AGENT being default or an agent of den's config (GET /v1/models lists them).", model)
}

func sessionNotFound(id, agent string) *apiError {
	return newError(http.StatusNotFound, invalidRequest, "", "session_not_found",
		"den has no session %q of the agent %s (header %s).", id, agent, SessionHeader)
}

func sessionBusy(id string) *apiError {
	return newError(http.StatusConflict, invalidRequest, "", "session_busy",
		"den's session %s is running a turn: the message was queued, and joins that turn at its next turn boundary; follow it in den (GET /api/v1/sessions/%s/events).", id, id)
}

// errorFor maps every error the handlers meet to OpenAI's shape: the
// one table of them. shown says whether the error's message may reach
// the client (a run's outcome, which den's own faces show too); den's
// other failures get a message that points at its log.
func errorFor(err error, shown bool) *apiError {
	var ae *apiError
	var tooLarge *http.MaxBytesError
	var upstream *llm.APIError
	var target *retry.Error
	var exhausted *retry.ExhaustedError
	msg := err.Error()
	switch {
	case errors.As(err, &ae):
		return ae
	case errors.As(err, &tooLarge):
		return newError(http.StatusRequestEntityTooLarge, invalidRequest, "", "request_too_large",
			"The request body is over den's limit of %d bytes.", tooLarge.Limit)
	case errors.Is(err, store.ErrNotFound):
		return newError(http.StatusNotFound, invalidRequest, "", "not_found", "%s", msg)
	case errors.Is(err, session.ErrBadOptions), errors.Is(err, config.ErrInvalid):
		return newError(http.StatusBadRequest, invalidRequest, "", "invalid_value", "%s", msg)
	case errors.Is(err, agent.ErrContextFull):
		return newError(http.StatusBadRequest, invalidRequest, "messages", "context_length_exceeded", "%s", msg)
	case errors.Is(err, agent.ErrBudget):
		return newError(http.StatusTooManyRequests, insufficientQuota, "", "insufficient_quota", "%s", msg)
	case errors.Is(err, store.ErrSessionBusy):
		return newError(http.StatusConflict, invalidRequest, "", "session_busy", "%s", msg)
	case errors.Is(err, session.ErrClosed), errors.Is(err, agent.ErrHalted):
		return newError(http.StatusServiceUnavailable, serverError, "", "shutting_down", "den is shutting down.")
	case errors.Is(err, agent.ErrCanceled):
		return newError(http.StatusInternalServerError, serverError, "", "canceled", "The turn was canceled (den's API or another face stopped it).")
	case errors.Is(err, agent.ErrMaxTurns):
		return newError(http.StatusInternalServerError, serverError, "", "max_turns", "The agent %s without an answer.", msg)
	case errors.As(err, &upstream), errors.As(err, &target), errors.As(err, &exhausted),
		errors.Is(err, llm.ErrStream), errors.Is(err, llm.ErrEmpty), errors.Is(err, llm.ErrNoKey), errors.Is(err, retry.ErrStall):
		return newError(http.StatusBadGateway, serverError, "", "upstream_error", "den's model failed: %s", msg)
	case shown:
		return newError(http.StatusInternalServerError, serverError, "", "", "%s", msg)
	}
	return newError(http.StatusInternalServerError, serverError, "", "", "den failed to answer; its log says why.")
}
