// Package checkpoint keeps checkpoints of folder trees a computer can
// change, and puts a tree back as a checkpoint recorded it: den's undo
// for an agent's computer (its rootfs and a session's folders).
//
// # Design
//
// A Store is content-addressed, like git: a file's content is stored
// once under its hash; a folder is a listing (names, kinds, modes,
// owners, times, extended attributes, content hashes, symlink targets,
// device numbers, hard-link groups) stored under its own hash; a
// checkpoint is a small record naming the listing of each tree's root.
// A checkpoint after the first walks the tree's metadata (one fstatat
// per entry) but reads only files whose inode, change time, size or
// modification time differ from the last checkpoint of that tree, and
// writes only the contents and listings the store lacks: its cost is
// the walk plus what changed. Contents are cloned where the file system
// shares blocks (FICLONE on btrfs, xfs), else copied; holes are kept
// (a file is hashed by 1 MiB blocks, so a hole is never read).
//
// Why not overlayfs: bubblewrap 0.8 (Debian 12) cannot mount one, a
// layer per checkpoint needs the running computer to be stopped and
// remounted each time, an ordinary user's den cannot mount one on the
// host at all, and the rootfs would stop being a plain folder that
// export, the disk meter and den's file tools read.
//
// # Contract
//
// Everything beneath a tree is hostile: the computer may plant
// symlinks, FIFOs, devices, sockets, hard links and huge sparse files,
// and swap one for another while den reads. Against that:
//
//   - No symlink is ever followed beneath a tree: every entry is
//     reached by name from its folder's descriptor with O_NOFOLLOW (or
//     fstatat, readlinkat, l*xattr without following), and a folder
//     opened is checked to be the inode listed.
//   - Only regular files are opened for reading, without blocking, and
//     checked to be the inode listed; FIFOs and devices are recorded,
//     never opened.
//   - Mounts beneath a tree are neither recorded nor crossed, nor
//     removed by a restore; neither are Tree.Skip paths (where the
//     user's folders are mounted in the computer).
//   - Objects are checked against their names when a restore reads
//     them, before anything changes.
//
// The store's own folder is den's and trusted.
//
// # Other users' files
//
// den as root reads and restores everything in a tree. den as an
// ordinary user reads with that user's rights, and the computer may
// give a file or folder to another of its users and make it unreadable
// to others (apt's partial downloads, 0700 under user _apt). With
// subordinate ids, a store's Helper reads those: den's own executable
// run again in a user namespace with the computer's id map, as root of
// those ids. A take or diff asks it only for the entries den could not
// read (den's own walk, and its speed, are unchanged); a restore runs in
// it whole, so that it gives every entry back to its owner. It walks
// by the same rules (by descriptors, no link followed, no mount
// crossed), records owners as the host's ids, and makes the store's
// files as den.
//
// # Concurrency
//
// Take, Prune, Delete and Restore hold the store's lock (a file lock,
// so across den's processes); List, Get and Diff read without it. A
// restore needs nothing running in the trees: the caller stops the
// computer first.
package checkpoint
