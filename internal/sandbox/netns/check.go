package netns

import (
	"fmt"
	"os"
	"os/exec"
	"runtime"

	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"
)

// Check reports whether Attach can work on this host, for den doctor.
// As root it does Attach's whole setup in a network namespace of its
// own that it then drops; as an ordinary user it checks that nsenter,
// which the helper needs, is there (a computer's start with the network
// on is the full test). ok is false when Attach cannot work here.
func Check() (ok bool, detail, fix string) {
	if os.Geteuid() != 0 {
		p, err := exec.LookPath("nsenter")
		if err != nil {
			return false, "nsenter not found on PATH: den as an ordinary user needs it to set up its computers' network", "install util-linux"
		}
		return true, "den sets up each computer's network through " + p + " and its own helper", ""
	}
	errc := make(chan error, 1)
	go func() {
		// The thread joins a namespace of its own and never comes back:
		// it ends with the goroutine, and the namespace with it.
		runtime.LockOSThread()
		if err := unix.Unshare(unix.CLONE_NEWNET); err != nil {
			errc <- fmt.Errorf("new network namespace: %w", err)
			return
		}
		if lo, err := netlink.LinkByName("lo"); err != nil {
			errc <- err
			return
		} else if err := netlink.LinkSetUp(lo); err != nil {
			errc <- err
			return
		}
		files, err := setup()
		closeAll(files)
		errc <- err
	}()
	if err := <-errc; err != nil {
		return false, "the computer's network cannot be set up: " + err.Error(),
			"den needs nf_tables with NAT and redirect (CONFIG_NF_TABLES, CONFIG_NFT_NAT, CONFIG_NFT_REDIR, CONFIG_NF_TABLES_INET) and veth (CONFIG_VETH) in the kernel or as modules"
	}
	return true, "nf_tables redirect and veth work: every connection of a computer goes through den", ""
}
