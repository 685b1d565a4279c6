package tlscert

import "errors"

// Each sentinel is wrapped with what it concerns, a file or a host, and
// reads as the rest of a sentence after it.
var (
	// ErrKeySymlink is a key.pem that is a symbolic link.
	ErrKeySymlink = errors.New("is a symbolic link, not a private key file den made")

	// ErrKeyExposed is a key.pem that is not a regular file of mode 0600
	// owned by den's user: one that others may read or replace.
	ErrKeyExposed = errors.New("is not a private file (want a regular file of mode 0600, owned by den's user)")

	// ErrCorrupt is a cert.pem or key.pem whose content does not parse.
	ErrCorrupt = errors.New("holds no usable PEM data")

	// ErrHost is a host that is neither a DNS name nor an IP address a
	// certificate can name (an empty string, a zoned IPv6 address, a
	// name with characters DNS does not allow).
	ErrHost = errors.New("is not a host name or IP address a certificate can name")

	// ErrNoHosts is a call with no hosts at all.
	ErrNoHosts = errors.New("no hosts to name in the certificate")
)
