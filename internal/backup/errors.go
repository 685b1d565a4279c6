package backup

import "errors"

var (
	// ErrNotBackup is an archive that is not one of den's backups, or
	// one whose end is missing (truncated).
	ErrNotBackup = errors.New("not a den backup")
	// ErrTooNew is an archive a newer den wrote in a format or with a
	// database schema this den does not know.
	ErrTooNew = errors.New("backup from a newer den")
	// ErrUnsafe is an archive entry restore refuses: a name outside
	// den's layout or holding "..", a device or other special file, a
	// link where den makes none.
	ErrUnsafe = errors.New("unsafe archive entry")
	// ErrCorrupt is an archive whose content does not match its
	// SHA256SUMS, or that cannot be read.
	ErrCorrupt = errors.New("corrupt backup")
	// ErrNotEmpty is a data dir that holds data, or a config file that
	// exists, where restore would write without Force.
	ErrNotEmpty = errors.New("already holds den's data")
	// ErrNoSpace is a backup file that would leave, or left, its disk
	// less free space than den keeps free (WriteFile).
	ErrNoSpace = errors.New("not enough free disk space")
)
