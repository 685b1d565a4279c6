package idmap

import (
	"den.dev/den/internal/sandbox/launch"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"sync"
	"syscall"

	"golang.org/x/sys/unix"
)

// UserNS makes a user namespace with the given maps and returns it as an
// open file (the namespace lives as long as the file). den uses such
// namespaces only to describe idmapped mounts: no process stays in it.
// It needs root.
func UserNS(uids, gids []syscall.SysProcIDMap) (*os.File, error) {
	// A process in a new user namespace with those maps, held just long
	// enough to open its namespace.
	cmd := exec.Command("/bin/sh", "-c", "read x")
	in, err := cmd.StdinPipe()
	if err != nil {
		return nil, fmt.Errorf("idmap: user namespace: %w", err)
	}
	cmd.SysProcAttr = &syscall.SysProcAttr{
		Cloneflags:  syscall.CLONE_NEWUSER,
		UidMappings: uids,
		GidMappings: gids,
		Pdeathsig:   syscall.SIGKILL,
	}
	if err := launch.Start(cmd); err != nil {
		return nil, fmt.Errorf("idmap: user namespace: %w", err)
	}
	f, err := os.Open("/proc/" + strconv.Itoa(cmd.Process.Pid) + "/ns/user")
	in.Close()
	cmd.Process.Kill()
	cmd.Wait()
	if err != nil {
		return nil, fmt.Errorf("idmap: user namespace: %w", err)
	}
	return f, nil
}

// OwnerNS holds the user namespaces of idmapped user mounts, one per
// (folder owner, computer root): through a mount idmapped with it, the
// files the owner owns on disk are root inside's, and what root inside
// writes the owner's. It is safe for concurrent use.
type OwnerNS struct {
	mu  sync.Mutex
	fds map[[4]int]*os.File
}

// Get returns the namespace for a folder owned by owner on the host,
// for a computer whose root is root on the host.
func (o *OwnerNS) Get(ownerUID, ownerGID, rootUID, rootGID int) (int, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	k := [4]int{ownerUID, ownerGID, rootUID, rootGID}
	if f, ok := o.fds[k]; ok {
		return int(f.Fd()), nil
	}
	f, err := UserNS([]syscall.SysProcIDMap{{ContainerID: ownerUID, HostID: rootUID, Size: 1}},
		[]syscall.SysProcIDMap{{ContainerID: ownerGID, HostID: rootGID, Size: 1}})
	if err != nil {
		return -1, err
	}
	if o.fds == nil {
		o.fds = map[[4]int]*os.File{}
	}
	o.fds[k] = f
	return int(f.Fd()), nil
}

// MappedTree returns a detached copy of the mount tree at src (its
// submounts included) idmapped through the user namespace userns, as an
// open file descriptor to attach with move_mount(2). ok is false when
// the kernel or a file system of the tree cannot be idmapped.
func MappedTree(src string, userns int) (fd int, ok bool) {
	fd, err := unix.OpenTree(unix.AT_FDCWD, src, unix.OPEN_TREE_CLONE|unix.OPEN_TREE_CLOEXEC|unix.AT_RECURSIVE)
	if err != nil {
		return -1, false
	}
	attr := unix.MountAttr{Attr_set: unix.MOUNT_ATTR_IDMAP, Userns_fd: uint64(userns)}
	if err := unix.MountSetattr(fd, "", unix.AT_EMPTY_PATH|unix.AT_RECURSIVE, &attr); err != nil {
		unix.Close(fd)
		return -1, false
	}
	return fd, true
}

// FolderOwner returns the host owner whose files a user's folder at
// host shows as root inside, for a computer whose root is rootUID:
// the folder's owner when den is root, the folder is not host root's
// and its file system takes idmapped mounts; ok is false otherwise
// (the folder is then bound as it is, and the computer's own ids apply).
func (o *OwnerNS) FolderOwner(host string, rootUID, rootGID int) (uid, gid int, ok bool) {
	if os.Geteuid() != 0 {
		return 0, 0, false
	}
	var st unix.Stat_t
	if unix.Stat(host, &st) != nil || st.Uid == 0 {
		return 0, 0, false
	}
	ns, err := o.Get(int(st.Uid), int(st.Gid), rootUID, rootGID)
	if err != nil {
		return 0, 0, false
	}
	fd, ok := MappedTree(host, ns)
	if !ok {
		return 0, 0, false
	}
	unix.Close(fd)
	return int(st.Uid), int(st.Gid), true
}
