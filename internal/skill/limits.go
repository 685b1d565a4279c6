package skill

import (
	"strings"
	"time"
	"unicode"
	"unicode/utf8"
)

// Limits bound what den reads of a skill or a source. A zero field
// takes DefaultLimits' value.
type Limits struct {
	ManifestSize int64 // bytes of a SKILL.md
	SkillSize    int64 // bytes of all of one skill's files
	SkillFiles   int   // files and folders in one skill
	Depth        int   // folders below a skill's own
	ArchiveSize  int64 // bytes an archive unpacks to
	ArchiveFiles int   // entries in an archive or a repository's tree
	GitTimeout   time.Duration
}

// DefaultLimits are the limits den uses: a SKILL.md of 256 KiB; a skill
// of 32 MiB in 1000 files and folders, 16 deep; an archive of 128 MiB
// in 20000 entries; five minutes for git.
func DefaultLimits() Limits {
	return Limits{
		ManifestSize: 256 << 10,
		SkillSize:    32 << 20,
		SkillFiles:   1000,
		Depth:        16,
		ArchiveSize:  128 << 20,
		ArchiveFiles: 20000,
		GitTimeout:   5 * time.Minute,
	}
}

// orDefault fills l's zero fields from DefaultLimits.
func (l Limits) orDefault() Limits {
	d := DefaultLimits()
	if l.ManifestSize > 0 {
		d.ManifestSize = l.ManifestSize
	}
	if l.SkillSize > 0 {
		d.SkillSize = l.SkillSize
	}
	if l.SkillFiles > 0 {
		d.SkillFiles = l.SkillFiles
	}
	if l.Depth > 0 {
		d.Depth = l.Depth
	}
	if l.ArchiveSize > 0 {
		d.ArchiveSize = l.ArchiveSize
	}
	if l.ArchiveFiles > 0 {
		d.ArchiveFiles = l.ArchiveFiles
	}
	if l.GitTimeout > 0 {
		d.GitTimeout = l.GitTimeout
	}
	return d
}

// printable is s fit for a message or a terminal: control characters
// and bytes that are not UTF-8 become "?", and it is cut at max runes
// with "…".
func printable(s string, max int) string {
	var b strings.Builder
	n := 0
	for i, r := range s {
		if n == max {
			b.WriteString("…")
			break
		}
		if r == utf8.RuneError {
			if _, size := utf8.DecodeRuneInString(s[i:]); size <= 1 {
				r = '?'
			}
		}
		if unicode.IsControl(r) || unicode.Is(unicode.Cf, r) {
			r = '?'
		}
		b.WriteRune(r)
		n++
	}
	return b.String()
}
