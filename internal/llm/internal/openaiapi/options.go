package openaiapi

import (
	"fmt"
	"net"
	"net/url"
	"strings"

	"github.com/openai/openai-go/v3/option"

	"den.dev/den/internal/llm"
)

// Options returns the SDK request options for p: its base URL, key and
// headers, with the SDK's retries off. It fails with an error wrapping
// llm.ErrNoKey when p has no API key, unless p.BaseURL names a server
// on this machine. api prefixes the error.
//
// Adapters pass the options to a service constructor, not to
// openai.NewClient, which would read OPENAI_* variables from the
// environment.
func Options(api string, p llm.Provider) ([]option.RequestOption, error) {
	local, err := isLocal(p.BaseURL)
	if err != nil {
		return nil, fmt.Errorf("%s: provider %q: %w", api, p.Name, err)
	}
	if p.APIKey == "" && !local {
		return nil, fmt.Errorf("%s: provider %q: %w", api, p.Name, llm.ErrNoKey)
	}
	opts := []option.RequestOption{
		option.WithMaxRetries(0),
		option.WithEnvironmentProduction(),
	}
	if p.BaseURL != "" {
		opts = append(opts, option.WithBaseURL(p.BaseURL))
	}
	if p.APIKey != "" {
		opts = append(opts, option.WithAPIKey(p.APIKey))
	}
	for k, v := range p.Headers {
		opts = append(opts, option.WithHeader(k, v))
	}
	return opts, nil
}

// isLocal reports whether base names a server on this machine.
func isLocal(base string) (bool, error) {
	if base == "" {
		return false, nil
	}
	u, err := url.Parse(base)
	if err != nil {
		return false, fmt.Errorf("bad base URL: %w", err)
	}
	host := u.Hostname()
	if host == "localhost" || strings.HasSuffix(host, ".localhost") {
		return true, nil
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback(), nil
}
