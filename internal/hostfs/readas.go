package hostfs

import (
	"errors"
	"fmt"
	"math"
	"os"
	"runtime"
	"slices"
	"unsafe"

	"golang.org/x/sys/unix"
)

// ReadFileAs is ReadFile with the kernel's permission checks made as id
// instead of as den: a file id could not read (mode 0600 of another
// user, one in a folder id cannot search) fails with a permission
// error (errors.Is(err, fs.ErrPermission)), even when den is root.
//
// When den is not root, id is nil, or id has den's own uid and gid, it
// is ReadFile: den cannot take on another identity, or need not.
//
// The read runs on an OS thread of its own, whose supplementary
// groups, fsgid and fsuid are set to id's; the thread is discarded
// afterwards, so den's other threads never see those credentials.
// When the switch cannot be verified, nothing is read.
func (d *Dir) ReadFileAs(rel string, max int64, id *Identity) ([]byte, error) {
	var data []byte
	err := d.as(id, func() (err error) {
		data, err = d.ReadFile(rel, max)
		return err
	})
	return data, err
}

// OpenAs is Open with the kernel's permission checks made as id, as
// ReadFileAs reads: the file is opened on a thread with id's
// credentials, and read afterwards by anyone holding it.
func (d *Dir) OpenAs(rel string, id *Identity) (*os.File, error) {
	var f *os.File
	err := d.as(id, func() (err error) {
		f, err = d.Open(rel)
		return err
	})
	return f, err
}

// as runs fn with the filesystem credentials of id (see ReadFileAs),
// or as den when it cannot or need not take them on.
func (d *Dir) as(id *Identity, fn func() error) error {
	euid := unix.Geteuid()
	if id == nil || euid != 0 || (id.UID == euid && id.GID == unix.Getegid()) {
		return fn()
	}
	done := make(chan error, 1)
	go d.runAs(id, fn, done)
	return <-done
}

// runAs runs fn as id on the calling goroutine's thread, locked to it
// and never unlocked: when the goroutine returns, the runtime ends the
// thread, and the credentials set here with it. Nor does a locked
// thread start new ones (the runtime's template thread does), so no
// thread inherits them.
//
// The main thread is the exception: the runtime wedges it rather than
// end it, and it would live on with id's credentials. On it, runAs
// holds the thread and runs fn on another goroutine, which cannot be
// given the held thread; this one's credentials never change, so it is
// unlocked afterwards.
func (d *Dir) runAs(id *Identity, fn func() error, done chan<- error) {
	runtime.LockOSThread()
	if unix.Gettid() == unix.Getpid() {
		other := make(chan error, 1)
		go d.runAs(id, fn, other)
		err := <-other
		runtime.UnlockOSThread()
		done <- err
		return
	}
	if err := become(id); err != nil {
		done <- fmt.Errorf("%s as uid %d: %w", d.name, id.UID, err)
		return
	}
	done <- fn()
}

// become sets the calling thread's supplementary groups, fsgid and
// fsuid to id's, and checks that they took, and that the thread's
// filesystem capabilities went with its fsuid 0. The caller must have
// locked the thread, and must discard it afterwards.
func become(id *Identity) error {
	if !validID(id.UID) || !validID(id.GID) {
		return fmt.Errorf("invalid uid %d or gid %d", id.UID, id.GID)
	}
	groups := make([]uint32, len(id.Groups))
	for i, g := range id.Groups {
		if !validID(g) {
			return fmt.Errorf("invalid group %d", g)
		}
		groups[i] = uint32(g)
	}
	if err := setgroups(groups); err != nil {
		return fmt.Errorf("setgroups: %w", err)
	}
	// setfsgid and setfsuid return the previous value, and fail only
	// by not changing it; -1, never a valid id, changes nothing and
	// reports the current one.
	unix.SetfsgidRetGid(id.GID)
	if now, _ := unix.SetfsgidRetGid(-1); now != id.GID {
		return fmt.Errorf("setfsgid %d: the thread's fsgid is still %d", id.GID, now)
	}
	unix.SetfsuidRetUid(id.UID)
	if now, _ := unix.SetfsuidRetUid(-1); now != id.UID {
		return fmt.Errorf("setfsuid %d: the thread's fsuid is still %d", id.UID, now)
	}
	// unix.Getgroups is the raw, per-thread getgroups(2).
	got, err := unix.Getgroups()
	if err != nil {
		return fmt.Errorf("getgroups: %w", err)
	}
	want := slices.Clone(id.Groups)
	slices.Sort(want)
	slices.Sort(got)
	if !slices.Equal(got, want) {
		return fmt.Errorf("setgroups %v: the thread's groups are %v", id.Groups, got)
	}
	if id.UID != 0 {
		return checkNoFileCaps()
	}
	return nil
}

// setgroups sets the calling thread's supplementary groups, and only
// its: syscall.Setgroups (since Go 1.16) changes every thread of the
// process, which would hand id's groups to all of den.
func setgroups(groups []uint32) error {
	var errno unix.Errno
	if len(groups) == 0 {
		_, _, errno = unix.RawSyscall(sysSetgroups, 0, 0, 0)
	} else {
		_, _, errno = unix.RawSyscall(sysSetgroups, uintptr(len(groups)), uintptr(unsafe.Pointer(&groups[0])), 0)
	}
	if errno != 0 {
		return errno
	}
	return nil
}

// checkNoFileCaps fails unless the calling thread's effective
// capabilities lack those that bypass file permissions. The kernel
// drops them when the fsuid changes from 0, unless den runs with
// SECBIT_NO_SETUID_FIXUP; then reading as id would check nothing.
func checkNoFileCaps() error {
	hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3} // Pid 0: this thread
	var data [2]unix.CapUserData
	if err := unix.Capget(&hdr, &data[0]); err != nil {
		return fmt.Errorf("capget: %w", err)
	}
	const bypass = 1<<unix.CAP_DAC_OVERRIDE | 1<<unix.CAP_DAC_READ_SEARCH | 1<<unix.CAP_FOWNER
	if data[0].Effective&bypass != 0 {
		return errors.New("the thread kept its file capabilities after setfsuid (is SECBIT_NO_SETUID_FIXUP set?)")
	}
	return nil
}

// validID reports whether n can be a uid or gid: (uid_t)-1 means "no
// change" to the kernel.
func validID(n int) bool { return n >= 0 && int64(n) < math.MaxUint32 }
