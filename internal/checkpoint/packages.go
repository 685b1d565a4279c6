package checkpoint

import (
	"bufio"
	"bytes"
	"context"
	"slices"
	"strings"

	"den.dev/den/internal/hostfs"
)

// PackageChange is a package installed, removed or changed to another
// version, read from the package manager's database.
type PackageChange struct {
	Name string `json:"name"`
	Op   string `json:"op"` // installed, removed, changed
	From string `json:"from,omitempty"`
	To   string `json:"to,omitempty"`
}

// packageDBs are the package managers' records of what is installed,
// beneath the root.
var packageDBs = []struct {
	path  string
	parse func([]byte) map[string]string
}{
	{"var/lib/dpkg/status", parseDpkg},
	{"lib/apk/db/installed", parseApk},
}

// maxPackageDB bounds what den reads of a package database.
const maxPackageDB = 64 << 20

// packageChanges compares the package databases of two root listings;
// live is b's folder when b was read from it (a database that changed
// is then read there).
func packageChanges(ctx context.Context, w *walker, a, b Hash, live *Tree) ([]PackageChange, error) {
	var out []PackageChange
	for _, db := range packageDBs {
		ea, err := w.lookup(a, db.path)
		if err != nil {
			return nil, err
		}
		eb, err := w.lookup(b, db.path)
		if err != nil {
			return nil, err
		}
		if ea == nil && eb == nil || ea != nil && eb != nil && ea.Hash == eb.Hash {
			continue
		}
		before, after := map[string]string{}, map[string]string{}
		if ea != nil && ea.Kind == File {
			if c, err := w.s.content(ea.Hash, maxPackageDB); err == nil {
				before = db.parse(c)
			}
		}
		if eb != nil && eb.Kind == File {
			c, err := w.s.content(eb.Hash, maxPackageDB)
			if err != nil && live != nil {
				c, err = readLive(live.Path, db.path)
			}
			if err == nil {
				after = db.parse(c)
			}
		}
		out = append(out, comparePackages(before, after)...)
	}
	return out, nil
}

// readLive reads a file of a live tree without following a symlink
// the computer planted.
func readLive(root, rel string) ([]byte, error) {
	d, err := hostfs.OpenDir(root)
	if err != nil {
		return nil, err
	}
	defer d.Close()
	return d.ReadFile(rel, maxPackageDB)
}

func comparePackages(before, after map[string]string) []PackageChange {
	var out []PackageChange
	for name, v := range after {
		old, ok := before[name]
		switch {
		case !ok:
			out = append(out, PackageChange{Name: name, Op: "installed", To: v})
		case old != v:
			out = append(out, PackageChange{Name: name, Op: "changed", From: old, To: v})
		}
	}
	for name, v := range before {
		if _, ok := after[name]; !ok {
			out = append(out, PackageChange{Name: name, Op: "removed", From: v})
		}
	}
	slices.SortFunc(out, func(x, y PackageChange) int { return strings.Compare(x.Name, y.Name) })
	return out
}

// parseDpkg reads dpkg's status file: the packages installed, with
// their versions (name:arch for a second architecture's).
func parseDpkg(b []byte) map[string]string {
	out := map[string]string{}
	arch := map[string]string{}
	for _, para := range paragraphs(b) {
		name, version, status, a := para["Package"], para["Version"], para["Status"], para["Architecture"]
		if name == "" || !strings.HasSuffix(status, " installed") {
			continue
		}
		if first, ok := arch[name]; ok && first != a {
			name += ":" + a
		} else {
			arch[name] = a
		}
		out[name] = version
	}
	return out
}

// parseApk reads apk's installed database.
func parseApk(b []byte) map[string]string {
	out := map[string]string{}
	var name, version string
	flush := func() {
		if name != "" {
			out[name] = version
		}
		name, version = "", ""
	}
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		switch {
		case line == "":
			flush()
		case strings.HasPrefix(line, "P:"):
			name = line[2:]
		case strings.HasPrefix(line, "V:"):
			version = line[2:]
		}
	}
	flush()
	return out
}

// paragraphs splits a deb822 file into its fields (continuation lines
// are left out: the fields den reads have none).
func paragraphs(b []byte) []map[string]string {
	var out []map[string]string
	cur := map[string]string{}
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(make([]byte, 64<<10), 4<<20)
	for sc.Scan() {
		line := sc.Text()
		if strings.TrimSpace(line) == "" {
			if len(cur) > 0 {
				out = append(out, cur)
				cur = map[string]string{}
			}
			continue
		}
		if line[0] == ' ' || line[0] == '\t' {
			continue
		}
		if k, v, ok := strings.Cut(line, ":"); ok {
			cur[k] = strings.TrimSpace(v)
		}
	}
	if len(cur) > 0 {
		out = append(out, cur)
	}
	return out
}
