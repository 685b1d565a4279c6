package hostsvc

import (
	"context"
	"fmt"
	"path"
	"strings"
)

// ModelInfo is a model den-model may call.
type ModelInfo struct {
	Ref    string `json:"ref"`
	Images bool   `json:"images"`
}

// ModelRequest is one den-model run.
type ModelRequest struct {
	Ref       string
	System    string
	Prompt    string
	Image     []byte
	ImageType string
	MaxTokens int
}

// ModelAnswer is what the model said.
type ModelAnswer struct {
	Model        string  `json:"model"`
	Text         string  `json:"text"`
	InputTokens  int64   `json:"input_tokens"`
	OutputTokens int64   `json:"output_tokens"`
	CostUSD      float64 `json:"cost_usd"`
}

// Models is what den-model may call: the allow-listed models.
type Models interface {
	List() []ModelInfo
	Run(ctx context.Context, req ModelRequest) (ModelAnswer, error)
}

func (s *Service) parseModel(c *Call) (*Plan, *Result) {
	if s.Models == nil {
		return nil, unavailable("", "no models are configured for den-model")
	}
	if len(c.Args) == 0 {
		return nil, invalid("", "want list or run")
	}
	switch c.Args[0] {
	case "list":
		if len(c.Args) > 1 {
			return nil, invalid("list", "list takes no arguments")
		}
		return plan("list", "", "", func(context.Context) Result { return ok("list", s.Models.List()) })
	case "run":
	default:
		return nil, invalid(c.Args[0], "unknown action %q: want list or run", c.Args[0])
	}
	f := newFlags("den-model run")
	ref := f.String("model", "model ref")
	prompt := f.String("prompt", "prompt")
	promptFile := f.String("prompt-file", "file holding the prompt")
	system := f.String("system", "system prompt")
	image := f.String("image", "image file")
	maxTokens := f.Int("max-tokens", "output limit")
	f.Bool("json", "answer as JSON (the envelope always is)")
	rest, bad := f.parse("run", c.Args[1:])
	if bad != nil {
		return nil, bad
	}
	switch {
	case *ref == "":
		return nil, invalid("run", "--model is required (den-model list shows them)")
	case hasControl(*ref) || strings.ContainsAny(*ref, " \t") || len(*ref) > 200:
		return nil, invalid("run", "--model: not a model reference")
	case len(rest) > 0:
		return nil, invalid("run", "unexpected arguments %q", rest)
	case f.set["prompt"] && f.set["prompt-file"]:
		return nil, invalid("run", "--prompt and --prompt-file exclude each other")
	case *maxTokens < 0:
		return nil, invalid("run", "--max-tokens must not be negative")
	}
	for _, t := range []struct{ what, s string }{{"the prompt", *prompt}, {"the system prompt", *system}} {
		if bad := checkText("run", t.what, t.s, maxStdin); bad != nil {
			return nil, bad
		}
	}
	req := ModelRequest{Ref: *ref, System: *system, Prompt: *prompt, MaxTokens: *maxTokens}
	// The gate decides on req.Ref, the one model this call can run.
	return plan("run", req.Ref, "", func(ctx context.Context) Result {
		switch {
		case *promptFile != "":
			b, err := s.readFile(c.Cwd, *promptFile)
			if err != nil {
				return fail("run", CodeInvalidArgs, "prompt file: %v", err)
			}
			req.Prompt = string(b)
		case !f.set["prompt"]:
			b, err := readAll(c.Stdin, maxStdin)
			if err != nil {
				return fail("run", CodeInvalidArgs, "reading the prompt: %v", err)
			}
			req.Prompt = string(b)
		}
		if strings.TrimSpace(req.Prompt) == "" {
			return fail("run", CodeInvalidArgs, "empty prompt: give --prompt, --prompt-file, or standard input")
		}
		if *image != "" {
			b, err := s.readFile(c.Cwd, *image)
			if err != nil {
				return fail("run", CodeInvalidArgs, "image: %v", err)
			}
			req.Image, req.ImageType = b, sniffImage(b)
			if req.ImageType == "" {
				return fail("run", CodeInvalidArgs, "%s is not a PNG, JPEG, GIF or WebP image", *image)
			}
		}
		ans, err := s.Models.Run(ctx, req)
		if err != nil {
			return fail("run", CodeInternal, "%v", err)
		}
		return ok("run", ans)
	})
}

// readFile reads a file of the computer (a path as the command inside
// saw it, relative to its cwd), as the computer could.
func (s *Service) readFile(cwd, p string) ([]byte, error) {
	if !path.IsAbs(p) {
		p = path.Join(cwd, p)
	}
	if s.Files == nil {
		return nil, fmt.Errorf("files of the computer are not readable here")
	}
	return s.Files.ReadFile(path.Clean(p))
}

func sniffImage(b []byte) string {
	switch {
	case len(b) > 8 && string(b[:8]) == "\x89PNG\r\n\x1a\n":
		return "image/png"
	case len(b) > 3 && b[0] == 0xFF && b[1] == 0xD8 && b[2] == 0xFF:
		return "image/jpeg"
	case len(b) > 6 && (string(b[:6]) == "GIF87a" || string(b[:6]) == "GIF89a"):
		return "image/gif"
	case len(b) > 12 && string(b[:4]) == "RIFF" && string(b[8:12]) == "WEBP":
		return "image/webp"
	}
	return ""
}
