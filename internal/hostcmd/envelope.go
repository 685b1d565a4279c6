package hostcmd

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"time"
)

// Error codes of the envelope.
const (
	CodeDenied        = "authorization_denied"
	CodeNotAvailable  = "not_available"
	CodeInvalidArgs   = "invalid_args"
	CodeNoData        = "no_data"
	CodeInternalError = "internal_error"
)

// Exit codes of every host command.
const (
	ExitOK           = 0
	ExitError        = 1
	ExitInvalidArgs  = 2
	ExitDenied       = 3
	ExitNotAvailable = 4
)

// Envelope is what a host command prints on stdout:
//
//	{"ok":true,"tool":T,"action":A,"data":D,"timestamp":TS}
//	{"ok":false,"tool":T,"action":A,"error":{"code":C,"message":M},"timestamp":TS}
//
// The timestamp is ISO 8601 in local time.
type Envelope struct {
	OK        bool
	Tool      string
	Action    string
	Data      any
	Error     *EnvError
	Timestamp time.Time
}

// EnvError is an envelope's error.
type EnvError struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}

// OK returns a success envelope.
func OK(tool, action string, data any) Envelope {
	return Envelope{OK: true, Tool: tool, Action: action, Data: data}
}

// Fail returns an error envelope.
func Fail(tool, action, code, message string) Envelope {
	return Envelope{Tool: tool, Action: action, Error: &EnvError{Code: code, Message: message}}
}

// ExitCode is the exit code that goes with the envelope.
func (e Envelope) ExitCode() int {
	if e.OK {
		return ExitOK
	}
	if e.Error == nil {
		return ExitError
	}
	switch e.Error.Code {
	case CodeInvalidArgs:
		return ExitInvalidArgs
	case CodeDenied:
		return ExitDenied
	case CodeNotAvailable:
		return ExitNotAvailable
	}
	return ExitError
}

// MarshalJSON writes the wire form: data only on success, error only
// on failure.
func (e Envelope) MarshalJSON() ([]byte, error) {
	ts := e.Timestamp
	if ts.IsZero() {
		ts = time.Now()
	}
	w := struct {
		OK        bool      `json:"ok"`
		Tool      string    `json:"tool"`
		Action    string    `json:"action"`
		Data      any       `json:"data,omitempty"`
		Error     *EnvError `json:"error,omitempty"`
		Timestamp string    `json:"timestamp"`
	}{OK: e.OK, Tool: e.Tool, Action: e.Action, Timestamp: ts.Local().Format("2006-01-02T15:04:05.000Z07:00")}
	if e.OK {
		w.Data = e.Data
		if w.Data == nil {
			w.Data = struct{}{}
		}
	} else {
		w.Error = e.Error
		if w.Error == nil {
			w.Error = &EnvError{Code: CodeInternalError, Message: "unknown error"}
		}
	}
	return json.Marshal(w)
}

// Format is how an envelope is printed.
type Format struct {
	// Compact prints one line; the default is indented, with sorted
	// keys.
	Compact bool
	// Quiet prints only the data (a string as plain text) or only the
	// error object.
	Quiet bool
}

// ParseCommon takes the flags every host command shares (--compact,
// -q, --quiet) out of args, up to a "--", and returns the rest in
// order.
func ParseCommon(args []string) (Format, []string) {
	var f Format
	rest := make([]string, 0, len(args))
	for i, a := range args {
		if a == "--" {
			rest = append(rest, args[i:]...)
			break
		}
		switch a {
		case "--compact":
			f.Compact = true
		case "-q", "--quiet":
			f.Quiet = true
		default:
			rest = append(rest, a)
		}
	}
	return f, rest
}

// Write prints env to w in format f and returns its exit code. A value
// that cannot be encoded becomes an internal_error envelope.
func Write(w io.Writer, env Envelope, f Format) int {
	b, err := encode(env, f)
	if err != nil {
		env = Fail(env.Tool, env.Action, CodeInternalError, "encoding the result: "+err.Error())
		b, _ = encode(env, f)
	}
	w.Write(b)
	return env.ExitCode()
}

func encode(env Envelope, f Format) ([]byte, error) {
	var v any = env
	if f.Quiet {
		if !env.OK {
			v = env.Error
			if env.Error == nil {
				v = EnvError{Code: CodeInternalError, Message: "unknown error"}
			}
		} else if s, ok := env.Data.(string); ok {
			return []byte(s + "\n"), nil
		} else {
			v = env.Data
		}
	}
	raw, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	// Sorted keys everywhere: decode into maps and encode again.
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var generic any
	if err := dec.Decode(&generic); err != nil {
		return nil, fmt.Errorf("hostcmd: envelope: %w", err)
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if !f.Compact {
		enc.SetIndent("", "  ")
	}
	if err := enc.Encode(generic); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}
