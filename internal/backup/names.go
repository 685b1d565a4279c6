package backup

import (
	"archive/tar"
	"fmt"
	"strings"

	"den.dev/den/internal/computer"
)

// place is where an entry goes.
type place struct {
	tree string // the tree's folder relative to the staging folder; "" for den's own files
	rel  string // the name in the tree (or among den's files)
	kind kind
	only byte // the one type the entry must be (tar.TypeDir or TypeReg), or 0
}

// classify finds where an entry of the data dir goes, or refuses it.
func classify(name string) (place, error) {
	rest, ok := strings.CutPrefix(name, dataDir)
	if !ok || strings.ContainsRune(name, 0) {
		return place{}, fmt.Errorf("%w: not in den's layout", ErrUnsafe)
	}
	rest = strings.TrimSuffix(rest, "/")
	el := strings.Split(rest, "/")
	for _, e := range el {
		if e == "" || e == "." || e == ".." {
			return place{}, fmt.Errorf("%w: an empty, . or .. path element", ErrUnsafe)
		}
	}
	inTree := func(n int, k kind) place {
		if k == denFiles {
			return place{rel: rest, kind: k}
		}
		p := place{tree: strings.Join(el[:n], "/"), rel: ".", kind: k}
		if len(el) > n {
			p.rel = strings.Join(el[n:], "/")
		}
		return p
	}
	switch {
	case len(el) == 1 && el[0] == dbName:
		return place{rel: rest, only: tar.TypeReg}, nil
	case el[0] == "agents":
		return classifyAgent(rest, el, inTree)
	}
	for _, p := range dataParts {
		pe := strings.Split(p.name, "/")
		if len(el) < len(pe) || strings.Join(el[:len(pe)], "/") != p.name {
			continue
		}
		if !p.tree {
			if len(el) != len(pe) {
				break
			}
			return place{rel: rest, only: tar.TypeReg}, nil
		}
		pl := inTree(len(pe), p.kind)
		if len(el) == len(pe) {
			pl.only = tar.TypeDir
		}
		return pl, nil
	}
	return place{}, fmt.Errorf("%w: not in den's layout", ErrUnsafe)
}

func classifyAgent(rest string, el []string, inTree func(int, kind) place) (place, error) {
	bad := fmt.Errorf("%w: not in den's layout", ErrUnsafe)
	dir := place{rel: rest, only: tar.TypeDir}
	if len(el) == 1 {
		return dir, nil
	}
	if computer.ValidName("agent", el[1]) != nil {
		return place{}, bad
	}
	if len(el) == 2 {
		return dir, nil
	}
	if el[2] == sessionsDir {
		switch {
		case len(el) == 3:
			return dir, nil
		case computer.ValidName("session", el[3]) != nil:
			return place{}, bad
		case len(el) == 4:
			return dir, nil
		}
		p, ok := findPart(sessionParts(), el[4])
		if !ok {
			return place{}, bad
		}
		pl := inTree(5, p.kind)
		if len(el) == 5 {
			pl.only = tar.TypeDir
		}
		return pl, nil
	}
	p, ok := findPart(agentParts, el[2])
	if !ok {
		return place{}, bad
	}
	if !p.tree {
		if len(el) != 3 {
			return place{}, bad
		}
		return place{rel: rest, only: tar.TypeReg}, nil
	}
	pl := inTree(3, p.kind)
	if len(el) == 3 {
		pl.only = tar.TypeDir
	}
	return pl, nil
}

// allowed reports whether an entry of a tree of kind k may be of type t.
func allowed(k kind, t byte) bool {
	switch t {
	case tar.TypeDir, tar.TypeReg:
		return true
	case tar.TypeSymlink, tar.TypeLink:
		return k != denFiles
	case tar.TypeFifo:
		return k == computerFiles
	}
	return false
}

func typeName(t byte) string {
	switch t {
	case tar.TypeChar, tar.TypeBlock:
		return "a device node"
	case tar.TypeSymlink:
		return "a symbolic link"
	case tar.TypeLink:
		return "a hard link"
	case tar.TypeFifo:
		return "a named pipe"
	}
	return fmt.Sprintf("an entry of type %q", t)
}
