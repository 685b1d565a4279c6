package gemini

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"iter"
	"net/http"
	"net/url"
	"strings"

	"den.dev/den/internal/llm"
)

// DefaultBaseURL is where the Gemini API lives when Provider.BaseURL is
// empty.
const DefaultBaseURL = "https://generativelanguage.googleapis.com"

// Model streams turns from the Gemini API.
type Model struct {
	base    string // ends with the API version, no trailing slash
	key     string
	headers map[string]string
	client  *http.Client
}

var _ llm.Model = (*Model)(nil)

// New returns a Model for provider p. p.BaseURL may name the host
// ("https://host/proxy") or include the API version ("…/v1beta"); it
// defaults to DefaultBaseURL. It fails with an error wrapping
// llm.ErrNoKey when p has no API key.
func New(p llm.Provider) (*Model, error) {
	if p.APIKey == "" {
		return nil, fmt.Errorf("gemini: provider %q: %w", p.Name, llm.ErrNoKey)
	}
	base := strings.TrimRight(p.BaseURL, "/")
	if base == "" {
		base = DefaultBaseURL
	}
	u, err := url.Parse(base)
	if err != nil || u.Scheme == "" || u.Host == "" {
		return nil, fmt.Errorf("gemini: provider %q: bad base URL %q", p.Name, p.BaseURL)
	}
	if !hasVersion(u.Path) {
		base += "/v1beta"
	}
	return &Model{base: base, key: p.APIKey, headers: p.Headers, client: &http.Client{}}, nil
}

// hasVersion reports whether path already ends with an API version
// segment such as v1, v1beta or v1alpha.
func hasVersion(path string) bool {
	seg := path[strings.LastIndex(path, "/")+1:]
	return len(seg) >= 2 && seg[0] == 'v' && seg[1] >= '0' && seg[1] <= '9'
}

// Stream sends req and yields the turn as it arrives. Breaking out of
// the loop cancels the request.
func (m *Model) Stream(ctx context.Context, req *llm.Request) iter.Seq2[llm.Event, error] {
	return func(yield func(llm.Event, error) bool) {
		if req == nil {
			yield(nil, errors.New("gemini: nil request"))
			return
		}
		body, err := encodeRequest(req)
		if err != nil {
			yield(nil, err)
			return
		}
		ctx, cancel := context.WithCancel(ctx)
		defer cancel()
		resp, err := m.send(ctx, req.Model, body)
		if err != nil {
			yield(nil, err)
			return
		}
		defer resp.Body.Close()
		if resp.StatusCode/100 != 2 {
			yield(nil, readAPIError(resp))
			return
		}
		s := stream{yield: yield}
		if err := s.run(resp.Body); err != nil {
			if ctx.Err() != nil && !errors.Is(err, ctx.Err()) {
				err = fmt.Errorf("gemini: %w", context.Cause(ctx))
			}
			yield(nil, err)
		}
	}
}

func (m *Model) send(ctx context.Context, model string, body []byte) (*http.Response, error) {
	model = strings.TrimPrefix(model, "models/")
	if model == "" {
		return nil, errors.New("gemini: request names no model")
	}
	u := m.base + "/models/" + url.PathEscape(model) + ":streamGenerateContent?alt=sse"
	r, err := http.NewRequestWithContext(ctx, http.MethodPost, u, bytes.NewReader(body))
	if err != nil {
		return nil, fmt.Errorf("gemini: %w", err)
	}
	for k, v := range m.headers {
		r.Header.Set(k, v)
	}
	r.Header.Set("Content-Type", "application/json")
	r.Header.Set("Accept", "text/event-stream")
	r.Header.Set("x-goog-api-key", m.key)
	resp, err := m.client.Do(r)
	if err != nil {
		return nil, fmt.Errorf("gemini: send: %w", err)
	}
	return resp, nil
}
