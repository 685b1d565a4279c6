package skill

import (
	"bytes"
	"cmp"
	"encoding/binary"
	"fmt"
	"math"
	"path"
	"regexp"
	"slices"
	"strings"
	"unicode/utf8"
)

// Severity is how much a finding matters. High findings keep a skill
// from being installed or used until the user says otherwise.
type Severity int

// Severities.
const (
	Low Severity = iota + 1
	Medium
	High
)

func (s Severity) String() string {
	switch s {
	case Low:
		return "low"
	case Medium:
		return "medium"
	case High:
		return "high"
	}
	return fmt.Sprintf("severity(%d)", int(s))
}

// MarshalText writes the severity's name.
func (s Severity) MarshalText() ([]byte, error) { return []byte(s.String()), nil }

// UnmarshalText reads a severity's name.
func (s *Severity) UnmarshalText(b []byte) error {
	switch string(b) {
	case "low":
		*s = Low
	case "medium":
		*s = Medium
	case "high":
		*s = High
	default:
		return fmt.Errorf("unknown severity %q", b)
	}
	return nil
}

// A Finding is one thing the scan saw in a skill's files.
type Finding struct {
	File     string   `json:"file"`
	Line     int      `json:"line,omitempty"` // 1-based; 0 for the whole file
	Severity Severity `json:"severity"`
	Rule     string   `json:"rule"`
	Reason   string   `json:"reason"`
	Excerpt  string   `json:"excerpt,omitempty"` // the line, cut short and made printable
}

func (f Finding) String() string {
	at := f.File
	if f.Line > 0 {
		at = fmt.Sprintf("%s:%d", f.File, f.Line)
	}
	s := fmt.Sprintf("%s: %s: %s", at, f.Severity, f.Reason)
	if f.Excerpt != "" {
		s += ": " + f.Excerpt
	}
	return s
}

// Highest is the highest severity among findings, 0 for none.
func Highest(findings []Finding) Severity {
	var h Severity
	for _, f := range findings {
		h = max(h, f.Severity)
	}
	return h
}

// Scan limits: a rule reports a file at most perRule times, and a skill
// gets at most maxFindings findings.
const (
	perRule     = 5
	maxFindings = 100
	excerptLen  = 160
)

// Scan looks through a skill's files for what a malicious skill does:
// piping downloads into a shell, running decoded blobs, reading
// credentials, sending the environment out, long obfuscated strings,
// hidden characters, and executables or other opaque files. It is a
// tripwire, not a proof: it finds the usual ways of doing these things,
// not every way. Findings are sorted by file and line.
func Scan(files []File) []Finding {
	var out []Finding
	rules := rules()
	for _, f := range files {
		out = append(out, scanFile(f, rules)...)
	}
	slices.SortStableFunc(out, func(a, b Finding) int {
		return cmp.Or(strings.Compare(a.File, b.File), cmp.Compare(a.Line, b.Line), cmp.Compare(b.Severity, a.Severity))
	})
	if len(out) > maxFindings {
		out = append(out[:maxFindings-1], Finding{File: out[maxFindings-1].File, Severity: Highest(out[maxFindings-1:]),
			Rule: "more", Reason: fmt.Sprintf("%d more findings not shown", len(out)-maxFindings+1)})
	}
	return out
}

// scanFile is Scan for one file: binaries by their magic numbers, text
// by the rules.
func scanFile(f File, rules []*rule) []Finding {
	if kind, sev := opaque(f); sev > 0 {
		return []Finding{{File: f.Path, Severity: sev, Rule: "binary", Reason: kind}}
	}
	if !isText(f.Data) {
		return nil
	}
	text := string(f.Data)
	lower := strings.ToLower(text)
	var out []Finding
	for _, r := range rules {
		if !r.applies(lower) {
			continue
		}
		n := 0
		for i, line := range lines(text) {
			if n == perRule {
				break
			}
			if !r.match(line) {
				continue
			}
			if r.near != nil && !near(text, i, r.near, nearLines) {
				continue
			}
			out = append(out, Finding{File: f.Path, Line: i + 1, Severity: r.severity, Rule: r.id, Reason: r.reason, Excerpt: printable(strings.TrimSpace(line), excerptLen)})
			n++
		}
	}
	out = append(out, scanStrings(f.Path, text)...)
	out = append(out, scanHidden(f.Path, text)...)
	return out
}

// lines yields text's lines with their 0-based numbers.
func lines(text string) func(func(int, string) bool) {
	return func(yield func(int, string) bool) {
		i := 0
		for len(text) > 0 {
			line, rest, _ := strings.Cut(text, "\n")
			if !yield(i, line) {
				return
			}
			text = rest
			i++
		}
	}
}

// nearLines is how many lines around a match count as near it.
const nearLines = 3

// near reports whether re matches one of the lines within n of line i.
func near(text string, i int, re *regexp.Regexp, n int) bool {
	for j, line := range lines(text) {
		if j > i+n {
			break
		}
		if j >= i-n && re.MatchString(line) {
			return true
		}
	}
	return false
}

// isText reports whether data is UTF-8 text without NUL bytes.
func isText(data []byte) bool {
	return utf8.Valid(data) && bytes.IndexByte(data, 0) < 0
}

// A rule is one pattern the scan looks for, line by line.
type rule struct {
	id       string
	severity Severity
	reason   string
	// any lists lowercase words one of which the file must contain for
	// the rule to be tried at all.
	any []string
	re  *regexp.Regexp
	// unless, when set, clears a line re matched.
	unless *regexp.Regexp
	// near, when set, must match within nearLines of the match.
	near *regexp.Regexp
}

func (r *rule) applies(lower string) bool {
	if len(r.any) == 0 {
		return true
	}
	for _, w := range r.any {
		if strings.Contains(lower, w) {
			return true
		}
	}
	return false
}

func (r *rule) match(line string) bool {
	return r.re.MatchString(line) && (r.unless == nil || !r.unless.MatchString(line))
}

// Shell and interpreter names a payload is piped into.
const (
	shells       = `(?:sudo\s+(?:-\S+\s+)*)?(?:env\s+(?:\S+=\S*\s+)*)?(?:/\S*/)?(?:ba|da|z|k|c|tc|fi|a|mk)?sh\b`
	interpreters = `(?:sudo\s+(?:-\S+\s+)*)?(?:/\S*/)?(?:python[0-9.]*|perl|ruby|node|php|pwsh|powershell)(?:\s+-)?\s*(?:$|[;&|)"'` + "`" + `])`
	downloaders  = `(?:curl|wget|aria2c|lwp-request)\b`
	senders      = `(?:curl|wget|nc|ncat|netcat|socat|telnet|openssl\s+s_client)\b`
)

// rules are the scan's line rules, compiled for each scan (den keeps no
// package-level state; a scan runs only when files are new or changed).
func rules() []*rule {
	return []*rule{
		{
			id: "pipe-to-shell", severity: High, reason: "pipes a download into a shell",
			any: []string{"curl", "wget", "aria2c", "lwp-request"},
			// [^|]\| is one pipe, not "||".
			re: regexp.MustCompile(`(?i)` + downloaders + `[^\n]*?[^|]\|\s*(?:` + shells + `|` + interpreters + `)` +
				`|(?:` + shells + `|source|\.)\s+<\(\s*` + downloaders +
				`|` + shells + `\s+-c\s+["']?\$\(\s*` + downloaders +
				`|\beval\s+["']?\$\(\s*` + downloaders),
		},
		{
			id: "pipe-to-shell", severity: High, reason: "runs a downloaded script (PowerShell)",
			any: []string{"iex", "invoke-expression"},
			re:  regexp.MustCompile(`(?i)\b(?:iex|invoke-expression)\b\s*\(?\s*(?:\(?\s*new-object\s+(?:system\.)?net\.webclient|iwr|irm|invoke-webrequest|invoke-restmethod|\(?\s*\[?system\.net)|\b(?:iwr|irm|invoke-webrequest|invoke-restmethod)\b[^\n|]*\|\s*(?:iex|invoke-expression)\b`),
		},
		{
			id: "decode-exec", severity: High, reason: "decodes a hidden payload and runs it",
			any: []string{"base64", "xxd", "uudecode", "openssl", "gunzip", "zcat", "\\x"},
			re: regexp.MustCompile(`(?i)(?:base64\s+(?:-\w*d\w*|--decode)\b|xxd\s+(?:-\w+\s+)*-r|openssl\s+(?:enc\s+)?-?(?:base64|a)\s+-d|uudecode|gunzip|gzip\s+-d|zcat|printf\s+["'](?:\\x[0-9a-f]{2}){4,})(?:[^\n]*?[^|])?\|\s*(?:` + shells + `|` + interpreters + `)` +
				`|(?:` + shells + `)\s+-c\s+["']?\$\([^)\n]*base64\s+(?:-\w*d\w*|--decode)`),
		},
		{
			id: "decode-exec", severity: High, reason: "decodes a hidden payload and runs it",
			any: []string{"atob", "buffer.from", "b64decode", "fromhex", "decode(", "decompress", "marshal", "unhexlify"},
			re: regexp.MustCompile(`\b(?:eval|exec|Function|execScript|setTimeout|setInterval|compile)\s*\(\s*(?:new\s+Function\s*\()?\s*(?:` +
				`(?:window\.)?atob\s*\(|Buffer\.from\s*\([^\n]*['"](?:base64|hex)['"]` +
				`|(?:__import__\(\s*['"](?:base64|codecs|zlib|marshal|binascii|bz2|lzma)['"]\s*\)|base64|codecs|zlib|marshal|binascii|bz2|lzma|bytes|bytearray)\.(?:b64decode|b32decode|b85decode|a85decode|decodebytes|decode|decompress|loads|fromhex|unhexlify|a2b_base64))`),
		},
		{
			id: "decode-exec", severity: High, reason: "runs an encoded PowerShell command",
			any: []string{"powershell", "pwsh"},
			re:  regexp.MustCompile(`(?i)\b(?:powershell|pwsh)(?:\.exe)?\b[^\n]*\s-e(?:c|n|nc|ncodedcommand)?\s+[A-Za-z0-9+/]{20,}`),
		},
		{
			id: "credentials", severity: High, reason: "reads credentials",
			any: []string{".ssh", "id_rsa", "id_dsa", "id_ecdsa", "id_ed25519", ".aws", "gcloud", ".azure", ".kube", ".netrc", ".docker", ".git-credentials", ".gnupg", "shadow", "den_token", "den-host", ".config/den"},
			re: regexp.MustCompile(`(?:~|\$HOME|\$\{HOME\}|/root|/home/[^/\s]+|expanduser\(\s*["']~)?/?\.ssh(?:/|\b)|\bid_(?:rsa|dsa|ecdsa|ed25519)\b` +
				`|\.aws/(?:credentials|config)\b|\.config/gcloud\b|(?:~|\$HOME|\$\{HOME\}|/root|/home/[^/\s]+)/\.azure\b|\.kube/config\b|(?:~|\$HOME|\$\{HOME\}|/root|/home/[^/\s]+|["'/])\.netrc\b` +
				`|\.docker/config\.json\b|\.git-credentials\b|\.gnupg\b|/etc/(?:g)?shadow\b|\.config/den\b|\bDEN_TOKEN\b|/run/den-host\b`),
		},
		{
			id: "credentials", severity: High, reason: "reads other processes' environment",
			any: []string{"environ"},
			re:  regexp.MustCompile(`/proc/(?:\d+|self|\*|\$\w+|\$\{\w+\}|["']\s*\+[^+]*\+\s*["'])/environ\b`),
		},
		{
			id: "env-exfil", severity: High, reason: "sends the environment out",
			any: []string{"env", "export", "declare", "set"},
			re: regexp.MustCompile(`(?:^\s*|[;&|(\x60]\s*|\$\(\s*)(?:env|printenv|export\s+-p|declare\s+-x|set)\s*(?:\|[^|\n]*)*\|\s*` + senders +
				`|` + senders + `[^\n]*\$\(\s*(?:env|printenv|export\s+-p|declare\s+-x)\s*(?:\||\))` +
				`|` + senders + `[^\n]*\x60\s*(?:env|printenv)\s*(?:\||\x60)`),
		},
		{
			id: "env-exfil", severity: High, reason: "sends the environment out",
			any: []string{"os.environ", "process.env", "environ"},
			re: regexp.MustCompile(`(?:dict|json\.dumps|str|repr|list|urlencode|pickle\.dumps)\(\s*os\.environ\b|os\.environ(?:\s*[),}\]]|\.copy\(\)|\.items\(\)|\.keys\(\)|\.values\(\))|\*\*os\.environ` +
				`|JSON\.stringify\(\s*process\.env\b|Object\.(?:entries|keys|values|assign)\([^)\n]*process\.env\s*[),]|\.\.\.process\.env\b|process\.env\s*[),}\]]` +
				`|os\.Environ\(\)`),
			// Handing the environment to a child process is ordinary.
			unless: regexp.MustCompile(`\benv\s*[:=]|subprocess|Popen|spawn|execFile|exec\.Command|\.Env\b`),
			near:   regexp.MustCompile(`(?i)requests\.(?:post|put|get|patch|request)|urlopen|urllib\.request|http\.client|httpx\.|aiohttp|socket\.|smtplib|ftplib|fetch\(|axios|XMLHttpRequest|http\.request|https\.request|net\.connect|http\.(?:Post|Get|NewRequest)|sendBeacon|WebSocket\(`),
		},
	}
}

// scanStrings reports long runs of base64 or hex, and long quoted
// strings as random as encrypted or compressed data: what obfuscated
// code is made of.
func scanStrings(file, text string) []Finding {
	var out []Finding
	n := 0
	for i, line := range lines(text) {
		if n == perRule {
			break
		}
		if len(line) < minLiteral {
			continue
		}
		var reason string
		switch {
		case dataURI(line):
			// An image inlined in HTML or CSS is ordinary.
		case longRun(line, isHex, minBlob):
			reason = fmt.Sprintf("has a run of more than %d hex digits: an encoded payload?", minBlob)
		case longRun(line, isBase64, minBlob):
			reason = fmt.Sprintf("has a run of more than %d base64 characters: an encoded payload?", minBlob)
		case randomLiteral(line):
			reason = "has a long string as random as encrypted or compressed data"
		}
		if reason == "" {
			continue
		}
		out = append(out, Finding{File: file, Line: i + 1, Severity: Medium, Rule: "obfuscated", Reason: reason, Excerpt: printable(strings.TrimSpace(line), excerptLen)})
		n++
	}
	return out
}

// minBlob is how long a run of base64 or hex must be to be reported,
// and minLiteral how long a quoted string to be weighed.
const (
	minBlob    = 200
	minLiteral = 80
)

var dataURIRE = regexp.MustCompile(`data:(?:image|font|audio|video)/[\w.+-]+;base64,`)

// dataURI reports whether line inlines an image, font or sound.
func dataURI(line string) bool {
	return strings.Contains(line, ";base64,") && dataURIRE.MatchString(line)
}

func isHex(c byte) bool {
	return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F'
}

func isBase64(c byte) bool {
	return '0' <= c && c <= '9' || 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || c == '+' || c == '/' || c == '-' || c == '_' || c == '='
}

// longRun reports whether line has more than n bytes in a row for which
// in is true, with at least one digit among them (prose has none).
func longRun(line string, in func(byte) bool, n int) bool {
	run, digits := 0, 0
	for i := 0; i < len(line); i++ {
		if !in(line[i]) {
			run, digits = 0, 0
			continue
		}
		run++
		if '0' <= line[i] && line[i] <= '9' {
			digits++
		}
		if run > n && digits > 0 {
			return true
		}
	}
	return false
}

var literalRE = regexp.MustCompile(`"([^"\\\s]{80,})"|'([^'\\\s]{80,})'`) // minLiteral

// randomLiteral reports whether line has a quoted string of 80 or more
// characters without spaces whose characters are nearly as random as
// base64 of random bytes (six bits each); code, prose, URLs and
// identifiers are far from it.
func randomLiteral(line string) bool {
	for _, m := range literalRE.FindAllStringSubmatch(line, -1) {
		s := m[1] + m[2]
		if strings.Contains(s, "://") {
			continue
		}
		if entropy(s) >= 5.2 {
			return true
		}
	}
	return false
}

// entropy is s's Shannon entropy in bits per byte.
func entropy(s string) float64 {
	var counts [256]int
	for i := 0; i < len(s); i++ {
		counts[s[i]]++
	}
	var h float64
	for _, c := range counts {
		if c > 0 {
			p := float64(c) / float64(len(s))
			h -= p * math.Log2(p)
		}
	}
	return h
}

// scanHidden reports characters a person does not see and a model
// reads: Unicode tag characters (text hidden in plain sight) and
// bidirectional controls and zero-width characters (text that reads
// otherwise than it runs).
func scanHidden(file, text string) []Finding {
	var out []Finding
	seenTags, seenBidi := false, false
	for i, line := range lines(text) {
		for j, r := range line {
			switch {
			case r >= 0xE0000 && r <= 0xE007F && !seenTags:
				seenTags = true
				out = append(out, Finding{File: file, Line: i + 1, Severity: High, Rule: "hidden-text", Reason: "has invisible Unicode tag characters: text the model reads and you do not see"})
			case (r >= 0x202A && r <= 0x202E || r >= 0x2066 && r <= 0x2069 || r == 0x200B || r == 0x2060 || r == 0xFEFF && (i > 0 || j > 0)) && !seenBidi:
				seenBidi = true
				out = append(out, Finding{File: file, Line: i + 1, Severity: Medium, Rule: "hidden-text", Reason: fmt.Sprintf("has an invisible character (U+%04X) that can make text read otherwise than it runs", r)})
			}
		}
		if seenTags && seenBidi {
			break
		}
	}
	return out
}

// opaque reports what a file that is not text is, and how much that
// matters: executables are High, other files den cannot look into
// Medium, and known asset formats (images, fonts, PDF, sound) nothing.
func opaque(f File) (string, Severity) {
	d := f.Data
	has := func(off int, magic string) bool {
		return len(d) >= off+len(magic) && string(d[off:off+len(magic)]) == magic
	}
	switch {
	case has(0, "\x7fELF"):
		return "is an ELF executable or library: den cannot see what it does", High
	case has(0, "\xfe\xed\xfa\xce"), has(0, "\xfe\xed\xfa\xcf"), has(0, "\xce\xfa\xed\xfe"), has(0, "\xcf\xfa\xed\xfe"), has(0, "\xca\xfe\xba\xbe"), has(0, "\xbe\xba\xfe\xca"):
		return "is a Mach-O executable (or a Java class): den cannot see what it does", High
	case has(0, "MZ") && pe(d):
		return "is a Windows executable: den cannot see what it does", High
	case has(0, "\x00asm"):
		return "is a WebAssembly module: den cannot see what it does", High
	}
	if isText(d) {
		return "", 0
	}
	switch {
	case has(0, "\x89PNG"), has(0, "\xff\xd8\xff"), has(0, "GIF8"), has(0, "RIFF") && has(8, "WEBP"), has(0, "BM"),
		has(0, "\x00\x00\x01\x00"), has(0, "II*\x00"), has(0, "MM\x00*"), has(4, "ftypavif"), has(4, "ftypheic"):
		return "", 0 // images
	case has(0, "%PDF-"):
		return "", 0
	case has(0, "\x00\x01\x00\x00"), has(0, "OTTO"), has(0, "true"), has(0, "wOFF"), has(0, "wOF2"), has(0, "ttcf"):
		return "", 0 // fonts
	case has(0, "ID3"), has(0, "\xff\xfb"), has(0, "\xff\xf3"), has(0, "\xff\xf2"), has(0, "RIFF") && has(8, "WAVE"), has(0, "OggS"), has(0, "fLaC"), has(4, "ftyp"):
		return "", 0 // sound and video
	case has(0, "PK\x03\x04"), has(0, "PK\x05\x06"), has(0, "\x1f\x8b"), has(0, "\xfd7zXZ\x00"), has(0, "BZh"), has(0, "7z\xbc\xaf\x27\x1c"), has(0, "Rar!"), has(0, "(\xb5/\xfd"), has(257, "ustar"):
		return "is an archive or compressed file: den cannot see what is in it", Medium
	}
	switch strings.ToLower(path.Ext(f.Path)) {
	case ".png", ".jpg", ".jpeg", ".gif", ".webp", ".ico", ".bmp", ".ttf", ".otf", ".woff", ".woff2", ".pdf", ".mp3", ".wav", ".ogg", ".flac", ".mp4", ".webm":
		return fmt.Sprintf("is not text and does not look like the %s file its name says: den cannot see what is in it", path.Ext(f.Path)), Medium
	}
	return "is not text and not a known image, font, sound or document format: den cannot see what is in it", Medium
}

// pe reports whether d, starting "MZ", has a PE header where its DOS
// header says.
func pe(d []byte) bool {
	if len(d) < 0x40 {
		return false
	}
	off := int(binary.LittleEndian.Uint32(d[0x3c:]))
	return off >= 0x40 && off+4 <= len(d) && string(d[off:off+4]) == "PE\x00\x00"
}
