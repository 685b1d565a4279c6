//go:build !amd64

package main

import (
	"fmt"
	"os"
)

func archCalls() []call { return nil }

func i386() {
	fmt.Fprintln(os.Stderr, "probe: i386 ABI probe exists only on amd64")
	os.Exit(2)
}
