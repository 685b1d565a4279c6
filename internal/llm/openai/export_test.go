package openai

import (
	"encoding/json"

	"den.dev/den/internal/llm"
)

// OfficialBody is the JSON body of req as a Model for OpenAI itself
// (BaseURL empty or api.openai.com) builds it, without the "stream"
// field the SDK adds when it sends it. The fake servers listen on
// loopback, so no Model pointed at one takes that path.
func OfficialBody(req *llm.Request) ([]byte, error) {
	m := &Model{official: true}
	p, err := m.params(req)
	if err != nil {
		return nil, err
	}
	return json.Marshal(p)
}
