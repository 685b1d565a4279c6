// Package reply writes the API's JSON answers, the same way for every
// route: never cached, HTML characters left as they are (the content
// type is JSON, never HTML).
package reply

import (
	"encoding/json"
	"net/http"
)

// JSON answers with status and v as JSON.
func JSON(w http.ResponseWriter, status int, v any) error {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	return enc.Encode(v)
}
