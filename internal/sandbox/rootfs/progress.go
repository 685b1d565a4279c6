package rootfs

import (
	"io"
	"time"
)

// Stage is the step of provisioning a Progress report belongs to.
type Stage string

// The stages, in the order they usually happen.
const (
	StageDownload  Stage = "download"
	StageVerify    Stage = "verify"
	StageBootstrap Stage = "bootstrap"
	StageExtract   Stage = "extract"
	StageSetup     Stage = "setup"
	StageFallback  Stage = "fallback"
	// StageOwners is den giving a tree to the computer's own user ids
	// (reported by the caller that moves them).
	StageOwners Stage = "owners"
)

// Progress is one report. Done and Total count bytes when Total > 0; byte
// reports come at most about ten times a second, plus a final one.
type Progress struct {
	Stage   Stage
	Message string
	Done    int64
	Total   int64
}

// byteInterval is the minimum time between two byte-progress reports.
const byteInterval = 100 * time.Millisecond

// reporter forwards reports to Options.Progress, throttling byte counts. It is
// used from one goroutine at a time.
type reporter struct {
	fn   func(Progress)
	last time.Time
}

func (r *reporter) say(stage Stage, msg string) {
	if r.fn != nil {
		r.fn(Progress{Stage: stage, Message: msg})
	}
}

// bytes reports done of total, unless the last byte report was too recent and
// this is not the final one.
func (r *reporter) bytes(stage Stage, msg string, done, total int64) {
	if r.fn == nil {
		return
	}
	now := time.Now()
	if done != total && now.Sub(r.last) < byteInterval {
		return
	}
	r.last = now
	r.fn(Progress{Stage: stage, Message: msg, Done: done, Total: total})
}

// countingReader reports the bytes read through it.
type countingReader struct {
	r     io.Reader
	rep   *reporter
	stage Stage
	msg   string
	done  int64
	total int64
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.done += int64(n)
	if n > 0 {
		c.rep.bytes(c.stage, c.msg, c.done, c.total)
	}
	return n, err
}
