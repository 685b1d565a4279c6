package sandbox

// Temporary pins so that go.mod keeps the chosen module versions while the
// packages that use them are being written.
import (
	_ "github.com/BurntSushi/toml"
	_ "github.com/creack/pty"
	_ "github.com/elastic/go-seccomp-bpf"
	_ "github.com/google/go-cmp/cmp"
	_ "github.com/spf13/cobra"
	_ "golang.org/x/sys/unix"
	_ "golang.org/x/term"
)
