package output_test

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"den.dev/den/internal/sandbox/output"
)

func Example() {
	dir, err := os.MkdirTemp("", "den-output")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer os.RemoveAll(dir)
	spillPath := filepath.Join(dir, "stdout.txt")

	capture := output.NewCapture(40, func() (io.WriteCloser, error) {
		return os.Create(spillPath)
	})
	cleaner := output.NewCleaner(capture)

	// What a command might write to a terminal.
	fmt.Fprint(cleaner, "\x1b[1;32mbuilding\x1b[0m\r\n")
	for i := range 10 {
		fmt.Fprintf(cleaner, "\r\x1b[Kstep %d/10", i+1)
	}
	fmt.Fprint(cleaner, "\nlog line one\nlog line two\nlog line three\n\x1b[32mdone\x1b[0m\n")

	if err := errors.Join(cleaner.Close(), capture.Close()); err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(capture.Text())
	spilled, _ := os.ReadFile(spillPath)
	fmt.Printf("%d of %d bytes spilled", len(spilled), capture.Total())
	// Output:
	// building
	// step 10/10
	// [... 26 bytes omitted ...]
	// log line three
	// done
	//
	// 66 of 66 bytes spilled
}
