#!/usr/bin/env bash
# Installs what den needs on a Debian or Ubuntu machine and builds den
# into ./bin/den. Safe to run again: it installs only what is missing.
#
#   scripts/setup.sh          den's runtime needs, and the build
#   scripts/setup.sh --test   also what the test suite needs
set -euo pipefail
cd "$(dirname "$0")/.."

GO_VERSION=1.26.8
pkgs=(bubblewrap debootstrap busybox-static ca-certificates tar xz-utils zstd)
# uidmap maps subordinate ids; util-linux's nsenter lets an ordinary
# user's den set up its computers' network.
pkgs+=(uidmap util-linux)
# The agent's web browser: Chromium's headless shell, with fonts to draw
# pages with.
pkgs+=(chromium-headless-shell fonts-dejavu-core)
if [ "${1:-}" = --test ]; then
	pkgs+=(proot passwd hyperfine espeak-ng iproute2 python3 systemd)
	# git pushes from a computer through den's egress with a secret.
	pkgs+=(git)
	# The web face's tests drive real Chromium (the headless shell, and
	# the full browser where notifications are tested: the shell has
	# none); npm re-fetches the vendored browser libraries to check the
	# committed copies.
	pkgs+=(chromium)
	# A Node.js from elsewhere brings its own npm (and conflicts with
	# Debian's): install Debian's only when there is none.
	if ! command -v npm >/dev/null; then pkgs+=(nodejs npm); fi
fi

sudo=
if [ "$(id -u)" != 0 ]; then sudo=sudo; fi

missing=()
for p in "${pkgs[@]}"; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
	echo "setup: installing ${missing[*]}" >&2
	$sudo apt-get update -qq
	$sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

# Go: the one on PATH or in /usr/local/go when it is new enough;
# otherwise Debian's go fetches the wanted toolchain from the Go module
# proxy (any Go can download a module, and the toolchain is one).
go_ok() { "$1" version 2>/dev/null | grep -Eq "go1\.(2[6-9]|[3-9][0-9])"; }
GO=
for g in "$(command -v go || true)" /usr/local/go/bin/go "$HOME/.cache/den/go$GO_VERSION/bin/go"; do
	if [ -n "$g" ] && [ -x "$g" ] && go_ok "$g"; then GO=$g; break; fi
done
if [ -z "$GO" ]; then
	if ! command -v go >/dev/null; then
		$sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends golang-go >/dev/null
	fi
	arch=$(dpkg --print-architecture)
	tmp=$(mktemp -d)
	echo "setup: fetching Go $GO_VERSION through the Go module proxy" >&2
	dir=$(cd "$tmp" && GOFLAGS=-mod=mod GOMODCACHE="$tmp/mod" go mod download -json "golang.org/toolchain@v0.0.1-go$GO_VERSION.linux-$arch" |
		sed -n 's/.*"Dir": "\(.*\)".*/\1/p')
	dest="$HOME/.cache/den/go$GO_VERSION"
	rm -rf "$dest"
	mkdir -p "$(dirname "$dest")"
	cp -r "$dir" "$dest"
	chmod -R u+w "$tmp" "$dest"
	rm -rf "$tmp"
	chmod +x "$dest"/bin/* "$dest"/pkg/tool/*/*
	GO="$dest/bin/go"
fi
export PATH="$(dirname "$GO"):$PATH"

mkdir -p bin
GOTOOLCHAIN=local "$GO" build -trimpath -ldflags="-s -w" -o bin/den ./cmd/den
echo "setup: built $(pwd)/bin/den with $("$GO" version)" >&2
