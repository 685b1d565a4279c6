package privfile

import (
	"bufio"
	"bytes"
	"crypto/rand"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// helperEnv names the file a helper process of TestCreateProcesses
// creates.
const helperEnv = "PRIVFILE_TEST_CREATE"

// TestCreateProcesses: processes that start at once on an empty folder
// agree on one file: exactly one reports created, and every one reads
// its content.
func TestCreateProcesses(t *testing.T) {
	if path := os.Getenv(helperEnv); path != "" {
		createHelper(path)
		return
	}
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "data", "secret")
	const n = 6
	type child struct {
		cmd   *exec.Cmd
		start *os.File // closed to let the child go
		out   bytes.Buffer
	}
	children := make([]*child, n)
	for i := range children {
		c := &child{cmd: exec.Command(exe, "-test.run=^TestCreateProcesses$")}
		c.cmd.Env = append(os.Environ(), helperEnv+"="+path)
		c.cmd.Stdout, c.cmd.Stderr = &c.out, &c.out
		r, w, err := os.Pipe()
		if err != nil {
			t.Fatal(err)
		}
		c.cmd.Stdin, c.start = r, w
		if err := c.cmd.Start(); err != nil {
			t.Fatal(err)
		}
		r.Close()
		children[i] = c
	}
	for _, c := range children {
		c.start.Close()
	}
	creators, reads := 0, map[string]bool{}
	var wrote string
	for i, c := range children {
		if err := c.cmd.Wait(); err != nil {
			t.Fatalf("child %d: %v\n%s", i, err, c.out.String())
		}
		var created bool
		var data, read string
		if _, err := fmt.Sscanf(report(c.out.String()), "created=%t wrote=%s read=%s", &created, &data, &read); err != nil {
			t.Fatalf("child %d said %q: %v", i, c.out.String(), err)
		}
		if created {
			creators++
			wrote = data
		}
		reads[read] = true
	}
	if creators != 1 {
		t.Fatalf("%d processes reported created, want exactly one", creators)
	}
	if len(reads) != 1 || !reads[wrote] {
		t.Fatalf("processes read %v, want only the creator's %q", reads, wrote)
	}
}

// createHelper is a child of TestCreateProcesses: it waits for its
// stdin to close, creates path with content of its own, reads the file
// and prints what happened.
func createHelper(path string) {
	bufio.NewReader(os.Stdin).ReadByte() // EOF: the parent's go
	data := rand.Text()
	created, err := Create(path, []byte(data))
	if err != nil {
		fmt.Println("error:", err)
		os.Exit(1)
	}
	b, _, err := Read(path, 4096)
	if err != nil {
		fmt.Println("error:", err)
		os.Exit(1)
	}
	fmt.Printf("\ncreated=%t wrote=%s read=%s\n", created, data, b)
}

// report is the line of a helper's output that says what it did.
func report(out string) string {
	for line := range strings.Lines(out) {
		if strings.HasPrefix(line, "created=") {
			return line
		}
	}
	return ""
}
