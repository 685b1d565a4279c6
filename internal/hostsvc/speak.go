package hostsvc

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os/exec"
	"regexp"
	"strings"
	"time"

	"den.dev/den/internal/hostfs"
	"den.dev/den/internal/sandbox"
)

// voiceRE is what a voice may be named: espeak-ng's voices and variants
// ("en-us", "en+f3", "mb-en1", "en-gb-x-rp"). No "/" or "..": espeak-ng
// loads a voice by that name from the disk.
var voiceRE = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_+-]{0,63}$`)

func (s *Service) parseSpeak(c *Call) (*Plan, *Result) {
	f := newFlags("den-speak")
	voice := f.String("voice", "espeak-ng voice (with --browser: a voice of the browser)")
	browser := f.Bool("browser", "speak on the user's browser (their phone) instead of into a file")
	lang := f.String("lang", "with --browser: the language, such as en-US")
	rate := f.Float("rate", "with --browser: the speed, 0.5 to 2")
	args, bad := f.parse("speak", c.Args)
	if bad != nil {
		return nil, bad
	}
	text := strings.TrimSpace(strings.Join(args, " "))
	if text == "" {
		return nil, invalid("speak", "no text")
	}
	if bad := checkText("speak", "the text", text, maxText); bad != nil {
		return nil, bad
	}
	if *browser {
		return s.speakInBrowser(c, text, *voice, *lang, *rate)
	}
	switch {
	case *lang != "" || *rate != 0:
		return nil, invalid("speak", "--lang and --rate go with --browser; espeak-ng takes a voice (--voice)")
	case *voice != "" && !voiceRE.MatchString(*voice):
		return nil, invalid("speak", "--voice %q: a voice name is letters, digits, '-', '_' and '+' (espeak-ng --voices lists them)", *voice)
	}
	bin, err := s.lookPath("espeak-ng")
	if err != nil {
		return nil, unavailable("speak", "espeak-ng is not installed on the host")
	}
	if s.Attachments == "" {
		return nil, unavailable("speak", "no attachments folder")
	}
	return plan("speak", "", "", func(ctx context.Context) Result {
		// espeak-ng writes to den, never to a file by name: the
		// attachments folder is the computer's, and a name there could
		// be a link it planted.
		argv := []string{"--stdout"}
		if *voice != "" {
			argv = append(argv, "-v", *voice)
		}
		ctx, cancel := context.WithTimeout(ctx, time.Minute)
		defer cancel()
		cmd := exec.CommandContext(ctx, bin, append(argv, "--", text)...)
		var out, msg bytes.Buffer
		cmd.Stdout, cmd.Stderr = &limitWriter{w: &out, n: maxSpeech}, &limitWriter{w: &msg, n: 4 << 10}
		if err := cmd.Run(); err != nil {
			return fail("speak", CodeInternal, "espeak-ng: %v: %s", err, strings.TrimSpace(msg.String()))
		}
		if out.Len() == 0 {
			return fail("speak", CodeInternal, "espeak-ng made no sound: %s", strings.TrimSpace(msg.String()))
		}
		if out.Len() >= maxSpeech {
			return fail("speak", CodeInvalidArgs, "the speech is longer than den keeps (%d bytes): say less at a time", maxSpeech)
		}
		name, err := s.saveAttachment("speech", ".wav", out.Bytes())
		if err != nil {
			return fail("speak", CodeInternal, "%v", err)
		}
		guest := sandbox.GuestAttachments + "/" + name
		s.Emit(&SpeechEvent{Path: guest, Text: text})
		return ok("speak", map[string]string{"path": guest})
	})
}

// saveAttachment writes data under a new name in the attachments folder,
// owned by the computer's root.
func (s *Service) saveAttachment(prefix, ext string, data []byte) (string, error) {
	d, err := hostfs.OpenDir(s.Attachments)
	if err != nil {
		return "", err
	}
	defer d.Close()
	b := make([]byte, 4)
	rand.Read(b)
	name := fmt.Sprintf("%s-%s-%s%s", prefix, time.Now().UTC().Format("20060102-150405.000"), hex.EncodeToString(b), ext)
	if err := d.WriteFile(name, data, 0o644, s.Owner, true); err != nil {
		return "", err
	}
	return name, nil
}

// limitWriter keeps at most n bytes and drops the rest (the caller
// checks the length).
type limitWriter struct {
	w interface{ Write([]byte) (int, error) }
	n int
}

func (l *limitWriter) Write(p []byte) (int, error) {
	if l.n > 0 {
		k := min(len(p), l.n)
		l.w.Write(p[:k])
		l.n -= k
	}
	return len(p), nil
}
