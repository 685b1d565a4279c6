package hostsvc

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"regexp"
	"strings"
	"time"

	"den.dev/den/internal/hostfs"
	"den.dev/den/internal/sandbox"
)

// ErrNoDevice is Device's error when no browser with den's web face is
// connected; ErrDeviceRefused wraps the browser's own refusal (the user
// said no, or it has no such sensor).
var (
	ErrNoDevice      = errors.New("no browser with den's web face is connected")
	ErrDeviceRefused = errors.New("the browser refused")
)

// Device asks the user's connected browser to do something:
//   - "location" (args nil; the answer {"latitude", "longitude",
//     "accuracy_m"});
//   - "clipboard" ({"action": "read"|"write", "text"}; {"text"} or
//     {"written": true});
//   - "camera" ({"prompt"}; {"name"}: the photo's name in the session's
//     attachments, uploaded there by the browser);
//   - "speak" ({"text", "voice", "lang", "rate"}; {"voice"} once it has
//     spoken).
type Device func(ctx context.Context, session, kind string, args any) (json.RawMessage, error)

const (
	defaultDeviceWait = 30 * time.Second
	maxDeviceWait     = 2 * time.Minute
)

func (s *Service) parseLocation(c *Call) (*Plan, *Result) {
	f := newFlags("den-location")
	timeout := f.Duration("timeout", defaultDeviceWait)
	args, bad := f.parse("location", c.Args)
	if bad != nil {
		return nil, bad
	}
	if len(args) != 0 {
		return nil, invalid("location", "den-location takes no arguments, only --timeout")
	}
	if *timeout <= 0 || *timeout > maxDeviceWait {
		return nil, invalid("location", "--timeout: want a duration from 1s to %s", maxDeviceWait)
	}
	if s.Device == nil {
		return nil, unavailable("location", "this den has no web face: den-location works in sessions of den serve, with den open in a browser")
	}
	return plan("location", "", "the user's location, from their browser", func(ctx context.Context) Result {
		ctx, cancel := context.WithTimeout(ctx, *timeout)
		defer cancel()
		raw, err := s.Device(ctx, c.Session, "location", nil)
		switch {
		case errors.Is(err, ErrNoDevice):
			return fail("location", CodeNotAvailable, "%v: open den on your phone or computer and try again", err)
		case errors.Is(err, ErrDeviceRefused):
			return fail("location", CodeDenied, "%v", err)
		case errors.Is(err, context.DeadlineExceeded):
			return fail("location", CodeNotAvailable, "no browser answered within %s", *timeout)
		case err != nil:
			return fail("location", CodeInternal, "%v", err)
		}
		// The answer comes from a browser: take only what den asked
		// for, checked.
		var loc struct {
			Latitude  *float64 `json:"latitude"`
			Longitude *float64 `json:"longitude"`
			Accuracy  *float64 `json:"accuracy_m"`
		}
		if err := json.Unmarshal(raw, &loc); err != nil || loc.Latitude == nil || loc.Longitude == nil ||
			math.Abs(*loc.Latitude) > 90 || math.Abs(*loc.Longitude) > 180 {
			return fail("location", CodeInternal, "the browser's answer is not a location")
		}
		out := map[string]any{"latitude": *loc.Latitude, "longitude": *loc.Longitude}
		if loc.Accuracy != nil && *loc.Accuracy >= 0 {
			out["accuracy_m"] = *loc.Accuracy
		}
		return ok("location", out)
	})
}

const (
	defaultCameraWait = 2 * time.Minute
	maxCameraWait     = 10 * time.Minute
	maxPrompt         = 500
	// maxPhoto bounds the photo den accepts as the camera's answer (the
	// attachment route's own limit is larger).
	maxPhoto = 50 << 20
)

// parseCamera asks the user, through their browser, to take a photo.
// The browser uploads it to the session's /den/attachments and names
// it in its answer; den checks that it is there, is an image, and is
// not a link the computer planted, and prints its path.
func (s *Service) parseCamera(c *Call) (*Plan, *Result) {
	f := newFlags("den-camera")
	prompt := f.String("prompt", "what to photograph, shown to the user")
	timeout := f.Duration("timeout", defaultCameraWait)
	args, bad := f.parse("camera", c.Args)
	if bad != nil {
		return nil, bad
	}
	switch {
	case len(args) != 0:
		return nil, invalid("camera", "den-camera takes no arguments, only --prompt and --timeout")
	case *timeout <= 0 || *timeout > maxCameraWait:
		return nil, invalid("camera", "--timeout: want a duration from 1s to %s", maxCameraWait)
	case hasControl(*prompt):
		return nil, invalid("camera", "--prompt: one line of text, without control characters")
	}
	if bad := checkText("camera", "the prompt", *prompt, maxPrompt); bad != nil {
		return nil, bad
	}
	if s.Device == nil {
		return nil, unavailable("camera", "this den has no web face: den-camera works in sessions of den serve, with den open in a browser")
	}
	if s.Attachments == "" {
		return nil, unavailable("camera", "no attachments folder")
	}
	detail := "a photo the user takes with their camera"
	if *prompt != "" {
		detail += ": " + *prompt
	}
	return plan("camera", "", detail, func(ctx context.Context) Result {
		ctx, cancel := context.WithTimeout(ctx, *timeout)
		defer cancel()
		raw, err := s.Device(ctx, c.Session, "camera", map[string]string{"prompt": *prompt})
		switch {
		case errors.Is(err, ErrNoDevice):
			return fail("camera", CodeNotAvailable, "%v: open den on your phone and try again", err)
		case errors.Is(err, ErrDeviceRefused):
			return fail("camera", CodeDenied, "%v", err)
		case errors.Is(err, context.DeadlineExceeded):
			return fail("camera", CodeNotAvailable, "no photo was taken within %s", *timeout)
		case err != nil:
			return fail("camera", CodeInternal, "%v", err)
		}
		var got struct {
			Name string `json:"name"`
		}
		if json.Unmarshal(raw, &got) != nil || got.Name == "" {
			return fail("camera", CodeInternal, "the browser's answer names no photo")
		}
		kind, size, err := s.attachedImage(got.Name)
		if err != nil {
			return fail("camera", CodeInternal, "the photo: %v", err)
		}
		return ok("camera", map[string]any{"path": sandbox.GuestAttachments + "/" + got.Name, "type": kind, "bytes": size})
	})
}

// attachedImage checks that name is an image in the attachments folder:
// one name (no folder), a regular file reached without a link, at most
// maxPhoto bytes, whose first bytes say it is an image. It returns the
// image's type and size.
func (s *Service) attachedImage(name string) (string, int64, error) {
	if name == "." || name == ".." || strings.ContainsAny(name, "/\x00") || hasControl(name) || len(name) > 255 {
		return "", 0, fmt.Errorf("%q is not a file name", name)
	}
	d, err := hostfs.OpenDir(s.Attachments)
	if err != nil {
		return "", 0, err
	}
	defer d.Close()
	f, err := d.Open(name)
	if err != nil {
		return "", 0, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return "", 0, err
	}
	if fi.Size() > maxPhoto {
		return "", 0, fmt.Errorf("%s is %d bytes: the most den takes from the camera is %d", name, fi.Size(), maxPhoto)
	}
	head := make([]byte, 512)
	n, _ := io.ReadFull(f, head)
	kind := http.DetectContentType(head[:n])
	if !strings.HasPrefix(kind, "image/") {
		return "", 0, fmt.Errorf("%s is %s, not an image", name, kind)
	}
	return kind, fi.Size(), nil
}

// langRE is a BCP 47 language tag as browsers name their voices'
// languages ("en", "en-US", "zh-Hans-CN").
var langRE = regexp.MustCompile(`^[A-Za-z]{2,3}(-[A-Za-z0-9]{1,8}){0,3}$`)

// maxBrowserSpeech bounds how long den waits for a browser to finish
// speaking.
const maxBrowserSpeech = 10 * time.Minute

// speakInBrowser has the user's browser say text with its own speech
// synthesis. One browser speaks (the first to claim the request), and
// the command returns when it has finished.
func (s *Service) speakInBrowser(c *Call, text, voice, lang string, rate float64) (*Plan, *Result) {
	switch {
	case s.Device == nil:
		return nil, unavailable("speak", "this den has no web face: den-speak --browser works in sessions of den serve, with den open in a browser")
	case lang != "" && !langRE.MatchString(lang):
		return nil, invalid("speak", "--lang %q: want a language tag such as en-US or de", lang)
	case len(voice) > 100 || hasControl(voice):
		return nil, invalid("speak", "--voice: a browser's voice name, one line of at most 100 bytes")
	case rate != 0 && (rate < 0.5 || rate > 2):
		return nil, invalid("speak", "--rate %g: want a number from 0.5 to 2", rate)
	}
	return plan("speak", "", "", func(ctx context.Context) Result {
		// Roughly ten characters a second at the slowest rate, and a
		// minute to spare for a browser that must be tapped first.
		wait := min(time.Minute+time.Duration(len(text))*200*time.Millisecond, maxBrowserSpeech)
		ctx, cancel := context.WithTimeout(ctx, wait)
		defer cancel()
		args := map[string]any{"text": text}
		if voice != "" {
			args["voice"] = voice
		}
		if lang != "" {
			args["lang"] = lang
		}
		if rate != 0 {
			args["rate"] = rate
		}
		raw, err := s.Device(ctx, c.Session, "speak", args)
		switch {
		case errors.Is(err, ErrNoDevice):
			return fail("speak", CodeNotAvailable, "%v: open den on your phone, or speak without --browser (an audio file)", err)
		case errors.Is(err, ErrDeviceRefused):
			return fail("speak", CodeNotAvailable, "%v", err)
		case errors.Is(err, context.DeadlineExceeded):
			return fail("speak", CodeNotAvailable, "no browser spoke within %s", wait)
		case err != nil:
			return fail("speak", CodeInternal, "%v", err)
		}
		var got struct {
			Voice string `json:"voice"`
		}
		json.Unmarshal(raw, &got)
		out := map[string]any{"spoken": true, "where": "browser"}
		if got.Voice != "" && len(got.Voice) <= 200 && !hasControl(got.Voice) {
			out["voice"] = got.Voice
		}
		return ok("speak", out)
	})
}
