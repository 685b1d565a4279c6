package sandbox

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"golang.org/x/sys/unix"

	"den.dev/den/internal/sandbox/output"
)

// capture turns a command's raw stdout and stderr into a Result's text:
// each stream is cleaned on its own (so an escape sequence or a rune is
// never cut by the other stream's bytes) and then lands, a line at a
// time, in the stream's capped buffer and in the combined one. Only the
// combined buffer spills to the offload folder; it is what the model
// reads.
type capture struct {
	combined, stdout, stderr *output.Capture
	outC, errC               *output.Cleaner
	spillName                string // guest path, once a spill file exists
	raw                      func(stream, text string)
}

func newCapture(limit int, offloadHost string, onOutput func(stream, text string), raw bool, own owner) *capture {
	c := &capture{}
	if raw {
		c.raw, onOutput = onOutput, nil
	}
	spill := func() (io.WriteCloser, error) {
		if offloadHost == "" {
			return nil, fmt.Errorf("no offload folder")
		}
		name := fmt.Sprintf("output-%s-%s.txt", time.Now().UTC().Format("20060102-150405"), nonce()[:8])
		// The folder is the computer's: never follow what it planted.
		f, err := os.OpenFile(filepath.Join(offloadHost, name), os.O_WRONLY|os.O_CREATE|os.O_EXCL|unix.O_NOFOLLOW, 0o644)
		if err != nil {
			return nil, err
		}
		if own.uid >= 0 {
			if err := f.Chown(own.uid, own.gid); err != nil {
				f.Close()
				return nil, err
			}
		}
		c.spillName = GuestOffloads + "/" + name
		return f, nil
	}
	c.combined = output.NewCapture(limit, spill)
	c.stdout = output.NewCapture(limit, nil)
	c.stderr = output.NewCapture(limit, nil)
	c.outC = output.NewCleaner(streamWriter{c.stdout, c.combined, "stdout", onOutput})
	c.errC = output.NewCleaner(streamWriter{c.stderr, c.combined, "stderr", onOutput})
	return c
}

type streamWriter struct {
	own, combined *output.Capture
	name          string
	onOutput      func(stream, text string)
}

func (w streamWriter) Write(p []byte) (int, error) {
	w.own.Write(p)
	w.combined.Write(p)
	if w.onOutput != nil {
		w.onOutput(w.name, string(p))
	}
	return len(p), nil
}

func (c *capture) write(stream int, p []byte) {
	if c.raw != nil {
		c.raw(streamNames[stream], string(p))
	}
	if stream == 1 {
		c.outC.Write(p)
	} else {
		c.errC.Write(p)
	}
}

// finish flushes the cleaners and fills the output fields of r.
var streamNames = [3]string{"", "stdout", "stderr"}

func (c *capture) finish(r *Result) {
	c.outC.Close()
	c.errC.Close()
	c.combined.Close()
	r.Output = c.combined.Text()
	r.Stdout = c.stdout.Text()
	r.Stderr = c.stderr.Text()
	r.TotalBytes = c.combined.Total()
	r.Truncated = c.combined.Truncated()
	if r.Truncated {
		if err := c.combined.Err(); err != nil || c.spillName == "" {
			r.addNote(fmt.Sprintf("output truncated to head and tail; the full output could not be saved: %v", err))
		} else {
			r.OffloadPath = c.spillName
			r.addNote(fmt.Sprintf("output truncated to head and tail; full output (%d bytes) in %s", r.TotalBytes, r.OffloadPath))
		}
	}
}

func (r *Result) addNote(s string) {
	if r.Note != "" {
		r.Note += "; "
	}
	r.Note += s
}
