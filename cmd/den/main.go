// Command den is a self-hosted AI agent with a real, isolated Linux
// computer. See the README and docs/ for how to use it.
package main

import "den.dev/den/internal/cli"

func main() { cli.Main() }
