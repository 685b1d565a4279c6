package llmtest

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"regexp"
	"strings"
)

// The helpers the request checks share: bodies are decoded into plain
// JSON values (numbers kept as json.Number) and walked by JSON path, so
// that a check sees exactly what den sent, including fields no Go type
// of den's knows.

// decodeObject decodes body as one JSON object.
func decodeObject(body []byte) (map[string]any, error) {
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, fmt.Errorf("the body is not valid JSON: %v", err)
	}
	if dec.More() {
		return nil, fmt.Errorf("the body has data after its JSON value")
	}
	o, ok := v.(map[string]any)
	if !ok {
		return nil, fmt.Errorf("the body is %s, not a JSON object", kind(v))
	}
	return o, nil
}

// kind names a decoded JSON value's type, for messages.
func kind(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case bool:
		return "a boolean"
	case json.Number:
		return "a number"
	case string:
		return "a string"
	case []any:
		return "an array"
	case map[string]any:
		return "an object"
	}
	return fmt.Sprintf("%T", v)
}

func asObject(v any) (map[string]any, bool) { o, ok := v.(map[string]any); return o, ok }
func asArray(v any) ([]any, bool)           { a, ok := v.([]any); return a, ok }
func asString(v any) (string, bool)         { s, ok := v.(string); return s, ok }

// asInt reads an integer JSON number.
func asInt(v any) (int64, bool) {
	n, ok := v.(json.Number)
	if !ok {
		return 0, false
	}
	i, err := n.Int64()
	return i, err == nil
}

// path joins JSON path elements the way the APIs name fields in their
// errors: "messages.1.content.0".
func path(elems ...any) string {
	var b strings.Builder
	for i, e := range elems {
		if i > 0 {
			b.WriteByte('.')
		}
		fmt.Fprint(&b, e)
	}
	return b.String()
}

// validBase64 reports whether s is non-empty standard base64 (with
// padding), as the APIs' base64 fields take it.
func validBase64(s string) bool {
	if s == "" {
		return false
	}
	_, err := base64.StdEncoding.DecodeString(s)
	return err == nil
}

// functionName is the name rule OpenAI's APIs and Anthropic's tools
// share: letters, digits, underscores and dashes, 1 to 64 of them.
var functionName = regexp.MustCompile(`^[a-zA-Z0-9_-]{1,64}$`)

// imageDataURL splits a data: URL of an image into its media type and
// base64 data, and reports whether it is one OpenAI takes: PNG, JPEG,
// WEBP or GIF (the vision guide's list), base64 encoded.
func imageDataURL(url string) (mediaType string, err error) {
	rest, ok := strings.CutPrefix(url, "data:")
	if !ok {
		return "", nil // a web address: not the fake's to fetch
	}
	meta, data, ok := strings.Cut(rest, ",")
	if !ok {
		return "", fmt.Errorf("the data URL has no comma before its data")
	}
	mediaType, enc, _ := strings.Cut(meta, ";")
	switch mediaType {
	case "image/png", "image/jpeg", "image/webp", "image/gif":
	default:
		return mediaType, fmt.Errorf("unsupported image media type %q (png, jpeg, gif and webp are supported)", mediaType)
	}
	if enc != "base64" {
		return mediaType, fmt.Errorf("the data URL is not base64 encoded")
	}
	if !validBase64(data) {
		return mediaType, fmt.Errorf("the image data is not valid base64")
	}
	return mediaType, nil
}
