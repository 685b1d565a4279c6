#!/usr/bin/env bash
# Runs den's whole test suite: formatting, vet, and every test, against
# the real sandbox (bubblewrap, proot), real debootstrap and real
# package installs. Installs what the tests need first (scripts/setup.sh).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh --test
PATH="/usr/local/go/bin:$HOME/.cache/den/go1.26.8/bin:$PATH"
export GOTOOLCHAIN=local

unformatted=$(gofmt -l cmd internal)
if [ -n "$unformatted" ]; then
	echo "gofmt needed:" >&2
	echo "$unformatted" >&2
	exit 1
fi
go vet ./...
# The web face's vendored libraries are exactly what their pinned
# packages hold.
scripts/vendor-web.sh --check
go test -count=1 -timeout 20m ./...
# The packages where goroutines meet (the sandbox's sessions, the host
# command broker, the gate, the store, the loop, the browser, the scheduler,
# the egress proxy) again under the race detector.
go test -race -count=1 -timeout 20m ./internal/sandbox/bwrap ./internal/computer ./internal/hostcmd/... \
	./internal/permission ./internal/hostfs ./internal/hostsvc ./internal/store ./internal/agent/... ./internal/models/retry \
	./internal/session ./internal/event ./internal/daemon ./internal/server/... ./internal/mcpclient ./internal/mcpserver \
	./internal/browser ./internal/schedule ./internal/checkpoint ./internal/egress ./internal/sandbox/netns
