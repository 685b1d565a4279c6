package tool

import (
	"context"
	"fmt"
	"unicode/utf8"

	"den.dev/den/internal/llm"
)

// Capped returns text as a tool's result carries it, capped as shell
// output is: whole when it has at most ShellMaxChars characters; else
// its first and last halves with the whole text saved in /den/offloads
// (kind starts the file's name, e.g. "mcp-github") and a note, on a
// line of its own, saying where. A text that cannot be saved is still
// capped, and the note says why it was not saved. The error is for
// what ends the turn (the computer is gone).
func Capped(ctx context.Context, env *Env, kind, text string) (string, error) {
	if utf8.RuneCountInString(text) <= ShellMaxChars {
		return text, nil
	}
	p, problem, err := saveOffload(ctx, env, kind, text)
	if err != nil {
		return "", err
	}
	note := fmt.Sprintf("[cut to its first and last %d characters; the whole text (%d bytes) is in %s — read parts of it with file_read (offset, lines) or grep]",
		ShellMaxChars/2, len(text), p)
	if problem != "" {
		note = fmt.Sprintf("[cut to its first and last %d characters; the whole text could not be saved: %s]", ShellMaxChars/2, problem)
	}
	return headTail(text, ShellMaxChars/2, ShellMaxChars/2) + "\n" + note, nil
}

// SaveFile writes data to the file at guestPath in the computer (its
// parent folders made, an existing file replaced), as file_write does.
// problem is for the model; the error ends the turn.
func SaveFile(ctx context.Context, env *Env, guestPath string, data []byte) (problem string, err error) {
	return writeFile(ctx, env, ResolvePath(guestPath), data, false)
}

// ViewImage is an image as read_image gives it to the model: PNG,
// JPEG, GIF or WebP, scaled to at most ImageMaxEdge px and
// ImageMaxBytes. It returns the image and what it is ("PNG 64x64"), or
// a problem saying why the model cannot have it.
func ViewImage(data []byte) (img *llm.Image, info, problem string) {
	return prepareImage(data)
}
