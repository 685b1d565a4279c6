package files

import (
	"iter"
	"path"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

const (
	// maxName is the most bytes in an attachment's name.
	maxName = 100
	// maxExt is the most bytes of an extension that a shortened name
	// keeps; a longer "extension" is part of the name.
	maxExt = 20
	// maxTries is how many names an attachment tries: NAME, then
	// NAME-2 to NAME-1000.
	maxTries = 1000
)

// safeName makes a client's filename one that is safe as a file name
// in the attachments folder and in a shell: no folders (after the last
// "/" or "\"), no invalid UTF-8, no control or invisible formatting
// characters (line breaks, bidirectional overrides), no leading dots
// (no hidden files, no "..") and no spaces or dots at either end. An
// empty result is "attachment". Its length is left to fit.
func safeName(client string) string {
	if i := strings.LastIndexAny(client, `/\`); i >= 0 {
		client = client[i+1:]
	}
	client = strings.ToValidUTF8(client, "")
	client = strings.Map(func(r rune) rune {
		if unicode.In(r, unicode.Cc, unicode.Cf, unicode.Zl, unicode.Zp) {
			return -1
		}
		return r
	}, client)
	client = strings.TrimLeft(strings.TrimSpace(client), ". ")
	client = strings.TrimRight(client, ". ")
	if client == "" {
		return "attachment"
	}
	return client
}

// fit is name with suffix before its extension, shortened to at most
// maxName bytes, the extension kept: fit("report.pdf", "-2") is
// "report-2.pdf".
func fit(name, suffix string) string {
	ext := path.Ext(name)
	if ext == name || len(ext) > maxExt {
		ext = ""
	}
	base := name[:len(name)-len(ext)]
	room := maxName - len(ext) - len(suffix)
	for len(base) > room {
		_, size := utf8.DecodeLastRuneInString(base)
		base = base[:len(base)-size]
	}
	return base + suffix + ext
}

// candidates are the names an attachment named name tries, in order:
// name, then name-2, name-3 and so on, each fitted to maxName bytes.
func candidates(name string) iter.Seq[string] {
	return func(yield func(string) bool) {
		if !yield(fit(name, "")) {
			return
		}
		for i := 2; i <= maxTries; i++ {
			if !yield(fit(name, "-"+strconv.Itoa(i))) {
				return
			}
		}
	}
}
