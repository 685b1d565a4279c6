package mcpclient

import (
	"encoding/json"
	"net/url"
	"sort"
	"strings"
)

// Redact returns a servers' file with its secrets' values replaced by
// "": every env and headers value (they often carry keys and tokens),
// an OAuth client secret, a password in a url, and in the keys den
// does not read, any value whose key names a key, token, secret or
// password. keys lists what changed (mcpServers.NAME.env.VAR, ...). What
// den cannot tell from a secret stays: a key written into args or into
// a url's query. A file that does not parse is an error: the caller
// cannot know what of it is secret.
func Redact(data []byte) (out []byte, keys []string, err error) {
	f, err := Parse(data)
	if err != nil {
		return nil, nil, err
	}
	for _, s := range f.Servers {
		at := "mcpServers." + s.Name
		for i, kv := range s.Env {
			if kv.Value != "" {
				s.Env[i].Value = ""
				keys = append(keys, at+".env."+kv.Key)
			}
		}
		for i, kv := range s.Headers {
			if kv.Value != "" {
				s.Headers[i].Value = ""
				keys = append(keys, at+".headers."+kv.Key)
			}
		}
		if s.OAuth != nil && s.OAuth.ClientSecret != "" {
			s.OAuth.ClientSecret = ""
			keys = append(keys, at+".oauth.clientSecret")
		}
		if u, err := url.Parse(s.URL); err == nil && u.User != nil {
			if _, set := u.User.Password(); set {
				u.User = url.User(u.User.Username())
				s.URL = u.String()
				keys = append(keys, at+".url")
			}
		}
		for i, x := range s.extra {
			s.extra[i].raw, keys = redactRaw(at+"."+x.key, x.key, x.raw, keys)
		}
	}
	for i, x := range f.extra {
		f.extra[i].raw, keys = redactRaw(x.key, x.key, x.raw, keys)
	}
	if len(keys) == 0 {
		return data, nil, nil
	}
	out, err = f.Marshal()
	return out, keys, err
}

// secretName reports whether a key of a file names a secret.
func secretName(key string) bool {
	k := strings.ToLower(strings.NewReplacer("-", "", "_", "").Replace(key))
	for _, w := range []string{"apikey", "token", "secret", "password", "passwd", "authorization", "credential", "privatekey"} {
		if strings.Contains(k, w) {
			return true
		}
	}
	return false
}

// redactRaw takes the secrets out of a value den does not read: the
// whole value when its key names a secret, else the values below it
// whose keys do.
func redactRaw(at, key string, raw json.RawMessage, keys []string) (json.RawMessage, []string) {
	var v any
	if err := json.Unmarshal(raw, &v); err != nil {
		return raw, keys
	}
	changed := false
	var walk func(at, key string, v any) any
	walk = func(at, key string, v any) any {
		if secretName(key) {
			if s, ok := v.(string); ok && s == "" {
				return v
			}
			changed = true
			keys = append(keys, at)
			return ""
		}
		switch v := v.(type) {
		case map[string]any:
			names := make([]string, 0, len(v))
			for k := range v {
				names = append(names, k)
			}
			sort.Strings(names)
			for _, k := range names {
				v[k] = walk(at+"."+k, k, v[k])
			}
		case []any:
			for i := range v {
				v[i] = walk(at, key, v[i])
			}
		}
		return v
	}
	v = walk(at, key, v)
	if !changed {
		return raw, keys
	}
	b, err := json.Marshal(v)
	if err != nil {
		return raw, keys
	}
	return b, keys
}
