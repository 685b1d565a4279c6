// Package tlscert keeps the self-signed certificate that
// `den serve --tls self-signed` presents, so that a phone on the local
// network reaches den from a secure origin: browsers grant the camera,
// location and notifications only to secure origins.
//
// LoadOrCreate keeps cert.pem and key.pem in one folder and reuses them
// while the certificate names every requested host, runs for more than
// 30 more days and still meets the rules phones apply; otherwise it makes
// a new ECDSA P-256 certificate and says so in Info.Created. HostNames
// lists the names and addresses by which a phone may reach this machine.
// Info carries the SHA-256 fingerprint for the user to compare with the
// one the phone shows.
//
// Invariants:
//   - The folder is mode 0700 and key.pem mode 0600; both files are
//     written to a temporary file, synced and renamed into place.
//   - A key den cannot trust is refused, never replaced: a symbolic link,
//     anything but a regular file, a file group or others may read, or one
//     owned by another user.
//   - A cert.pem or key.pem that holds no parsable PEM data, or a key.pem
//     over 64 KiB, is an error (ErrCorrupt), not a reason to make a new
//     certificate: the files are written atomically, so damage is not
//     den's doing, and a silent replacement would change the fingerprint
//     the user's phones trust.
//     The error names the files to delete for a new certificate.
//   - A key that does not match the certificate is replaced: it is what an
//     interrupted write leaves, since the two files are renamed one after
//     the other (key first).
//
// Concurrency: calls for one folder must not overlap (den serve makes one
// at startup). Overlapping calls can at worst leave a mismatched pair on
// disk, which the next call replaces; each call's returned certificate is
// whole.
package tlscert
