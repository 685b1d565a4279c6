package permission

import (
	"regexp"
	"strings"
)

// Redacted replaces a secret in what the gate stores and shows.
const Redacted = "[redacted]"

// secretWords are the words of a flag, variable or setting name that
// mark its value as a secret. Names are split on - _ . and case changes
// ("apiKey", "API_KEY", "api-key", "providers.x.api_key"), so
// "max-tokens" is not one ("tokens" is not "token").
var secretWords = map[string]bool{
	"key": true, "apikey": true, "token": true, "secret": true, "password": true,
	"passwd": true, "pass": true, "pwd": true, "passphrase": true, "auth": true,
	"authorization": true, "credential": true, "credentials": true, "cookie": true,
	"bearer": true, "private": true, "session_key": true, "sessionkey": true,
}

// notSecretSuffix are last words of a name whose value says where a
// secret is kept, not the secret itself.
var notSecretSuffix = map[string]bool{"env": true, "file": true, "path": true, "var": true}

// secretPatterns match secrets by their form, wherever they appear.
var secretPatterns = []*regexp.Regexp{
	// PEM private keys.
	regexp.MustCompile(`-----BEGIN [A-Z ]*PRIVATE KEY-----[\s\S]*?(-----END [A-Z ]*PRIVATE KEY-----|$)`),
	// OpenAI, Anthropic (sk-ant-…), OpenRouter, DeepSeek and similar.
	regexp.MustCompile(`\bsk-[A-Za-z0-9_\-]{16,}`),
	// GitHub tokens.
	regexp.MustCompile(`\b(ghp|gho|ghu|ghs|ghr)_[A-Za-z0-9]{20,}`),
	regexp.MustCompile(`\bgithub_pat_[A-Za-z0-9_]{20,}`),
	// GitLab.
	regexp.MustCompile(`\bglpat-[A-Za-z0-9_\-]{20,}`),
	// AWS access key ids.
	regexp.MustCompile(`\b(AKIA|ASIA|AGPA|AIDA|AROA)[0-9A-Z]{16}\b`),
	// Slack.
	regexp.MustCompile(`\bxox[abposr]-[A-Za-z0-9\-]{10,}`),
	// Google API keys.
	regexp.MustCompile(`\bAIza[0-9A-Za-z_\-]{35}`),
	// Stripe and Hugging Face.
	regexp.MustCompile(`\b(sk|rk|pk)_(live|test)_[A-Za-z0-9]{16,}`),
	regexp.MustCompile(`\bhf_[A-Za-z0-9]{30,}`),
	// JSON Web Tokens.
	regexp.MustCompile(`\beyJ[A-Za-z0-9_\-]{8,}\.[A-Za-z0-9_\-]{8,}\.[A-Za-z0-9_\-]*`),
	// "Bearer …" and "Basic …" credentials.
	regexp.MustCompile(`(?i)\b(bearer|basic)\s+[A-Za-z0-9._~+/\-]{8,}=*`),
}

// urlPassword matches the password of a URL's user info.
var urlPassword = regexp.MustCompile(`([a-zA-Z][a-zA-Z0-9+.\-]*://[^/\s:@]*:)([^/\s@]+)(@)`)

// longToken matches runs that may be random tokens; isRandom decides.
var longToken = regexp.MustCompile(`[A-Za-z0-9+=_\-]{32,}`)

// assignment is NAME=VALUE (also NAME: VALUE) with NAME a plain name.
var assignment = regexp.MustCompile(`^(-{0,2}[A-Za-z_][A-Za-z0-9_.\-]*)(=|:\s*)([\s\S]*)$`)

// plainName is a name that may be a setting's key, such as
// "providers.openai.api_key".
var plainName = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_.\-]*$`)

// Redact returns a copy of args, argv without the command's name, with
// secrets replaced by Redacted:
//   - the value of a flag whose name says it is a secret (--api-key X,
//     --token=X, -password X);
//   - the value of NAME=VALUE when NAME says so (API_KEY=…, also in
//     env-style arguments);
//   - the argument after a plain name that says so, as in
//     den-config set providers.openai.api_key VALUE;
//   - anything shaped like a known key format (sk-…, ghp_…, AKIA…,
//     xox…-…, AIza…, JWTs, PEM private keys, Bearer credentials), a
//     URL's password, and long random-looking hex or base64 runs.
//
// It errs on the side of hiding: an argument that merely looks random
// is redacted too. Arguments are never cut: what is stored is whole,
// and views shorten it saying how much is left (CallLine).
func Redact(args []string) []string {
	out := make([]string, len(args))
	hideNext := false
	for i, a := range args {
		if hideNext && !strings.HasPrefix(a, "-") {
			out[i] = Redacted
			hideNext = false
			continue
		}
		hideNext = false
		switch m := assignment.FindStringSubmatch(a); {
		case m != nil && isSecretName(m[1]) && m[3] != "":
			out[i] = m[1] + m[2] + Redacted
			continue
		case strings.HasPrefix(a, "-") && plainName.MatchString(strings.TrimLeft(a, "-")) && isSecretName(a):
			hideNext = true
		case !strings.HasPrefix(a, "-") && plainName.MatchString(a) && strings.ContainsAny(a, "._") && isSecretName(a):
			// A dotted or underscored setting key, as in
			// den-config set providers.x.api_key VALUE.
			hideNext = true
		}
		out[i] = RedactText(a)
	}
	return out
}

// RedactEnv returns a copy of env (NAME → value) with the values of
// secret-looking names, and secrets found in other values, redacted.
func RedactEnv(env map[string]string) map[string]string {
	out := make(map[string]string, len(env))
	for k, v := range env {
		if isSecretName(k) && v != "" {
			out[k] = Redacted
			continue
		}
		out[k] = RedactText(v)
	}
	return out
}

// RedactText replaces the secrets found by their form in s.
func RedactText(s string) string {
	for _, re := range secretPatterns {
		s = re.ReplaceAllString(s, Redacted)
	}
	s = urlPassword.ReplaceAllString(s, "${1}"+Redacted+"${3}")
	return longToken.ReplaceAllStringFunc(s, func(t string) string {
		if isRandom(t) {
			return Redacted
		}
		return t
	})
}

// isSecretName reports whether a flag, variable or key name says its
// value is a secret.
func isSecretName(name string) bool {
	words := nameWords(name)
	if len(words) >= 3 && notSecretSuffix[words[len(words)-2]] {
		// api_key_env, token_file: the value names where the secret is.
		return false
	}
	for _, w := range words {
		if secretWords[w] {
			return true
		}
	}
	return false
}

// nameWords splits a name into lower-case words at - _ . / and at
// lower-to-upper case changes, and also yields the name's last segment
// joined ("api_key" → "api", "key", "apikey").
func nameWords(name string) []string {
	var words []string
	var cur []rune
	flush := func() {
		if len(cur) > 0 {
			words = append(words, strings.ToLower(string(cur)))
			cur = cur[:0]
		}
	}
	var prev rune
	for _, r := range name {
		switch {
		case r == '-' || r == '_' || r == '.' || r == '/' || r == ' ':
			flush()
		case r >= 'A' && r <= 'Z' && prev >= 'a' && prev <= 'z':
			flush()
			cur = append(cur, r)
		default:
			cur = append(cur, r)
		}
		prev = r
	}
	flush()
	if n := len(words); n >= 2 {
		words = append(words, words[n-2]+words[n-1])
	}
	return words
}

// isRandom reports whether a long run of token characters looks like a
// random secret rather than a word or a name: all hex with letters and
// digits (32+), or base64-ish with upper, lower and digits (and not a
// dashed or underscored sequence of words).
func isRandom(t string) bool {
	var upper, lower, digit, hexOnly = false, false, false, true
	for _, r := range t {
		switch {
		case r >= 'A' && r <= 'Z':
			upper = true
			if r > 'F' {
				hexOnly = false
			}
		case r >= 'a' && r <= 'z':
			lower = true
			if r > 'f' {
				hexOnly = false
			}
		case r >= '0' && r <= '9':
			digit = true
		default:
			hexOnly = false
		}
	}
	if hexOnly && digit && (upper || lower) {
		return true
	}
	if !(upper && lower && digit) {
		return false
	}
	// Words joined by separators ("Some-Long_Identifier-Name2") are not
	// random: random base64 rarely has a separator-free stretch shorter
	// than 4 between separators everywhere, so require one long stretch.
	longest := 0
	for _, part := range strings.FieldsFunc(t, func(r rune) bool { return r == '-' || r == '_' }) {
		longest = max(longest, len(part))
	}
	return longest >= 20
}
